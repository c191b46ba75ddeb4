#include "textflag.h"

// func strip16x1AVX(m *float64, stride, n int, x, y *float64)
// y[0:16] = sum over j < n of x[j] * m[j*stride : j*stride+16], each lane a
// chain of fused multiply-adds in the order of j, starting from 0.
TEXT ·strip16x1AVX(SB), NOSPLIT, $0-40
	MOVQ m+0(FP), SI
	MOVQ stride+8(FP), DX
	SHLQ $3, DX
	MOVQ n+16(FP), CX
	MOVQ x+24(FP), R8
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	TESTQ CX, CX
	JEQ   done1

loop1:
	VBROADCASTSD (R8), Y8
	VFMADD231PD  (SI), Y8, Y0
	VFMADD231PD  32(SI), Y8, Y1
	VFMADD231PD  64(SI), Y8, Y2
	VFMADD231PD  96(SI), Y8, Y3
	ADDQ         $8, R8
	ADDQ         DX, SI
	DECQ         CX
	JNE          loop1

done1:
	MOVQ    y+32(FP), DI
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// func strip16x2AVX(m *float64, stride, n int, x0, x1, y0, y1 *float64)
// strip16x1AVX for x0 into y0 and x1 into y1, reading each row once.
TEXT ·strip16x2AVX(SB), NOSPLIT, $0-56
	MOVQ m+0(FP), SI
	MOVQ stride+8(FP), DX
	SHLQ $3, DX
	MOVQ n+16(FP), CX
	MOVQ x0+24(FP), R8
	MOVQ x1+32(FP), R9
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	TESTQ CX, CX
	JEQ   done2

loop2:
	VBROADCASTSD (R8), Y8
	VBROADCASTSD (R9), Y9
	VMOVUPD      (SI), Y10
	VMOVUPD      32(SI), Y11
	VMOVUPD      64(SI), Y12
	VMOVUPD      96(SI), Y13
	VFMADD231PD  Y10, Y8, Y0
	VFMADD231PD  Y11, Y8, Y1
	VFMADD231PD  Y12, Y8, Y2
	VFMADD231PD  Y13, Y8, Y3
	VFMADD231PD  Y10, Y9, Y4
	VFMADD231PD  Y11, Y9, Y5
	VFMADD231PD  Y12, Y9, Y6
	VFMADD231PD  Y13, Y9, Y7
	ADDQ         $8, R8
	ADDQ         $8, R9
	ADDQ         DX, SI
	DECQ         CX
	JNE          loop2

done2:
	MOVQ    y0+40(FP), DI
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	MOVQ    y1+48(FP), DI
	VMOVUPD Y4, (DI)
	VMOVUPD Y5, 32(DI)
	VMOVUPD Y6, 64(DI)
	VMOVUPD Y7, 96(DI)
	VZEROUPPER
	RET

// func axpyProdAVX(dst *float64, n int, ui float64, u *float64, c float64)
// dst[j] = fma(c, ui*u[j], dst[j]) for j < n.
TEXT ·axpyProdAVX(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSD ui+16(FP), Y0
	MOVQ         u+24(FP), SI
	VBROADCASTSD c+32(FP), Y1

loop8:
	CMPQ        CX, $8
	JLT         tail4
	VMULPD      (SI), Y0, Y2
	VMULPD      32(SI), Y0, Y3
	VMOVUPD     (DI), Y4
	VMOVUPD     32(DI), Y5
	VFMADD231PD Y2, Y1, Y4
	VFMADD231PD Y3, Y1, Y5
	VMOVUPD     Y4, (DI)
	VMOVUPD     Y5, 32(DI)
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $8, CX
	JMP         loop8

tail4:
	CMPQ        CX, $4
	JLT         tail1
	VMULPD      (SI), Y0, Y2
	VMOVUPD     (DI), Y4
	VFMADD231PD Y2, Y1, Y4
	VMOVUPD     Y4, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $4, CX

tail1:
	TESTQ       CX, CX
	JEQ         done3
	VMULSD      (SI), X0, X2
	VMOVSD      (DI), X4
	VFMADD231SD X2, X1, X4
	VMOVSD      X4, (DI)
	ADDQ        $8, SI
	ADDQ        $8, DI
	DECQ        CX
	JMP         tail1

done3:
	VZEROUPPER
	RET

// func rankOneDotAVX(row *float64, n int, ui float64, u *float64, c float64, w *float64) float64
// row[j] = fma(c, ui*u[j], row[j]), and the inner product of the updated
// row with w, summed as dot3AVX sums a.b.
TEXT ·rankOneDotAVX(SB), NOSPLIT, $0-56
	MOVQ         row+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSD ui+16(FP), Y0
	MOVQ         u+24(FP), SI
	VBROADCASTSD c+32(FP), Y1
	MOVQ         w+40(FP), R8
	VXORPD       Y6, Y6, Y6
	VXORPD       Y7, Y7, Y7

r8:
	CMPQ        CX, $8
	JLT         rsum
	VMULPD      (SI), Y0, Y2
	VMULPD      32(SI), Y0, Y3
	VMOVUPD     (DI), Y4
	VMOVUPD     32(DI), Y5
	VFMADD231PD Y2, Y1, Y4
	VFMADD231PD Y3, Y1, Y5
	VMOVUPD     Y4, (DI)
	VMOVUPD     Y5, 32(DI)
	VFMADD231PD (R8), Y4, Y6
	VFMADD231PD 32(R8), Y5, Y7
	ADDQ        $64, SI
	ADDQ        $64, DI
	ADDQ        $64, R8
	SUBQ        $8, CX
	JMP         r8

rsum:
	CMPQ        CX, $4
	JLT         rfold
	VMULPD      (SI), Y0, Y2
	VMOVUPD     (DI), Y4
	VFMADD231PD Y2, Y1, Y4
	VMOVUPD     Y4, (DI)
	VFMADD231PD (R8), Y4, Y6
	ADDQ        $32, SI
	ADDQ        $32, DI
	ADDQ        $32, R8
	SUBQ        $4, CX

rfold:
	VADDPD       Y7, Y6, Y6
	VEXTRACTF128 $1, Y6, X7
	VHADDPD      X6, X6, X6
	VHADDPD      X7, X7, X7
	VADDSD       X7, X6, X6

r1:
	TESTQ       CX, CX
	JEQ         rdone
	VMULSD      (SI), X0, X2
	VMOVSD      (DI), X4
	VFMADD231SD X2, X1, X4
	VMOVSD      X4, (DI)
	VFMADD231SD (R8), X4, X6
	ADDQ        $8, SI
	ADDQ        $8, DI
	ADDQ        $8, R8
	DECQ        CX
	JMP         r1

rdone:
	VMOVSD X6, ret+48(FP)
	VZEROUPPER
	RET

// func strip4x8AVX(m *float64, stride, n int, xs, ys *[8]*float64)
// strip16x1AVX for 4 lanes and the eight vectors xs[k] into ys[k][0:4].
TEXT ·strip4x8AVX(SB), NOSPLIT, $0-40
	MOVQ   m+0(FP), SI
	MOVQ   stride+8(FP), DX
	SHLQ   $3, DX
	MOVQ   n+16(FP), CX
	MOVQ   xs+24(FP), R13
	MOVQ   0(R13), AX
	MOVQ   8(R13), BX
	MOVQ   16(R13), DI
	MOVQ   24(R13), R8
	MOVQ   32(R13), R9
	MOVQ   40(R13), R10
	MOVQ   48(R13), R11
	MOVQ   56(R13), R12
	XORQ   R13, R13
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	TESTQ  CX, CX
	JEQ    done8

loop8x:
	VMOVUPD      (SI), Y8
	VBROADCASTSD (AX)(R13*1), Y9
	VBROADCASTSD (BX)(R13*1), Y10
	VBROADCASTSD (DI)(R13*1), Y11
	VBROADCASTSD (R8)(R13*1), Y12
	VFMADD231PD  Y8, Y9, Y0
	VFMADD231PD  Y8, Y10, Y1
	VFMADD231PD  Y8, Y11, Y2
	VFMADD231PD  Y8, Y12, Y3
	VBROADCASTSD (R9)(R13*1), Y9
	VBROADCASTSD (R10)(R13*1), Y10
	VBROADCASTSD (R11)(R13*1), Y11
	VBROADCASTSD (R12)(R13*1), Y12
	VFMADD231PD  Y8, Y9, Y4
	VFMADD231PD  Y8, Y10, Y5
	VFMADD231PD  Y8, Y11, Y6
	VFMADD231PD  Y8, Y12, Y7
	ADDQ         $8, R13
	ADDQ         DX, SI
	DECQ         CX
	JNE          loop8x

done8:
	MOVQ    ys+32(FP), R13
	MOVQ    0(R13), AX
	VMOVUPD Y0, (AX)
	MOVQ    8(R13), AX
	VMOVUPD Y1, (AX)
	MOVQ    16(R13), AX
	VMOVUPD Y2, (AX)
	MOVQ    24(R13), AX
	VMOVUPD Y3, (AX)
	MOVQ    32(R13), AX
	VMOVUPD Y4, (AX)
	MOVQ    40(R13), AX
	VMOVUPD Y5, (AX)
	MOVQ    48(R13), AX
	VMOVUPD Y6, (AX)
	MOVQ    56(R13), AX
	VMOVUPD Y7, (AX)
	VZEROUPPER
	RET

// func addProductsAVX(dst *float64, n int, alphas *float64, vecs *[16]*float64, np int)
// dst[j] = (...((dst[j] + alphas[0]*vecs[0][j]) + alphas[1]*vecs[1][j]) ...)
// for j < n, each product rounded, then each sum (no fused operation).
TEXT ·addProductsAVX(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ alphas+16(FP), R8
	MOVQ vecs+24(FP), R9
	MOVQ np+32(FP), R10
	XORQ R11, R11 // offset in bytes into dst and the vectors

ap16:
	CMPQ    CX, $16
	JLT     ap4
	VMOVUPD (DI)(R11*1), Y0
	VMOVUPD 32(DI)(R11*1), Y1
	VMOVUPD 64(DI)(R11*1), Y2
	VMOVUPD 96(DI)(R11*1), Y3
	XORQ    R12, R12

ap16p:
	CMPQ         R12, R10
	JGE          ap16s
	VBROADCASTSD (R8)(R12*8), Y4
	MOVQ         (R9)(R12*8), AX
	ADDQ         R11, AX
	VMULPD       (AX), Y4, Y5
	VMULPD       32(AX), Y4, Y6
	VMULPD       64(AX), Y4, Y7
	VMULPD       96(AX), Y4, Y8
	VADDPD       Y5, Y0, Y0
	VADDPD       Y6, Y1, Y1
	VADDPD       Y7, Y2, Y2
	VADDPD       Y8, Y3, Y3
	INCQ         R12
	JMP          ap16p

ap16s:
	VMOVUPD Y0, (DI)(R11*1)
	VMOVUPD Y1, 32(DI)(R11*1)
	VMOVUPD Y2, 64(DI)(R11*1)
	VMOVUPD Y3, 96(DI)(R11*1)
	ADDQ    $128, R11
	SUBQ    $16, CX
	JMP     ap16

ap4:
	CMPQ    CX, $4
	JLT     ap1
	VMOVUPD (DI)(R11*1), Y0
	XORQ    R12, R12

ap4p:
	CMPQ         R12, R10
	JGE          ap4s
	VBROADCASTSD (R8)(R12*8), Y4
	MOVQ         (R9)(R12*8), AX
	ADDQ         R11, AX
	VMULPD       (AX), Y4, Y5
	VADDPD       Y5, Y0, Y0
	INCQ         R12
	JMP          ap4p

ap4s:
	VMOVUPD Y0, (DI)(R11*1)
	ADDQ    $32, R11
	SUBQ    $4, CX
	JMP     ap4

ap1:
	TESTQ  CX, CX
	JEQ    apdone
	VMOVSD (DI)(R11*1), X0
	XORQ   R12, R12

ap1p:
	CMPQ   R12, R10
	JGE    ap1s
	VMOVSD (R8)(R12*8), X4
	MOVQ   (R9)(R12*8), AX
	ADDQ   R11, AX
	VMULSD (AX), X4, X5
	VADDSD X5, X0, X0
	INCQ   R12
	JMP    ap1p

ap1s:
	VMOVSD X0, (DI)(R11*1)
	ADDQ   $8, R11
	DECQ   CX
	JMP    ap1

apdone:
	VZEROUPPER
	RET

// func dot3AVX(a, b, c *float64, n int) (ab, ac, aa float64)
// Two inner products of a with b and c, each over eight lanes (element j
// into lane j mod 8, fused multiply-adds) for j < n &^ 3, the lanes then
// added as ((s0+s4) + (s1+s5)) + ((s2+s6) + (s3+s7)), then the rest of the
// elements in order, fused; and a.a summed as gonum's DotUnitary sums it:
// element j into lane j mod 4 for j < n &^ 3 (products rounded, then
// sums), the other elements into lane 0 in order, then
// (s0 + s2) + (s1 + s3).
TEXT ·dot3AVX(SB), NOSPLIT, $0-56
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   c+16(FP), R8
	MOVQ   n+24(FP), CX
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6

t8:
	CMPQ        CX, $8
	JLT         tsum
	VMOVUPD     (SI), Y0
	VMOVUPD     32(SI), Y1
	VFMADD231PD (DI), Y0, Y2
	VFMADD231PD 32(DI), Y1, Y3
	VFMADD231PD (R8), Y0, Y4
	VFMADD231PD 32(R8), Y1, Y5
	VMULPD      Y0, Y0, Y7
	VADDPD      Y7, Y6, Y6
	VMULPD      Y1, Y1, Y7
	VADDPD      Y7, Y6, Y6
	ADDQ        $64, SI
	ADDQ        $64, DI
	ADDQ        $64, R8
	SUBQ        $8, CX
	JMP         t8

tsum:
	CMPQ        CX, $4
	JLT         tfold
	VMOVUPD     (SI), Y0
	VFMADD231PD (DI), Y0, Y2
	VFMADD231PD (R8), Y0, Y4
	VMULPD      Y0, Y0, Y7
	VADDPD      Y7, Y6, Y6
	ADDQ        $32, SI
	ADDQ        $32, DI
	ADDQ        $32, R8
	SUBQ        $4, CX

tfold:
	VADDPD       Y3, Y2, Y2
	VADDPD       Y5, Y4, Y4
	VEXTRACTF128 $1, Y2, X3
	VEXTRACTF128 $1, Y4, X5
	VHADDPD      X2, X2, X2
	VHADDPD      X3, X3, X3
	VADDSD       X3, X2, X2
	VHADDPD      X4, X4, X4
	VHADDPD      X5, X5, X5
	VADDSD       X5, X4, X4

	// a.a: the rest (fewer than four) into lane 0.
	MOVQ         SI, R9
	MOVQ         CX, R10
	VEXTRACTF128 $1, Y6, X8

tn1l:
	TESTQ  R10, R10
	JEQ    tncomb
	VMOVSD (R9), X7
	VMULSD X7, X7, X7
	VADDSD X7, X6, X6
	ADDQ   $8, R9
	DECQ   R10
	JMP    tn1l

tncomb:
	VADDPD  X8, X6, X6
	VHADDPD X6, X6, X6
	VMOVSD  X6, aa+48(FP)

t1:
	TESTQ       CX, CX
	JEQ         tdone
	VMOVSD      (SI), X0
	VFMADD231SD (DI), X0, X2
	VFMADD231SD (R8), X0, X4
	ADDQ        $8, SI
	ADDQ        $8, DI
	ADDQ        $8, R8
	DECQ        CX
	JMP         t1

tdone:
	VMOVSD X2, ab+32(FP)
	VMOVSD X4, ac+40(FP)
	VZEROUPPER
	RET

// func scaleNormAVX(a *float64, n int, s float64) float64
// a[j] *= s for j < n, and the squared norm of the result summed as
// gonum's DotUnitary sums it (see dot3AVX).
TEXT ·scaleNormAVX(SB), NOSPLIT, $0-32
	MOVQ         a+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD s+16(FP), Y1
	VXORPD       Y6, Y6, Y6

sn4:
	CMPQ    CX, $4
	JLT     sn1
	VMULPD  (SI), Y1, Y0
	VMOVUPD Y0, (SI)
	VMULPD  Y0, Y0, Y7
	VADDPD  Y7, Y6, Y6
	ADDQ    $32, SI
	SUBQ    $4, CX
	JMP     sn4

sn1:
	VEXTRACTF128 $1, Y6, X8

sn1l:
	TESTQ  CX, CX
	JEQ    sncomb
	VMULSD (SI), X1, X0
	VMOVSD X0, (SI)
	VMULSD X0, X0, X7
	VADDSD X7, X6, X6
	ADDQ   $8, SI
	DECQ   CX
	JMP    sn1l

sncomb:
	VADDPD  X8, X6, X6
	VHADDPD X6, X6, X6
	VMOVSD  X6, ret+24(FP)
	VZEROUPPER
	RET

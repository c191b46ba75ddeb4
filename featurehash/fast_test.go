package featurehash

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// randomContext writes a context of random shape: namespaces, nested
// objects, lists of namespaces, every kind of value, and now and then
// what the fast path leaves to encoding/json (escapes, a key twice,
// invalid UTF-8, numbers out of range, values Add refuses).
func randomContext(r *rand.Rand, depth int) string {
	keys := []string{"a", "b", "user", "_p", "é", "x.y", "k1", "k2", "A", ""}
	value := func(depth int) string {
		switch r.IntN(13) {
		case 0:
			return "null"
		case 1:
			return "true"
		case 2:
			return "false"
		case 3:
			return fmt.Sprintf("%q", []string{"gold", "Oslo", "", "ü", "a b"}[r.IntN(5)])
		case 4:
			return []string{`"tab\tescaped"`, `"\u00e9"`, "\"\xff\"", "1e999", "-0", "[1,\"x\"]", "[[1]]", "{}"}[r.IntN(8)]
		case 5, 6:
			return fmt.Sprint(r.NormFloat64() * 1e3)
		case 7:
			return fmt.Sprintf("[%v, %v, %d]", r.Float64(), -r.Float64(), r.IntN(9))
		case 8:
			return "[]"
		case 9:
			if depth < 4 {
				return fmt.Sprintf("[%s, %s]", randomContext(r, depth+1), randomContext(r, depth+1))
			}
			return "3"
		default:
			if depth < 4 {
				return randomContext(r, depth+1)
			}
			return "7"
		}
	}
	n := r.IntN(5)
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		k := keys[r.IntN(len(keys))]
		if r.IntN(40) == 0 {
			k = `k\"q`
		}
		fmt.Fprintf(&b, "%q: %s", k, value(depth))
	}
	b.WriteString(" }")
	return strings.ReplaceAll(b.String(), `"k\\\"q"`, `"k\"q"`)
}

// TestFastIsEncodingJSON: AddJSON (in place when it can) gives the
// vector of encoding/json's reading bit for bit, and the same error, on
// thousands of random contexts; and the fast path does take the plain
// ones (a fast path that always gave up would pass the first check).
func TestFastIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h, _ := New(6)
	fastOnes := 0
	for range 20000 {
		ctx := []byte(randomContext(r, 0))
		got, want := make([]float64, h.Dim()), make([]float64, h.Dim())
		for i := range got { // a vector already holding features
			got[i] = float64(i)
			want[i] = float64(i)
		}
		text := string(ctx)
		errGot, errWant := h.AddJSON(got, ctx), h.addDecoded(want, ctx)
		if string(ctx) != text {
			t.Fatalf("the context was written over: %q, now %q", text, ctx)
		}
		if fmt.Sprint(errGot) != fmt.Sprint(errWant) {
			t.Fatalf("%s: error %v, encoding/json's %v", ctx, errGot, errWant)
		}
		if errWant == nil && !slices.Equal(got, want) {
			t.Fatalf("%s:\n fast %v\n json %v", ctx, got, want)
		}
		if probe := make([]float64, h.Dim()); h.Reader().f.add(probe, ctx) {
			fastOnes++
			if errWant != nil {
				t.Fatalf("%s: the fast path read a context encoding/json refuses (%v)", ctx, errWant)
			}
		}
	}
	if fastOnes < 5000 {
		t.Fatalf("the fast path read %d of 20000 random contexts: it gives up on plain ones", fastOnes)
	}
	// A plain context of every kind of value, on the fast path.
	plain := []byte(`{"User":{"age":31.5,"tier":"gold","vip":true,"no":false,"loc":{"city":"Oslo"},"_private":"x"},
		"device":"mobile","hour":7,"emb":[0.5,-2],"Ctx":[{"a":1},{"b":"c"}],"_multi":[{"x":1}],"gone":null}`)
	if !h.Reader().f.add(make([]float64, h.Dim()), plain) {
		t.Fatal("the fast path gave up on a plain context")
	}
	var obj map[string]any
	if err := json.Unmarshal(plain, &obj); err != nil {
		t.Fatal(err)
	}
	if err := h.AddJSON(make([]float64, 3), plain); err == nil || errors.Is(err, ErrNotObject) {
		t.Fatalf("a vector of the wrong length: %v", err)
	}
}

// BenchmarkAddJSON: a context of a Personalizer action, twenty features
// (loadgen's simulated site).
func BenchmarkAddJSON(b *testing.B) {
	ctx := []byte(`{"article":{"title":"article 3","topic":"t3","f2":0.153,"f3":0.884,"f4":0.02,"f5":0.61,"f6":0.347,"f7":0.911,"f8":0.5,"f9":0.078,
		"f10":0.203,"f11":0.764,"f12":0.395,"f13":0.03,"f14":0.826,"f15":0.472,"f16":0.119,"f17":0.658,"f18":0.287,"f19":0.941}}`)
	h, _ := New(5)
	dst := make([]float64, h.Dim())
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h.AddJSON(dst, ctx)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h.addDecoded(dst, ctx)
		}
	})
}

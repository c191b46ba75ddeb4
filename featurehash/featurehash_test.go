package featurehash

import (
	"errors"
	"hash/fnv"
	"testing"
)

// fnvIndex is Index by the standard library's FNV-1a.
func fnvIndex(bits int, ns, name string) int {
	h := fnv.New64a()
	h.Write([]byte(ns + "\x00" + name))
	return int(h.Sum64() & (1<<bits - 1))
}

// TestIndexIsFNV1a: the coordinates are hash/fnv's 64-bit FNV-1a of
// namespace, a zero byte and the name, modulo 2^bits (a wrong offset,
// prime or separator fails).
func TestIndexIsFNV1a(t *testing.T) {
	for _, bits := range []int{1, 8, 18, 24} {
		h, err := New(bits)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range [][2]string{{"", "a"}, {"User", "age"}, {"Geo", "country=United States"}, {"x", ""}} {
			if got, want := h.Index(f[0], f[1]), fnvIndex(bits, f[0], f[1]); got != want {
				t.Errorf("bits %d, %q %q: index %d, FNV-1a %d", bits, f[0], f[1], got, want)
			}
		}
	}
}

// TestScheme: each kind of member lands where the package comment says,
// with its value.
func TestScheme(t *testing.T) {
	h, _ := New(20)
	dst := make([]float64, h.Dim())
	ctx := `{"User":{"age":31.5,"tier":"gold","vip":true,"no":false,"loc":{"city":"Oslo"},"_private":"x"},
		"device":"mobile","hour":7,"emb":[0.5,-2],"Ctx":[{"a":1},{"b":"c"}],"_multi":[{"x":1}],"gone":null}`
	if err := h.AddJSON(dst, []byte(ctx)); err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]float64{
		{"User", "age"}: 31.5, {"User", "tier=gold"}: 1, {"User", "vip"}: 1, {"User", "loc.city=Oslo"}: 1,
		{"", "device=mobile"}: 1, {"", "hour"}: 7, {"", "emb[0]"}: 0.5, {"", "emb[1]"}: -2,
		{"Ctx", "a"}: 1, {"Ctx", "b=c"}: 1,
	}
	sum := 0.0
	for f, v := range want {
		if got := dst[fnvIndex(20, f[0], f[1])]; got != v {
			t.Errorf("%q: %v, want %v", f, got, v)
		}
		sum += v
	}
	total := 0.0
	for _, x := range dst {
		total += x
	}
	if total != sum {
		t.Errorf("the vector sums to %v, the features to %v: something else was hashed (a key with _, false, null)", total, sum)
	}
}

// TestRefused: bits out of range, a context that is not an object, a
// feature of another type, each a typed error naming it.
func TestRefused(t *testing.T) {
	for _, b := range []int{0, -1, MaxBits + 1} {
		var be *BitsError
		if _, err := New(b); !errors.As(err, &be) {
			t.Errorf("bits %d: %v", b, err)
		}
	}
	h, _ := New(4)
	for _, ctx := range []string{`[1]`, `{"a":1} {}`, `{"a":`, `null`} {
		if err := h.AddJSON(make([]float64, 16), []byte(ctx)); !errors.Is(err, ErrNotObject) {
			t.Errorf("%s: %v, want ErrNotObject", ctx, err)
		}
	}
	for ctx, path := range map[string]string{`{"a":[1,"x"]}`: "a[1]", `{"N":{"a":[[1]]}}`: "N.a[0]", `{"N":{"x":1e999}}`: "N.x"} {
		var ve *ValueError
		if err := h.AddJSON(make([]float64, 16), []byte(ctx)); !errors.As(err, &ve) || ve.Path != path {
			t.Errorf("%s: %v, want a ValueError at %s", ctx, err, path)
		}
	}
}

package define

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestRankCacheAgrees: a Personalizer definition with its cache of action
// lists (CacheRanks) reads every rank request, seen before or not, as
// one without it: the same stored context, decision set (to the bit),
// request and eligible actions, or the same error; and the action list
// it marks as shared (RankSet.Shared) lies in the stored context where
// it says, with its SHA-256. Random requests (randomRank), each read
// twice, and re-indented.
func TestRankCacheAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	plain := &Definition{Spec: Spec{HashBits: 4, Surface: SurfacePersonalizer}}
	cached := *plain
	cached.CacheRanks()
	if cached.ranks == nil {
		t.Fatal("CacheRanks made no cache")
	}
	shared := 0
	for i := range 20000 {
		raw := randomRank(r)
		if i%3 == 0 {
			raw = strings.ReplaceAll(raw, ":", " : ")
		}
		for range 2 {
			want, wantSet, wantErr := plain.ReadRankContext([]byte(raw))
			got, gotSet, gotErr := cached.ReadRankContext([]byte(raw))
			if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
				t.Fatalf("%s: error %v, without the cache %v", raw, gotErr, wantErr)
			}
			if wantErr != nil {
				continue
			}
			if got != want || !reflect.DeepEqual(gotSet.Request, wantSet.Request) || !reflect.DeepEqual(gotSet.Eligible, wantSet.Eligible) || !sameBits(gotSet.Set, wantSet.Set) {
				t.Fatalf("%s: read as %s %+v, without the cache %s %+v", raw, got, gotSet, want, wantSet)
			}
			if p := gotSet.Shared; p != nil {
				shared++
				if p.At < 0 || p.At+len(p.Text) > len(got) || got[p.At:p.At+len(p.Text)] != p.Text || p.Digest != sha256.Sum256([]byte(p.Text)) || !strings.HasPrefix(p.Text, "[") {
					t.Fatalf("%s: shared part %+v of %s", raw, p, got)
				}
			}
		}
	}
	if shared < 500 { // (999 of the 40 000 reads: the others fail, or see their list first)
		t.Fatalf("only %d requests had their action list shared", shared)
	}
}

// sameBits reports whether two decision sets are equal to the bit.
func sameBits(a, b [][]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] && !(a[i][j] != a[i][j] && b[i][j] != b[i][j]) {
				return false
			}
		}
	}
	return true
}

// BenchmarkReadRankContext reads dpbandit loadtest --personalizer's rank
// as an experiment does, without and with its cache of action lists
// (the list seen before).
func BenchmarkReadRankContext(b *testing.B) {
	body := benchRankBody(b)
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprint("cached=", cached), func(b *testing.B) {
			d := &Definition{Spec: Spec{HashBits: 5, Surface: SurfacePersonalizer}}
			if cached {
				d.CacheRanks()
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := d.ReadRankContext(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestListSharedOnceItRepeats: a rank's action list is marked shared
// (for the store to keep once) only when the experiment has seen it
// before: a list sent once, as a site whose every rank brings other
// actions sends it, is stored whole, with no row of its own.
func TestListSharedOnceItRepeats(t *testing.T) {
	d := &Definition{Spec: Spec{HashBits: 5, Surface: SurfacePersonalizer}}
	d.CacheRanks()
	body := benchRankBody(t)
	for i, want := range []bool{false, true, true} {
		_, rs, err := d.ReadRankContext(body)
		if err != nil {
			t.Fatal(err)
		}
		if got := rs.Shared != nil; got != want {
			t.Fatalf("read %d: shared %v, want %v", i+1, got, want)
		}
	}
}

package define

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPzRewardFastAgreesWithDecodePz: DecodePzReward reads every body as
// DecodePz does (encoding/json, any case, unknown fields refused), the
// same value or the same error, on random bodies of the reward's shape
// and around it; it reads dpbandit loadtest's body without allocating
// (its one pass).
func TestPzRewardFastAgreesWithDecodePz(t *testing.T) {
	pick := func(r *rand.Rand, opts ...string) string { return opts[r.IntN(len(opts))] }
	r := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		var members []string
		for range r.IntN(3) + pick2(r) {
			key := pick(r, `"value"`, `"value"`, `"Value"`, `"VALUE"`, `"valu\u0065"`, `"other"`, `"value `, `value`)
			val := pick(r, `1`, `0`, `0.5`, `-0`, `1e-7`, `1E+2`, `01`, `1.`, `.5`, `+1`, `1e400`, `NaN`, `null`, `"1"`, `true`, `[1]`, `{}`, `2`)
			members = append(members, key+pick(r, ":", " : ", ":\n")+val)
		}
		raw := pick(r, "", " ", "\n") + "{" + strings.Join(members, pick(r, ",", " , ", ",,")) + "}" + pick(r, "", " ", "\n", "x", "{}", "]", "}")
		if r.IntN(20) == 0 {
			raw = raw[:r.IntN(len(raw)+1)]
		}
		got, gerr := DecodePzReward([]byte(raw))
		want, werr := decodePzRewardSlow([]byte(raw))
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() || gerr == nil && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: %v, %v; DecodePz %v, %v", raw, got, gerr, want, werr)
		}
	}
	body := []byte(`{"value":1}`)
	if n := testing.AllocsPerRun(100, func() { DecodePzReward(body) }); n != 0 {
		t.Errorf("the common shape took %v allocations: not the one pass", n)
	}
}

// pick2 is 0 or 1 more member, at random.
func pick2(r *rand.Rand) int { return r.IntN(2) }

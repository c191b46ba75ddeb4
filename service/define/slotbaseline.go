package define

import (
	"slices"
	"strings"
)

// Baseline returns the index, among the eligible actions of a stored
// rank request ctxt (in the request's order, the excluded ones left
// out: the decision set's order), of its baseline for apprentice mode:
// for a slate's slot, the slot's baselineAction (SlotRef.Baseline) when
// it is still eligible; otherwise the first eligible action, 0 (a
// single-slot rank's baseline, the specification's RankRequest; and a
// slot whose baseline a slot before it was given, by exploration or
// after the switch). ReadSlate checks that a baseline is an action the
// slot does not exclude and no other slot's baseline, so only a slot
// before it can take it.
func Baseline(ctxt string) int {
	if !strings.Contains(ctxt, `"slot":`) {
		return 0 // no slot (a shortcut: a feature named "slot" only takes the long way)
	}
	req, _, err := decodeRank([]byte(ctxt), nil)
	if err != nil || req.Slot == nil {
		return 0
	}
	j := 0
	for _, a := range req.Actions {
		if slices.Contains(req.ExcludedActions, a.ID) {
			continue
		}
		if a.ID == req.Slot.Baseline {
			return j
		}
		j++
	}
	return 0
}

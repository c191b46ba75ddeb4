package sqldb

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/dpbandit/dpbandit/service/store"
)

// A commit's statements, in the order of Queries.
const (
	StmtInsertEvent = iota
	StmtUpdateEvent
	StmtLedger
	StmtRelease
	StmtDraw
	StmtForget
	StmtStatus
	StmtSnapshot
	StmtIndex
	StmtFolded
	StmtDefinition
	StmtActionSet
	StmtSpend // the replicas' (PostgreSQL only): the last, not prepared on SQLite
)

// Queries are a commit's statements (with ? placeholders).
var Queries = []string{
	StmtInsertEvent: `INSERT INTO events (exp, seq, event_id, unit_id, context, arm, plan, decided, status, pscore, policy_arm, indexed, shared, shared_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	StmtUpdateEvent: `UPDATE events SET status = ?, reason = ?, reward = ?, rseq = ?, at = ?, debit = ? WHERE exp = ? AND seq = ?`,
	StmtLedger: `INSERT INTO ledger (unit_id, exp, rewards, nano) VALUES (?, ?, ?, ?)
		ON CONFLICT (unit_id, exp) DO UPDATE SET rewards = ledger.rewards + excluded.rewards, nano = ledger.nano + excluded.nano`,
	StmtRelease: `INSERT INTO releases (exp, idx, seq, kind, scale, sensitivity, value, arm, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	StmtDraw:    `INSERT INTO draws (exp, idx, word) VALUES (?, ?, ?)`,
	StmtForget:  `UPDATE events SET reward = NULL WHERE exp = ? AND seq BETWEEN ? AND ? AND reward IS NOT NULL`,
	StmtStatus:  `UPDATE experiments SET status = ? WHERE id = ?`,
	StmtSnapshot: `INSERT INTO snapshots (exp, seq, state, sum) VALUES (?, ?, ?, ?)
		ON CONFLICT (exp) DO UPDATE SET seq = excluded.seq, state = excluded.state, sum = excluded.sum`,
	StmtIndex:      `UPDATE events SET indexed = 1 WHERE exp = ? AND seq BETWEEN ? AND ? AND indexed = 0`,
	StmtFolded:     `UPDATE experiments SET folded = ? WHERE id = ?`,
	StmtDefinition: `UPDATE experiments SET definition = ? WHERE id = ?`,
	StmtActionSet:  `INSERT INTO action_sets (digest, body) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING`,
	// A unit without a spend row starts from its ledger, which holds the
	// debits already (written before, in the same transaction: store.Fold).
	StmtSpend: `INSERT INTO unit_spend AS u (tenant, unit_id, nano) VALUES (?, ?, (` + QueryUnitTotal + `))
		ON CONFLICT (tenant, unit_id) DO UPDATE SET nano = u.nano + ?`,
}

// Writes calls exec for every statement of a batch, in order; with
// cursors, the folds' cursors too (SQLite's: PostgreSQL folds as it
// goes, and reads none, fold.go). With shared, a decision's shared part
// of its context (store.Shared) is written once, in action_sets, and
// its event refers to it; without, every context is written whole
// (PostgreSQL's, which replicas of earlier versions, that cannot
// resolve a reference, read during a rolling update).
func Writes(batch []*store.Change, cursors, shared bool, exec func(st int, args ...any) error) error {
	var folded map[string]int64       // each experiment's cursor, written once a batch
	var spent map[store.UnitKey]int64 // the unreserved debits of each unit (store.Fold.Unreserved)
	if shared {
		if err := sharedWrites(batch, exec); err != nil {
			return err
		}
	}
	for _, c := range batch {
		f := c.Fold
		if e := c.Insert; e != nil {
			var ctxt, digest, at any
			rest, part := e.Context, (*store.Shared)(nil)
			if shared {
				rest, part = e.Split()
			}
			if rest != "" {
				ctxt = rest
			}
			if part != nil {
				digest, at = part.Digest[:], part.At
			}
			indexed := 0
			if f != nil {
				indexed = 1 // a change that folds folds its own decision: indexed as it is written
			}
			if err := exec(StmtInsertEvent, c.Exp, e.Seq, e.ID, e.Unit, ctxt, e.Arm, e.Plan, e.Decided, e.Status, e.PScore, e.PolicyArm, indexed, digest, at); err != nil {
				return err
			}
		}
		if e := c.Update; e != nil {
			var r any
			if e.Reward != nil {
				r = *e.Reward
			}
			if err := exec(StmtUpdateEvent, e.Status, e.Reason, r, e.RSeq, e.At, c.Debit, c.Exp, e.Seq); err != nil {
				return err
			}
		}
		for i, r := range c.Releases {
			if err := exec(StmtRelease, c.Exp, c.RelBase+int64(i), r.Seq, r.Kind, r.Scale, r.Sensitivity, r.Value, r.Arm, r.At); err != nil {
				return err
			}
		}
		for i, w := range c.Draws {
			if err := exec(StmtDraw, c.Exp, c.DrawBase+int64(i), int64(w)); err != nil {
				return err
			}
		}
		for _, p := range c.Forget.Except(c.Keep) {
			if err := exec(StmtForget, c.Exp, p.Lo, p.Hi); err != nil {
				return err
			}
		}
		if c.Status != "" {
			if err := exec(StmtStatus, c.Status, c.Exp); err != nil {
				return err
			}
		}
		if c.Definition != "" {
			if err := exec(StmtDefinition, c.Definition, c.Exp); err != nil {
				return err
			}
		}
		if sn := c.Snapshot; sn != nil {
			if err := exec(StmtSnapshot, c.Exp, sn.Seq, sn.State, sn.Sum); err != nil {
				return err
			}
		}
		if f != nil {
			if err := foldWrites(f, c, exec); err != nil {
				return err
			}
			if cursors {
				if folded == nil {
					folded = map[string]int64{}
				}
				folded[c.Exp] = f.Upto
			}
			if f.Unreserved && len(f.Debits) > 0 {
				if spent == nil {
					spent = map[store.UnitKey]int64{}
				}
				tenant, _, _ := strings.Cut(c.Exp, "/")
				for _, d := range f.Debits {
					spent[store.UnitKey{Tenant: tenant, Unit: d.Unit}] += d.Nano
				}
			}
		}
	}
	// In one order (concurrent transactions that update rows in
	// different orders can deadlock on PostgreSQL): the cursors, and the
	// units' spend rows, which every replica's commits share, after the
	// ledger rows they start from.
	for _, exp := range slices.Sorted(maps.Keys(folded)) {
		if err := exec(StmtFolded, folded[exp], exp); err != nil {
			return err
		}
	}
	for _, u := range slices.SortedFunc(maps.Keys(spent), func(a, b store.UnitKey) int {
		return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Unit, b.Unit))
	}) {
		prefix := u.Tenant + "/"
		if err := exec(StmtSpend, u.Tenant, u.Unit, u.Unit, len(prefix), prefix, spent[u]); err != nil {
			return err
		}
	}
	return nil
}

// foldWrites calls exec for the fold's statements but the cursor's and the units'
// spend (Writes, which writes them last, in key order).
func foldWrites(f *store.Fold, c *store.Change, exec func(st int, args ...any) error) error {
	lo, hi := f.Index.Lo, f.Index.Hi
	if e := c.Insert; e != nil && e.Seq == hi {
		hi-- // written indexed (Writes)
	}
	if !f.Index.Empty() && lo <= hi {
		if err := exec(StmtIndex, c.Exp, lo, hi); err != nil {
			return err
		}
	}
	for _, d := range f.Debits {
		if err := exec(StmtLedger, d.Unit, c.Exp, d.Rewards, d.Nano); err != nil {
			return err
		}
	}
	return nil
}

// sharedWrites calls exec for the shared parts of a batch's decisions
// (store.Shared), each once, in the order of their digests (concurrent
// transactions that insert the same keys in different orders can
// deadlock on PostgreSQL); a part stored before is left as it is.
func sharedWrites(batch []*store.Change, exec func(st int, args ...any) error) error {
	var parts []*store.Shared
	for _, c := range batch {
		if e := c.Insert; e != nil && e.Shared != nil {
			if _, p := e.Split(); p != nil && !slices.ContainsFunc(parts, func(q *store.Shared) bool { return q.Digest == p.Digest }) {
				parts = append(parts, p)
			}
		}
	}
	slices.SortFunc(parts, func(a, b *store.Shared) int { return bytes.Compare(a.Digest[:], b.Digest[:]) })
	for _, p := range parts {
		if err := exec(StmtActionSet, p.Digest[:], p.Text); err != nil {
			return err
		}
	}
	return nil
}

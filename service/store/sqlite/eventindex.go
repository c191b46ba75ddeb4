package sqlite

import (
	"math"
	"strconv"

	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/store/internal/sqldb"
)

// eventIndex is SQLite's event-id index (sqldb.EventIndex): partial, on
// the folded events.
var eventIndex = sqldb.EventIndex{
	Name: "events_id_exp_folded", On: "events_id_exp_folded ON events (event_id, exp) WHERE indexed = 1",
	Old: preFolds, Filter: foldedOnly, PreFolds: preFolds, Repair: repairPreFolds,
}

// preFolds are the event-id indexes of SQLite's versions before folds,
// which each builds at its start: finding one, a store's events and
// ledger are repaired (repairPreFolds).
var preFolds = []string{"events_id_exp", "events_by_id", "events_by_event_id"}

// foldedOnly ends a lookup by id, whose index holds the folded events
// only.
const foldedOnly = ` AND indexed = 1`

// repairPreFolds folds a SQLite store on which a version before folds
// ran (it built its index at its start, and indexed and debited as it
// wrote, moving no cursor): every event is indexed (that version's
// index, unique on every event, kept the ids unique), each ledger row is
// at least its events' learned rewards and debits (a tail this version
// left unfolded at a crash is in the events, not in the ledger), and
// every experiment is folded through all it wrote.
var repairPreFolds = []string{
	`UPDATE events SET indexed = 1 WHERE indexed = 0`,
	`INSERT INTO ledger (unit_id, exp, rewards, nano)
		SELECT unit_id, exp, COUNT(*), SUM(debit) FROM events WHERE status IN ('` + store.Learned + `', '` + store.Defaulted + `') GROUP BY unit_id, exp
		ON CONFLICT (unit_id, exp) DO UPDATE SET rewards = max(ledger.rewards, excluded.rewards), nano = max(ledger.nano, excluded.nano)`,
	`UPDATE experiments SET folded = ` + strconv.FormatInt(math.MaxInt64, 10),
}

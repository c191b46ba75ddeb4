package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/dpbandit/dpbandit/ope"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/importer"
	"github.com/dpbandit/dpbandit/service/internal/media"
	"github.com/dpbandit/dpbandit/service/outcome"
)

// Import limits.
const (
	maxImportBody = 256 << 20 // a log, in bytes
	// maxImportEvents bounds its rewarded events: an import holds its
	// operations in memory until its one commit, about 3 KB an event
	// (160 000 events: 470 MB), so that larger logs go in parts.
	maxImportEvents = 1 << 16
	// importTimeout bounds the reading of an import's log and its answer.
	importTimeout = 10 * time.Minute
)

// RefusedRecord is a log record an import refused: its line and why (the
// reader's field and reason: a probability missing, 0 or over 1, NaN,
// an action outside the experiment's arms, an id that is not one).
type RefusedRecord struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// ImportAnswer is the answer to an import: what it changed, the records
// it refused and those without a reward (decisions whose reward never
// came, which teach nothing), the unit cap, and the experiment's state
// after it.
type ImportAnswer struct {
	importer.Result
	// Refused counts the records refused; RefusedRecords lists the
	// first few with their lines. With skip_invalid they were left out
	// and the rest imported; without it the import was refused whole.
	Refused        int             `json:"refused_records"`
	RefusedRecords []RefusedRecord `json:"refused,omitempty"`
	WithoutReward  int             `json:"records_without_reward"`
	// PScores is the range of the imported events' propensities: one
	// value, 1/K, for a uniform logging policy, under which a contextual
	// experiment's replay is unbiased (package importer).
	PScores [2]float64 `json:"pscore_range"`
	// IDsFrom says where the events' ids and units came from.
	IDsFrom string `json:"ids_from"`
	// CapNanoRho is the server's cap on a unit's ledger (0: none).
	CapNanoRho int64 `json:"cap_nano_rho"`
	// State is the experiment's state after the import (absent from a
	// refusal).
	State *outcome.State `json:"state,omitempty"`
}

// refusedError is an import refused for its records (422, with them).
type refusedError struct{ ans ImportAnswer }

func (e *refusedError) Error() string {
	return fmt.Sprintf("%d records of the log cannot be used (the first at line %d: %s); nothing was imported (skip_invalid=true imports the others)",
		e.ans.Refused, e.ans.RefusedRecords[0].Line, e.ans.RefusedRecords[0].Reason)
}

// handleImport imports a log into an experiment (importer.Import):
// JSON lines (the service's own export, the Open Bandit Pipeline's
// fields) or dsjson as application/x-ndjson, CSV as text/csv; the
// format is detected from the content or named (?format=jsonl, dsjson,
// csv, obp). Every record is checked first; without ?skip_invalid=true
// one refused record refuses the import (422, listing the records).
func (a *server) handleImport(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	x, err := a.writableExperiment(t, r)
	if err != nil {
		return nil, err
	}
	if _, err := media.Check(r, media.NDJSON, media.CSV); err != nil {
		return nil, err
	}
	q := r.URL.Query()
	skip := false
	if v := q.Get("skip_invalid"); v != "" {
		if skip, err = strconv.ParseBool(v); err != nil {
			return nil, fault.Errorf(fault.Invalid, "skip_invalid must be true or false, got %q", v)
		}
	}
	reading, err := ope.NewReading(q.Get("format"), 0)
	if err != nil {
		return nil, fault.Errorf(fault.Invalid, "format: %v", err)
	}
	logged, ans, err := readImport(http.MaxBytesReader(w, r.Body, maxImportBody), x, reading)
	if err != nil {
		return nil, err
	}
	if ans.Refused > 0 && !skip {
		w.Header().Set("Content-Type", "application/json")
		writeJSON(w, 422, struct {
			Error string `json:"error"`
			ImportAnswer
		}{(&refusedError{ans}).Error(), ans})
		return nil, nil
	}
	if ans.Result, err = importer.Import(r.Context(), x, logged); err != nil {
		return nil, err
	}
	ans.CapNanoRho = a.cfg.UnitBudget
	st, err := a.stateHere(r.Context(), x)
	if err != nil {
		return nil, err
	}
	ans.State = &st
	return ans, nil
}

// longer gives a route the deadlines of an import (importTimeout) in
// place of the server's one-minute read and write timeouts (dpbandit
// serve), which a large log or a slow store outlasts, here and, on
// replicas, on the way to the replica that serves the experiment (a
// server without deadlines ignores them).
func longer(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(time.Now().Add(importTimeout))
		rc.SetWriteDeadline(time.Now().Add(importTimeout))
		return h(w, r, t)
	}
}

// readImport reads a log whole with ope's reader (ope.Reader.ReadNames):
// its rewarded events, and the records it refused. An event without an
// id is named by the log's digest and its record ("log-<digest>-<n>":
// the same file imported again gives the same ids); an event without a
// unit is its own unit (its id). For a contextual experiment each
// event's decision set is checked as a decision's context is
// (Experiment.CheckContext).
func readImport(body io.Reader, x *engine.Experiment, reading ope.Reading) ([]importer.Event, ImportAnswer, error) {
	var ans ImportAnswer
	h := sha256.New()
	def := x.Definition()
	rd, err := ope.NewReaderWith(io.TeeReader(body, h), def.Arms, reading)
	if err != nil {
		return nil, ans, logFault(err)
	}
	rd.ReadNames()
	pz := def.Surface == define.SurfacePersonalizer
	if pz {
		if rd.Format() != "dsjson" {
			return nil, ans, fault.Errorf(fault.Invalid, "a personalizer experiment imports dsjson logs (Personalizer's and Vowpal Wabbit's, whose records keep each rank's features), not %s: its decisions are rank requests", rd.Format())
		}
		rd.KeepRecords()
	}
	var logged []importer.Event
	var records []int // the records of the events without an id
	last, refusedAt := -1, -1
	for {
		e, err := rd.Next()
		if err == io.EOF {
			break
		}
		var le *ope.LogError
		if errors.As(err, &le) {
			if le.Line <= last {
				return nil, ans, logFault(err) // the reader cannot go past it (a line too long)
			}
			last = le.Line
			ans.refuse(le.Line, le.Reason)
			continue
		}
		if err != nil {
			return nil, ans, logFault(err)
		}
		if len(logged) == maxImportEvents {
			return nil, ans, fault.Errorf(fault.TooLarge, "the log has more than %d rewarded events: import it in parts", maxImportEvents)
		}
		if e.ID != "" {
			if err := define.CheckID("event id", e.ID); err != nil {
				ans.refuse(e.Line, err.Error())
				continue
			}
		}
		if e.Unit != "" {
			if err := define.CheckPathID("unit_id", e.Unit); err != nil {
				ans.refuse(e.Line, err.Error())
				continue
			}
		}
		l := importer.Event{ID: e.ID, Unit: e.Unit, Arm: e.Action, Reward: e.Reward, Line: e.Line}
		if pz {
			if e.Line == refusedAt {
				continue // (a slot of a record refused whole)
			}
			if reason := pzLogged(&def, &l, e.Text); reason != "" {
				ans.refuse(e.Line, reason)
				refusedAt = e.Line
				continue
			}
		} else if def.Dim > 0 {
			if e.Actions == nil {
				ans.refuse(e.Line, fmt.Sprintf("no decision set: a contextual experiment needs each event's context, %d vectors of dimension %d", def.Arms, def.Dim))
				continue
			}
			raw, _ := json.Marshal(e.Actions)
			if l.Context, l.Set, err = x.CheckContext(raw); err != nil {
				ans.refuse(e.Line, "context: "+err.Error())
				continue
			}
		}
		if e.ID == "" {
			records = append(records, len(logged), e.Record)
		}
		if len(logged) == 0 || e.PScore < ans.PScores[0] {
			ans.PScores[0] = e.PScore
		}
		ans.PScores[1] = max(ans.PScores[1], e.PScore)
		logged = append(logged, l)
	}
	ans.WithoutReward = rd.Skipped
	if _, err := io.Copy(h, body); err != nil { // (the reader stops at its last record)
		return nil, ans, logFault(err)
	}
	digest := hex.EncodeToString(h.Sum(nil)[:8])
	for i := 0; i < len(records); i += 2 {
		logged[records[i]].ID = fmt.Sprintf("log-%s-%d", digest, records[i+1])
	}
	ans.IDsFrom = "the log's event ids"
	if len(records) > 0 {
		ans.IDsFrom = fmt.Sprintf("%d events without an id are named log-%s-<record>", len(records)/2, digest)
	}
	units := 0
	for i := range logged {
		if logged[i].Unit == "" {
			logged[i].Unit = logged[i].ID
			units++
		}
	}
	if units > 0 {
		ans.IDsFrom += fmt.Sprintf("; %d events without a unit_id are each their own unit (their event id)", units)
	}
	if len(logged) == 0 && ans.Refused == 0 {
		return nil, ans, fault.Errorf(fault.Invalid, "the log has no event with a reward")
	}
	return logged, ans, nil
}

func (a *ImportAnswer) refuse(line int, reason string) {
	a.Refused++
	if len(a.RefusedRecords) < 10 {
		a.RefusedRecords = append(a.RefusedRecords, RefusedRecord{line, reason})
	}
}

// logFault is a log that cannot be read at all: Invalid, naming the line
// (ope.LogError), or the body's own error (413 over the limit).
func logFault(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	if errors.Is(err, ope.ErrNoEvents) {
		return fault.Errorf(fault.Invalid, "the log has no event with a reward")
	}
	return fault.Errorf(fault.Invalid, "the log cannot be read: %v", err)
}

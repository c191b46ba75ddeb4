package evaluation

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/reason"
	"github.com/dpbandit/dpbandit/service/store"
)

// evalLog is an evaluation's log, streamed from the store at each pass
// over it (ope.EvaluateAll reads it twice, nonZero once), never held
// whole: the events the first pass found, by seq, with each one's
// number of eligible actions (what the targets read, eligibleOnly).
// A later pass that finds other events (the log deleted meanwhile)
// fails, rather than let the passes disagree.
type evalLog struct {
	s          *subject
	def        define.Definition
	start, end int64
	seqs       []int64
	eligible   []int
	unitOf     []string        // each event's unit (the first pass's, until reserveUnits)
	over       map[string]bool // the units left out (reserveUnits), their events skipped
	slots      int
	unlogged   int
	changed    atomic.Bool // a pass found other events than the first
}

// log reads which events of [start, end) the evaluation reads
// (the package's comment: the log).
func (s *subject) log(ctx context.Context, def define.Definition, start, end time.Time) (*evalLog, error) {
	lg := &evalLog{s: s, def: def, start: unixNanoIn(start), end: unixNanoIn(end)}
	err := lg.scan(ctx, true, func(e store.Event, set [][]float64) error {
		lg.seqs = append(lg.seqs, e.Seq)
		lg.eligible = append(lg.eligible, len(set))
		lg.unitOf = append(lg.unitOf, e.Unit)
		return nil
	})
	if err != nil {
		return nil, fault.Errorf(fault.Unavailable, "reading the log: %v", err)
	}
	if len(lg.seqs) == 0 {
		return nil, &Error{Kind: fault.Invalid, Code: "NoLogsExistInDateRange", Field: "startTime",
			Msg: fmt.Sprintf("no event with a reward (learned, ignored or the default) was decided in [%s, %s)", start.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano))}
	}
	return lg, nil
}

// unixNanoIn returns t in unix nanoseconds, saturated at int64's bounds
// (1677 and 2262), where t.UnixNano() wraps: a range to 2300 read no
// event (TestPersonalizerEvaluationFarRange).
func unixNanoIn(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// scan calls emit with every event the evaluation reads, in order, its
// reward set (evalReward), and its eligible actions' vectors; count
// counts the events left out (the first pass).
func (lg *evalLog) scan(ctx context.Context, count bool, emit func(e store.Event, set [][]float64) error) error {
	return lg.s.env.Store.Log(ctx, lg.s.key, func(e store.Event) error {
		if e.Decided < lg.start || e.Decided >= lg.end {
			return nil
		}
		r, ok := evalReward(lg.def, e)
		if !ok {
			return nil
		}
		e.Reward = &r
		rs, err := define.ReadRank([]byte(e.Context), lg.def.HashBits)
		switch {
		case err != nil:
			return fmt.Errorf("event %q: its stored rank does not read: %v", e.ID, err)
		case rs.Request.Slot != nil:
			if count {
				lg.slots++
			}
			return nil
		case e.PolicyArm < 0:
			if count {
				lg.unlogged++
			}
			return nil
		case lg.over[e.Unit]: // its ledger could not afford the evaluation (reserveUnits)
			return nil
		}
		return emit(e, rs.Set)
	})
}

// errLogChanged stops a pass that found other events than the first.
var errLogChanged = errors.New("the log changed during the evaluation")

// open returns the log as ope's JSON lines, written from the store as
// they are read, by a goroutine that ends with the pass (or once the
// reader is closed: its next write fails).
func (lg *evalLog) open(ctx context.Context) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(lg.write(ctx, pw, nil)) }() // nil: EOF
	return pr
}

// write writes the log's lines to w (appendEvalFields), each begun by
// head's fields (nil: none), checking that the pass finds the events
// the first found.
func (lg *evalLog) write(ctx context.Context, w io.Writer, head func(b []byte, e store.Event) []byte) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var line []byte
	i := 0
	err := lg.scan(ctx, false, func(e store.Event, set [][]float64) error {
		if i >= len(lg.seqs) || e.Seq != lg.seqs[i] {
			return errLogChanged
		}
		i++
		line = append(line[:0], '{')
		if head != nil {
			line = head(line, e)
		}
		line = appendEvalFields(line, e, set, lg.def.Distribution(e), lg.def.Arms)
		_, err := bw.Write(line)
		return err
	})
	if err == nil && i != len(lg.seqs) {
		err = errLogChanged
	}
	if err == nil {
		err = bw.Flush()
	}
	if errors.Is(err, errLogChanged) {
		lg.changed.Store(true)
	}
	return err
}

// failed is the error of a computation on the log that failed with
// err: Unavailable (retry) if the log changed under it.
func (lg *evalLog) failed(err error) error {
	if lg.changed.Load() {
		return fault.Errorf(fault.Unavailable, "%v (its log was deleted meanwhile?): retry", errLogChanged)
	}
	return fault.Errorf(fault.Internal, "evaluating the log: %v", err)
}

// evalReward returns the reward an evaluation reads for a settled
// event: its reward, learned or not (a reward ignored for exploration,
// a unit's contribution limit or budget, an overflow or a model reset
// was observed all the same: leaving those out would bias every
// estimate), or, for an event whose window passed without one, the
// default reward it was decided under, if any. Events never activated
// (deferred, reason.NotActivated) were not shown: left out.
func evalReward(def define.Definition, e store.Event) (float64, bool) {
	switch {
	case e.Reason == reason.NotActivated:
		return 0, false
	case e.Reward != nil:
		return *e.Reward, true
	case e.Status == store.Expired:
		if at, _ := def.Effective(e.Seq); at.DefaultReward != nil {
			return *at.DefaultReward, true
		}
	}
	return 0, false
}

// appendEvalFields appends an event's fields of ope's JSON lines, after
// the line's opening brace, and closes it: its action, reward, pscore,
// unit, the distribution and the decision set padded to k actions with
// zeros. Numbers are written to the last bit (strconv's shortest form),
// so that ope reads back the same floats.
func appendEvalFields(b []byte, e store.Event, set [][]float64, dist []float64, k int) []byte {
	num := func(b []byte, v float64) []byte { return strconv.AppendFloat(b, v, 'g', -1, 64) }
	b = append(b, `"action":`...)
	b = strconv.AppendInt(b, int64(e.Arm), 10)
	b = append(b, `,"reward":`...)
	b = num(b, *e.Reward)
	b = append(b, `,"pscore":`...)
	b = num(b, e.PScore)
	b = append(b, `,"unit_id":`...)
	u, _ := json.Marshal(e.Unit)
	b = append(b, u...)
	b = append(b, `,"action_prob":[`...)
	for a := range k {
		if a > 0 {
			b = append(b, ',')
		}
		if a < len(dist) {
			b = num(b, dist[a])
		} else {
			b = append(b, '0')
		}
	}
	b = append(b, `],"context":[`...)
	dim := len(set[0])
	for a := range k {
		if a > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for j := range dim {
			if j > 0 {
				b = append(b, ',')
			}
			if a < len(set) {
				b = num(b, set[a][j])
			} else {
				b = append(b, '0')
			}
		}
		b = append(b, ']')
	}
	return append(b, "]}\n"...)
}

// WriteLog writes the log an evaluation of [start, end) reads
// (the package's comment), every event a line of ope's JSON lines that
// `dpbandit evaluate --arms 50` reads, with the export's names of the
// event (event_id, status, learned, timestamp, policy_version,
// position), which ope ignores: the log a client evaluates again to
// compare. It reads the log twice (which events, then the lines); with
// no event in the range it writes nothing.
func WriteLog(ctx context.Context, x Experiment, start, end time.Time, w io.Writer) error {
	s := subjectOf(x)
	def := x.Definition()
	switch {
	case def.Surface != define.SurfacePersonalizer:
		return fault.Errorf(fault.Invalid, "format=evaluation is the log of a personalizer experiment's evaluations; %q is not one", def.ID)
	case !s.env.KeepLog:
		return fault.Errorf(fault.Conflict, "the log is kept only with --keep-log: rewards of released episodes are deleted")
	}
	if err := x.Durable(ctx); err != nil {
		return err
	}
	lg, err := s.log(ctx, def, start, end)
	var ee *Error
	if errors.As(err, &ee) && ee.Code == "NoLogsExistInDateRange" {
		return nil
	}
	if err != nil {
		return err
	}
	err = lg.write(ctx, w, func(b []byte, e store.Event) []byte {
		id, _ := json.Marshal(e.ID)
		return fmt.Appendf(b, `"event_id":%s,"status":%q,"learned":%t,"timestamp":%q,"policy_version":%d,"position":0,`,
			id, e.Status, e.Status == store.Learned || e.Status == store.Defaulted, time.Unix(0, e.Decided).UTC().Format(time.RFC3339Nano), e.Plan)
	})
	if errors.Is(err, errLogChanged) {
		return fault.Errorf(fault.Unavailable, "%v: retry", err)
	}
	return err
}

// Package ope evaluates target policies off-policy, on logged bandit
// feedback: the direct method, inverse propensity scoring (IPS), its
// self-normalised form (SNIPS) and the doubly robust estimator for fixed
// target policies, the replay method (Li, Chu, Langford and Wang, WSDM
// 2011) for adaptive ones (bandit algorithms) on uniformly logged data,
// and a differentially private release of the clipped IPS estimate.
//
// Logs follow the Open Bandit Pipeline's field names (Saito et al. 2021):
// each event has the logged action, its reward, and pscore, the
// probability with which the logging policy chose that action; optionally
// a context under the key "context" (CSV: context_0, context_1, ...),
// either a feature vector or, as `dpbandit serve` exports for
// contextual experiments, the decision set (one feature vector per
// action), and action_prob, the logging policy's whole distribution.
// Other keys are ignored (logs carry ids and times): a context under
// another key (Event's field name, "x", say) is not read.
package ope

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/internal/decimal"
)

// Event is one logged decision.
type Event struct {
	// Line is the event's line in the log (1-based).
	Line int
	// Record is the event's index among the log's records (0-based):
	// its non-blank JSON lines or CSV data rows, events without a
	// reward included.
	Record int
	// Action is the logged action, 0-based.
	Action int
	// Reward is its observed reward.
	Reward float64
	// PScore is the logging policy's probability of Action, in (0, 1].
	PScore float64
	// X is a feature vector context (nil when none).
	X []float64
	// Actions is a decision-set context: one vector per action (nil when
	// none).
	Actions [][]float64
	// Probs is the logging policy's distribution over the actions, when
	// logged (action_prob).
	Probs []float64
	// Unit is the event's unit_id, read only when an evaluation bounds
	// each unit's events (Options.MaxEventsPerUnit) or names are read
	// (ReadNames).
	Unit string
	// ID is the event's id, read only with ReadNames ("" when the log
	// names none).
	ID string
	// Text is a dsjson event's record as the log has it, kept only with
	// KeepRecords (the events of a record's slots share it).
	Text []byte
}

// LogError is a log line that cannot be used. Err, when set, is the
// cause (a *FieldError names the record's field).
type LogError struct {
	Line   int
	Reason string
	Err    error
}

func (e *LogError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// Unwrap returns the cause, if any.
func (e *LogError) Unwrap() error { return e.Err }

// ErrNoEvents is a log without a usable event.
var ErrNoEvents = errorf("the log has no event with a reward")

// Reader streams a log's events: JSON lines (one object per line) or CSV
// with a header row naming action, reward, pscore and context_0,
// context_1, ... (a feature vector). Events whose reward is null (a
// decision the service logged before or without its reward) are skipped
// and counted; every other field is checked, and a bad one is a
// LogError at its line.
type Reader struct {
	arms    int
	sc      *bufio.Scanner
	csv     *csv.Reader
	cols    map[string]int
	ctxCols []int // the columns of context_0, context_1, ...
	skip    int   // the blank lines before the first record
	line    int
	records int
	maxLine int
	limit   *recordLimit // the CSV reader's input, reset at each record
	// reuse makes an event's vectors the buffers below, overwritten by
	// the next event (scan's callers do not keep them).
	reuse   bool
	x, flat []float64 // a feature vector, a decision set's vectors end to end
	ends    []int     // where each of the decision set's vectors ends in flat
	set     [][]float64
	probs   []float64 // action_prob
	others  [][]byte  // the keys of a record besides its fields
	// reading is how records are read, format the format read: jsonl,
	// csv, dsjson or obp.
	reading Reading
	format  string
	pending []pendingEvent // the events of a record of several (dsjson's slots)
	names   []string       // the CSV header
	obpCols []int          // obp: the feature columns
	// wantUnit reads each event's unit_id.
	wantUnit bool
	// wantID reads each event's id (ReadNames).
	wantID bool
	// keepText keeps each dsjson event's record (KeepRecords).
	keepText bool
	// Skipped counts the events without a reward.
	Skipped int
}

// NewReader reads a log from r; arms is K, the number of actions (0:
// taken from the first event's action_prob or decision set).
func NewReader(r io.Reader, arms int) (*Reader, error) {
	return newReader(r, arms, Reading{}, MaxLine)
}

// NewReaderWith is NewReader for a Reading: a format named (or detected
// from the content: a JSON first record naming a dsjson key is dsjson, a
// CSV header naming item_id, click and propensity_score the Open Bandit
// Dataset's) and the hashing of dsjson's and obp's features.
func NewReaderWith(r io.Reader, arms int, rg Reading) (*Reader, error) {
	return newReader(r, arms, rg, MaxLine)
}

// newReader is NewReaderWith with lines of at most maxLine bytes.
func newReader(r io.Reader, arms int, rg Reading, maxLine int) (*Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	// A UTF-8 byte-order mark (spreadsheets write one) and blank lines
	// come before the first record; the lines skipped are counted.
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3)
	}
	rd := &Reader{arms: arms, maxLine: maxLine, reading: rg}
	var head byte
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return nil, ErrNoEvents
		}
		if err != nil {
			return nil, err
		}
		if c == '\n' {
			rd.skip++
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			head = c
			br.UnreadByte()
			break
		}
	}
	rd.line = rd.skip
	isJSON := head == '{'
	if f := rg.Format; isJSON && (f == "csv" || f == "obp") || !isJSON && (f == "jsonl" || f == "dsjson") {
		return nil, &LogError{Line: rd.skip + 1, Reason: fmt.Sprintf("the log was named %s, but its first record %s", f, map[bool]string{true: "is a JSON object", false: "is not a JSON object"}[isJSON])}
	}
	if isJSON {
		rd.format = rg.Format
		if rd.format == "" {
			rd.format = "jsonl"
			if first, _ := br.Peek(br.Buffered()); isDSJSON(first) {
				rd.format = "dsjson"
			}
		}
		rd.sc = bufio.NewScanner(br)
		rd.sc.Buffer(make([]byte, 1<<16), maxLine)
	} else if err := rd.csvHeader(br, rg); err != nil {
		return nil, err
	}
	if rg.HashBits != 0 && (rd.format == "jsonl" || rd.format == "csv") {
		return nil, &OptionError{Field: "hash-bits", Reason: "is for the hashed features of dsjson and obp logs; this log is " + rd.format + " (read from its content), whose contexts are vectors already"}
	}
	return rd, nil
}

// csvHeader reads a CSV log's header: the columns of the Open Bandit
// Pipeline's fields (action, reward, pscore, context_0, ...) or, as obp
// (named, or detected by item_id, click and propensity_score), the Open
// Bandit Dataset's.
func (rd *Reader) csvHeader(br *bufio.Reader, rg Reading) error {
	rd.limit = &recordLimit{r: br, max: rd.maxLine}
	rd.csv = csv.NewReader(rd.limit)
	rd.csv.ReuseRecord = true
	names, err := rd.csv.Read()
	rd.limit.n = 0
	line := rd.skip + 1
	if errors.Is(err, errLineTooLong) {
		return rd.tooLong(line)
	}
	if err != nil {
		return &LogError{Line: line, Reason: fmt.Sprintf("not JSON lines, nor CSV with a header: %v", err)}
	}
	rd.names = slices.Clone(names) // the CSV reader reuses names' slice
	rd.cols = map[string]int{}
	ctx := map[int]int{} // context_i -> column
	for j, n := range names {
		n = strings.TrimSpace(n)
		if _, ok := rd.cols[n]; ok {
			return &LogError{Line: line, Reason: fmt.Sprintf("the CSV header names %q twice", n)}
		}
		rd.cols[n] = j
		if rest, ok := strings.CutPrefix(n, "context_"); ok {
			i, err := strconv.Atoi(rest)
			if err != nil || i < 0 || strconv.Itoa(i) != rest {
				return &LogError{Line: line, Reason: fmt.Sprintf("the CSV header's column %q is not context_ and an index (context_0, context_1, ...)", n)}
			}
			ctx[i] = j
		}
	}
	rd.format = rg.Format
	if rd.format == "" {
		rd.format = "obp"
		for _, c := range obpColumns {
			if _, has := rd.cols[c]; !has {
				rd.format = "csv"
			}
		}
	}
	if rd.format == "obp" {
		return rd.obpHeader(names, line)
	}
	for _, need := range []string{"action", "reward", "pscore"} {
		if _, ok := rd.cols[need]; !ok {
			return &LogError{Line: line, Reason: fmt.Sprintf("the CSV header has no column %q (it needs action, reward, pscore and optionally context_0, context_1, ...)", need)}
		}
	}
	// Context columns by index, whatever their order in the header.
	for i := range len(ctx) {
		j, ok := ctx[i]
		if !ok {
			return &LogError{Line: line, Reason: fmt.Sprintf("the CSV header has %d context columns but no context_%d (they are context_0 to context_%d)", len(ctx), i, len(ctx)-1)}
		}
		rd.ctxCols = append(rd.ctxCols, j)
	}
	return nil
}

// tooLong is the LogError of a record longer than the limit, starting
// at line.
func (rd *Reader) tooLong(line int) error {
	return &LogError{Line: line, Reason: fmt.Sprintf("a record longer than %d bytes, the longest a log may have", rd.maxLine)}
}

// Arms returns K (0 until known).
func (rd *Reader) Arms() int { return rd.arms }

// Next returns the next event with a reward, io.EOF at the end.
func (rd *Reader) Next() (Event, error) {
	for {
		e, ok, err := rd.next()
		if err != nil || ok {
			return e, err
		}
		rd.Skipped++
	}
}

// next reads one line: ok is false for an event without a reward.
func (rd *Reader) next() (e Event, ok bool, err error) {
	if len(rd.pending) > 0 {
		e, ok = rd.pending[0].e, rd.pending[0].rewarded
		rd.pending = rd.pending[1:]
	} else if rd.sc != nil {
		for {
			if !rd.sc.Scan() {
				if err := rd.sc.Err(); errors.Is(err, bufio.ErrTooLong) {
					return e, false, rd.tooLong(rd.line + 1)
				} else if err != nil {
					return e, false, &LogError{Line: rd.line + 1, Reason: err.Error()}
				}
				return e, false, io.EOF
			}
			rd.line++
			if len(bytes.TrimSpace(rd.sc.Bytes())) > 0 {
				break
			}
		}
		b := rd.sc.Bytes()
		var fast bool
		switch {
		case rd.format == "dsjson":
			if err = rd.parseDSJSON(b); err == nil && rd.wantID {
				err = rd.nameJSON(b, nil)
			}
			if err == nil && rd.keepText {
				rd.keep(b)
			}
			if err == nil {
				e, ok = rd.pending[0].e, rd.pending[0].rewarded
				rd.pending = rd.pending[1:]
			}
		default:
			if e, ok, fast = rd.fastJSON(b); !fast {
				e, ok, err = rd.parseJSON(b)
			}
			if err == nil && rd.wantID {
				err = rd.nameJSON(b, &e)
			}
		}
	} else {
		var rec []string
		rec, err = rd.csv.Read()
		rd.limit.n = 0
		if err == io.EOF {
			return e, false, io.EOF
		}
		if errors.Is(err, errLineTooLong) {
			return e, false, rd.tooLong(rd.line + 1)
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return e, false, &LogError{Line: rd.skip + pe.Line, Reason: pe.Err.Error()}
			}
			return e, false, err
		}
		line, _ := rd.csv.FieldPos(0) // the record's first line: blank lines and quoted newlines count
		rd.line = rd.skip + line
		if rd.format == "obp" {
			e, ok, err = rd.parseOBP(rec)
		} else {
			e, ok, err = rd.parseCSV(rec)
		}
		if err == nil && rd.wantUnit {
			if j, has := rd.cols["unit_id"]; has {
				e.Unit = strings.TrimSpace(rec[j])
			}
		}
		if err == nil && rd.wantID {
			rd.nameCSV(rec, &e)
		}
	}
	e.Line, e.Record = rd.line, rd.records
	rd.records++
	if err == nil && ok {
		err = rd.check(&e)
	}
	if err != nil {
		return e, false, &LogError{Line: rd.line, Reason: err.Error(), Err: err}
	}
	return e, ok, nil
}

// jsonEvent is a JSON line as read.
type jsonEvent struct {
	Action  json.RawMessage `json:"action"`
	Reward  json.RawMessage `json:"reward"`
	PScore  *float64        `json:"pscore"`
	Context json.RawMessage `json:"context"`
	Probs   []float64       `json:"action_prob"`
}

func (rd *Reader) parseJSON(b []byte) (Event, bool, error) {
	var j jsonEvent
	if err := json.Unmarshal(b, &j); err != nil {
		return Event{}, false, fmt.Errorf("not a JSON object with numbers for action, reward and pscore: %v", err)
	}
	if err := duplicateKey(b); err != nil {
		return Event{}, false, err
	}
	if j.Action == nil {
		return Event{}, false, errors.New("no action")
	}
	a, err := strconv.Atoi(string(j.Action))
	if err != nil {
		return Event{}, false, fmt.Errorf("action %s is not an integer", j.Action)
	}
	var r float64
	switch {
	case j.Reward == nil:
		return Event{}, false, errors.New(`no reward (a decision whose reward never came has "reward": null)`)
	case string(j.Reward) == "null":
		return Event{}, false, nil
	case json.Unmarshal(j.Reward, &r) != nil:
		return Event{}, false, fmt.Errorf("reward %s is not a number", j.Reward)
	}
	if j.PScore == nil {
		return Event{}, false, errors.New("no pscore (the logging policy's probability of the action)")
	}
	e := Event{Action: a, Reward: r, PScore: *j.PScore, Probs: j.Probs}
	if rd.wantUnit {
		var u struct {
			Unit *string `json:"unit_id"`
		}
		if json.Unmarshal(b, &u) != nil {
			return e, false, errors.New("unit_id is not a string")
		}
		if u.Unit != nil {
			e.Unit = *u.Unit
		}
	}
	if len(j.Context) > 0 && string(j.Context) != "null" {
		if json.Unmarshal(j.Context, &e.X) != nil {
			e.X = nil // what the failed reading left (zeros)
			if err := json.Unmarshal(j.Context, &e.Actions); err != nil {
				return e, false, errors.New("context is neither a vector of numbers nor a decision set (vectors of numbers)")
			}
		}
	}
	return e, true, nil
}

func (rd *Reader) parseCSV(rec []string) (Event, bool, error) {
	num := func(col string) (float64, error) {
		v, err := decimal.Parse(rec[rd.cols[col]])
		if err != nil {
			return 0, fmt.Errorf("%s %q is not a number", col, rec[rd.cols[col]])
		}
		return v, nil
	}
	if strings.TrimSpace(rec[rd.cols["reward"]]) == "" {
		return Event{}, false, nil
	}
	a, err := strconv.Atoi(strings.TrimSpace(rec[rd.cols["action"]]))
	if err != nil {
		return Event{}, false, fmt.Errorf("action %q is not an integer", rec[rd.cols["action"]])
	}
	e := Event{Action: a}
	if e.Reward, err = num("reward"); err != nil {
		return e, false, err
	}
	if e.PScore, err = num("pscore"); err != nil {
		return e, false, err
	}
	for _, j := range rd.ctxCols {
		v, err := decimal.Parse(rec[j])
		if err != nil {
			return e, false, fmt.Errorf("context value %q is not a number", rec[j])
		}
		e.X = append(e.X, v)
	}
	return e, true, nil
}

// check validates an event against the log's K.
func (rd *Reader) check(e *Event) error {
	if rd.arms == 0 {
		rd.arms = max(len(e.Probs), len(e.Actions))
		if rd.arms == 0 {
			return errors.New("the number of actions is unknown: the event has no action_prob nor decision set (give it: --arms K)")
		}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	k := rd.arms
	if rd.keepText && e.Actions != nil {
		k = len(e.Actions) // (a rank's own actions: KeepRecords)
	}
	switch {
	case e.Action < 0 || e.Action >= k:
		return fmt.Errorf("action %d outside the %d actions 0 to %d", e.Action, k, k-1)
	case !finite(e.Reward):
		return fmt.Errorf("reward %v is not a finite number", e.Reward)
	case !(e.PScore > 0 && e.PScore <= 1):
		return fmt.Errorf("pscore %v must lie in (0, 1]: a logged action had a positive probability", e.PScore)
	case e.PScore < 0x1p-1022:
		return fmt.Errorf("pscore %v is subnormal (below 2.2e-308, float64's smallest normal number): its weight 1/pscore overflows", e.PScore)
	case e.Probs != nil && len(e.Probs) != k:
		return fmt.Errorf("action_prob has %d entries, the log %d actions", len(e.Probs), k)
	case e.Actions != nil && len(e.Actions) != k:
		return fmt.Errorf("the decision set has %d actions, the log %d", len(e.Actions), k)
	}
	if e.Probs != nil {
		s := 0.0
		for _, p := range e.Probs {
			if !(p >= 0 && p <= 1) {
				return fmt.Errorf("action_prob holds %v, not a probability", p)
			}
			s += p
		}
		if math.Abs(s-1) > 1e-6 {
			return fmt.Errorf("action_prob sums to %v, not 1", s)
		}
		if math.Abs(e.Probs[e.Action]-e.PScore) > 1e-9 {
			return fmt.Errorf("pscore %v differs from action_prob[%d] = %v", e.PScore, e.Action, e.Probs[e.Action])
		}
	}
	for _, v := range e.X {
		if !finite(v) {
			return errors.New("context holds a non-finite number")
		}
	}
	for _, a := range e.Actions {
		if len(a) != len(e.Actions[0]) {
			return errors.New("the decision set's vectors differ in length")
		}
		for _, v := range a {
			if !finite(v) {
				return errors.New("the decision set holds a non-finite number")
			}
		}
	}
	return nil
}

// jsonFields are the keys a record's fields are read from; encoding/json
// matches them whatever their case.
var jsonFields = []string{"action", "reward", "pscore", "context", "action_prob"}

// duplicateKey refuses a JSON object (valid JSON) that names a key twice
// at its top level: encoding/json would keep the last silently. Keys
// are compared decoded ("p\u0073core" is "pscore"), and the fields
// read also whatever their case ("Action" is "action", as encoding/json
// reads it). Nested objects are not the record's fields: their keys may
// repeat.
func duplicateKey(b []byte) error {
	seen := map[string]string{} // the key as compared -> as written
	depth, key := 0, false      // key: a string at depth 1 here is a key
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
			key = depth == 1 && b[i] == '{'
		case '}', ']':
			depth--
		case ',':
			key = depth == 1
		case '"':
			start := i
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if !key {
				continue
			}
			key = false
			var k string
			if err := json.Unmarshal(b[start:i+1], &k); err != nil {
				return err
			}
			as := k
			for _, f := range jsonFields {
				if strings.EqualFold(k, f) {
					as = f
				}
			}
			if first, ok := seen[as]; ok {
				if first != k {
					return fmt.Errorf("the record names the key %q twice (as %q and %q): encoding/json would keep the last silently", as, first, k)
				}
				return fmt.Errorf("the record names the key %q twice", k)
			}
			seen[as] = k
		}
	}
	return nil
}

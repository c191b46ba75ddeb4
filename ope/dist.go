package ope

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/dpbandit/dpbandit/internal/decimal"
	"github.com/dpbandit/dpbandit/internal/regfile"
)

// Dist is a target policy given as its probabilities for each logged
// event, as Open Bandit Pipeline's action_dist: line i of the file is
// pi(. | x_i) for the log's i-th record (Event.Record: events without a
// reward have their line too; a CSV log's header has none), written as
// a JSON array ([0.2, 0.8]) or as comma-separated numbers (0.2,0.8),
// with K probabilities in [0, 1] that sum to 1 within 1e-6. It is read
// alongside the log, a line at a time, never whole.
//
// A private release with such a target is private only if line i
// depends on the log through its event i alone (a policy applied to its
// context), as a linear target's probabilities do: a file computed from
// the whole log (a model fit on it) would let one event move every line.
type Dist struct {
	// Path is the file; Digest its SHA-256, hex-encoded (a private
	// release's ledger key names it).
	Path, Digest string
	f            *os.File
	sc           *bufio.Scanner
	next, line   int // the record whose line is next, and the file's line
}

// NewDist opens a file of target probabilities.
func NewDist(path string) (*Dist, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	digest, err := LogDigest(f)
	return &Dist{Path: path, Digest: digest}, err
}

// Probs reads the line of e's record. Records come in increasing order
// within a pass over the log; a record before the last one starts the
// file again (the next pass).
func (d *Dist) Probs(e *Event, p []float64) error {
	if d.f == nil || e.Record < d.next {
		if err := d.rewind(); err != nil {
			return err
		}
	}
	for {
		if !d.sc.Scan() {
			if err := d.sc.Err(); err != nil {
				return fmt.Errorf("%s line %d: %v", d.Path, d.line+1, err)
			}
			return fmt.Errorf("%s has %d rows, the log more: one row of target probabilities per logged record", d.Path, d.next)
		}
		d.line++
		text := strings.TrimSpace(d.sc.Text())
		if text == "" {
			continue
		}
		d.next++
		if d.next == e.Record+1 {
			if err := parseRow(text, p); err != nil {
				return fmt.Errorf("%s line %d: %v", d.Path, d.line, err)
			}
			return nil
		}
	}
}

// LengthError is a Dist file whose number of rows is not the log's
// number of records.
type LengthError struct {
	Path          string
	Rows, Records int
}

func (e *LengthError) Error() string { return "ope: " + e.Message() }

// Message is the error without the package's name.
func (e *LengthError) Message() string {
	return fmt.Sprintf("%s has %d rows, the log %d records: one row of target probabilities per logged record", e.Path, e.Rows, e.Records)
}

// EndPass checks, at the end of a pass over a log of that many records,
// that the file has a row for each and no more (a *LengthError
// otherwise), reading its rows left, and closes it: the next pass
// starts it again.
func (d *Dist) EndPass(records int) error {
	defer d.Close()
	rows := d.next
	for d.sc != nil && d.f != nil && d.sc.Scan() {
		d.line++
		if strings.TrimSpace(d.sc.Text()) != "" {
			rows++
		}
	}
	if d.sc != nil {
		if err := d.sc.Err(); err != nil {
			return fmt.Errorf("%s line %d: %v", d.Path, d.line+1, err)
		}
	}
	if rows != records {
		return &LengthError{Path: d.Path, Rows: rows, Records: records}
	}
	return nil
}

// rewind opens the file at its start.
func (d *Dist) rewind() error {
	d.Close()
	f, err := regfile.Open(d.Path)
	if err != nil {
		return err
	}
	d.f, d.sc, d.next, d.line = f, bufio.NewScanner(f), 0, 0
	d.sc.Buffer(nil, MaxLine)
	return nil
}

// Close closes the file, if open.
func (d *Dist) Close() error {
	if d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f = nil
	return err
}

// parseRow reads one row of K = len(p) probabilities into p.
func parseRow(text string, p []float64) error {
	var row []float64
	if strings.HasPrefix(text, "[") {
		if err := json.Unmarshal([]byte(text), &row); err != nil {
			return fmt.Errorf("not a JSON array of numbers: %v", err)
		}
	} else {
		for _, f := range strings.Split(text, ",") {
			x, err := decimal.Parse(f)
			if err != nil {
				return fmt.Errorf("%q is not a number", f)
			}
			row = append(row, x)
		}
	}
	if len(row) != len(p) {
		return fmt.Errorf("%d probabilities, the log has %d actions", len(row), len(p))
	}
	sum := 0.0
	for _, x := range row {
		if !(x >= 0 && x <= 1) {
			return fmt.Errorf("probability %v outside [0, 1]", x)
		}
		sum += x
	}
	if math.Abs(sum-1) > 1e-6 {
		return fmt.Errorf("the probabilities sum to %v, not 1", sum)
	}
	copy(p, row)
	return nil
}

package env

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/internal/decimal"
)

// MaxDataBytes bounds the size of a data file dpbandit reads: a run
// permutes the rows, so they are held in memory (as float64, MaxCells of
// them at most); a larger file is refused before it is read.
const MaxDataBytes = 2 << 30

// DataError is a data file that cannot be used, with the line (1-based,
// 0 when it is about the whole file) and column where it fails.
type DataError struct {
	Path   string
	Line   int
	Column string
	Reason string
}

func (e *DataError) Error() string {
	at := e.Path
	if e.Line > 0 {
		at += ":" + strconv.Itoa(e.Line)
	}
	if e.Column != "" {
		at += ": column " + e.Column
	}
	return at + ": " + e.Reason
}

// tableSpec says how to read a classification table: which column is the
// label, which are the features (nil: every other column), whether the
// first row names the columns, and the field delimiter.
type tableSpec struct {
	label    string // a column name, or a 1-based column number; "" for the last column
	features string // "N-M+NAME+...", or "" for every column but the label
	header   bool
	delim    rune
}

// table is a classification table as read: the features, row by row,
// unscaled, each followed by a free slot (for the intercept of the
// disjoint-arm encoding, so that scaling happens in place), the class of
// each row and the feature columns' names.
type table struct {
	names   []string
	nums    []int     // the feature columns' 1-based numbers
	x       []float64 // len(y) rows of len(names) + 1
	y       []int32   // each row's class, an index into classes
	classes []string  // the labels, in order of first appearance
}

// readTable reads a CSV file (gzip-compressed when its name ends in .gz),
// streaming it: one row at a time, the features kept as numbers. Every
// field of a feature column must be a finite number; every row has the
// first row's number of fields.
// open opens the file (os.Open, or an embedded file system's Open).
func readTable(path string, open func(string) (fs.File, error), ts tableSpec) (*table, error) {
	fail := func(line int, col, format string, a ...any) error {
		return &DataError{Path: path, Line: line, Column: col, Reason: fmt.Sprintf(format, a...)}
	}
	f, err := open(path)
	if err != nil {
		return nil, fail(0, "", "%v", errors.Unwrap(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > MaxDataBytes {
		return nil, fail(0, "", "%.3g GiB, above the %d GiB dpbandit reads (a run permutes the rows, held in memory): sample it first",
			float64(st.Size())/(1<<30), MaxDataBytes>>30)
	} else if err == nil && st.IsDir() {
		return nil, fail(0, "", "is a directory")
	}
	var r io.Reader = bufio.NewReaderSize(f, 1<<16)
	size := int64(0) // the bytes to read, when known
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return nil, fail(0, "", "not a gzip file: %v", err)
		}
		defer gz.Close()
		r = gz
	} else if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	// A UTF-8 byte-order mark (spreadsheets write one) is not part of
	// the first column's name.
	br := bufio.NewReaderSize(r, 1<<16)
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3)
	}
	return parseTable(csv.NewReader(br), ts, size, fail)
}

// parseTable reads the rows of cr (see readTable), of about size bytes
// (0: unknown). Memory: the rows' values, as float64, and a class index
// each; the values' slice is sized from the first rows' length when the
// size is known, so that it need not grow by copies.
func parseTable(cr *csv.Reader, ts tableSpec, size int64, fail func(line int, col, format string, a ...any) error) (*table, error) {
	cr.ReuseRecord = true
	if ts.delim != 0 {
		cr.Comma = ts.delim
	}
	first, err := cr.Read()
	if err == io.EOF {
		return nil, fail(0, "", "empty file: no rows")
	}
	if err != nil {
		return nil, csvError(err, fail)
	}
	cols := make([]string, len(first))
	for j := range cols {
		cols[j] = strconv.Itoa(j + 1)
		if ts.header {
			cols[j] = strings.TrimSpace(first[j])
		}
	}
	label, feats, err := ts.columns(cols)
	if err != nil {
		return nil, fail(1, "", "%v", err)
	}
	t := &table{}
	for _, j := range feats {
		t.names, t.nums = append(t.names, cols[j]), append(t.nums, j+1)
	}
	w := len(feats) + 1
	codes := map[string]int32{}
	add := func(line int, rec []string) error {
		if len(t.x)+w > MaxCells {
			return fail(line, "", "more than %d values (%d GiB as float64): sample the file first", MaxCells, MaxCells*8>>30)
		}
		for _, j := range feats {
			v, err := decimal.Parse(rec[j])
			if err != nil {
				return fail(line, cols[j], "%q is %v", rec[j], err)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fail(line, cols[j], "%q is not a finite number", rec[j])
			}
			t.x = append(t.x, v)
		}
		t.x = append(t.x, 0) // the intercept's slot
		lab := strings.TrimSpace(rec[label])
		if lab == "" {
			return fail(line, cols[label], "empty label")
		}
		c, ok := codes[lab]
		if !ok {
			// A copy: lab points into the record's line, which it would
			// keep alive.
			c = int32(len(t.classes))
			t.classes = append(t.classes, strings.Clone(lab))
			codes[t.classes[c]] = c
		}
		t.y = append(t.y, c)
		return nil
	}
	if !ts.header {
		if err := add(1, first); err != nil {
			return nil, err
		}
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(err, fail)
		}
		line, _ := cr.FieldPos(0)
		if err := add(line, rec); err != nil {
			return nil, err
		}
		if len(t.y) == 64 && size > 0 {
			// Reserve for the rows the file's size implies, at the
			// first rows' length, with a margin.
			per := max(cr.InputOffset()/64, 1)
			if n := int(min(size/per*9/8+64, MaxCells/int64(w)+1)); n > cap(t.y) {
				t.x, t.y = slices.Grow(t.x, n*w-len(t.x)), slices.Grow(t.y, n-len(t.y))
			}
		}
	}
	if len(t.y) == 0 {
		return nil, fail(0, "", "no data rows (only a header)")
	}
	return t, nil
}

// csvError turns an error of encoding/csv into a DataError at its line.
func csvError(err error, fail func(line int, col, format string, a ...any) error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return fail(pe.Line, "", "ragged row: its number of fields differs from the first row's")
		}
		return fail(pe.Line, "", "%v", pe.Err)
	}
	return fail(0, "", "%v", err)
}

// columns resolves the label and feature columns among cols.
func (ts tableSpec) columns(cols []string) (label int, feats []int, err error) {
	label = len(cols) - 1
	if ts.label != "" {
		if label, err = column(ts.label, cols); err != nil {
			return 0, nil, fmt.Errorf("label column: %w", err)
		}
	}
	if ts.features == "" {
		for j := range cols {
			if j != label {
				feats = append(feats, j)
			}
		}
	} else {
		for _, part := range strings.Split(ts.features, "+") {
			lo, hi, isRange := strings.Cut(part, "-")
			if j, err := column(part, cols); err == nil || !isRange {
				if err != nil {
					return 0, nil, fmt.Errorf("feature columns: %w", err)
				}
				feats = append(feats, j)
				continue
			}
			a, e1 := strconv.Atoi(lo)
			b, e2 := strconv.Atoi(hi)
			if e1 != nil || e2 != nil || a < 1 || b > len(cols) || a > b {
				return 0, nil, fmt.Errorf("feature columns: %q is neither a column nor a range N-M of columns 1 to %d", part, len(cols))
			}
			for j := a - 1; j < b; j++ {
				feats = append(feats, j)
			}
		}
	}
	if slices.Contains(feats, label) {
		return 0, nil, fmt.Errorf("the label column %s is also a feature column", cols[label])
	}
	if len(feats) == 0 {
		return 0, nil, errors.New("no feature columns")
	}
	slices.Sort(feats)
	if len(slices.Compact(slices.Clone(feats))) != len(feats) {
		return 0, nil, errors.New("a feature column is listed twice")
	}
	return label, feats, nil
}

// column finds a column by name, or by its 1-based number.
func column(name string, cols []string) (int, error) {
	if j := slices.Index(cols, name); j >= 0 {
		return j, nil
	}
	if n, err := strconv.Atoi(name); err == nil && n >= 1 && n <= len(cols) {
		return n - 1, nil
	}
	return 0, fmt.Errorf("no column %q (columns: %s)", name, strings.Join(cols, ", "))
}

package env

import (
	"bufio"
	"bytes"
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
	"unicode/utf8"

	"github.com/dpbandit/dpbandit/internal/decimal"
	"github.com/dpbandit/dpbandit/internal/regfile"
)

// MaxDataBytes bounds the size of a data file dpbandit reads, and for a
// gzip-compressed file the size of its decompressed content too: a run
// permutes the rows, so they are held in memory (as float64, MaxCells of
// them at most). A regular file above it is refused before it is read; a
// gzip stream that decompresses past it is refused when it does.
const MaxDataBytes = 2 << 30

// MaxLineBytes bounds one line of a data file (the header included):
// encoding/csv holds a whole line in memory, so a file without line
// breaks (/dev/zero, a binary file) is refused at this length instead of
// growing without end.
const MaxLineBytes = 1 << 20

// ErrNotUTF8 is a column name or a label that is not valid UTF-8 (a
// DataError wraps it): names and labels reach summary.json and plots.
var ErrNotUTF8 = errors.New("not valid UTF-8")

// MaxColumns bounds the columns of a data file: each feature is a
// coordinate of every action, once per class, and the linear policies
// keep matrices of the square of that dimension.
const MaxColumns = 10_000

// ErrTooLarge is a data file beyond MaxDataBytes, MaxLineBytes or
// MaxColumns (a DataError wraps it).
var ErrTooLarge = errors.New("data file above dpbandit's limits")

// ErrNotRegular is a data file that is not a regular file: a pipe, a
// device or a socket, which could block or never end. dpbandit reads a
// data file once, from start to end; save a stream to a file first.
var ErrNotRegular = regfile.ErrNotRegular

// ErrColumns is a table whose columns cannot be told apart or found: a
// name given to two columns, a header row that looks like data, or no
// feature column (a DataError wraps it).
var ErrColumns = errors.New("ambiguous or missing columns")

// DataError is a data file that cannot be used, with the line (1-based,
// 0 when it is about the whole file) and column where it fails.
type DataError struct {
	Path   string
	Line   int
	Column string
	Reason string
	// Err, if set, is the kind of failure (ErrTooLarge, ErrNotRegular).
	Err error
}

// Unwrap returns the kind of failure, if the error has one.
func (e *DataError) Unwrap() error { return e.Err }

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
	// headerSaid is true when header=yes was given: a first row of
	// numbers is then taken as the columns' names, not refused.
	headerSaid bool
	delim      rune
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

// readLimits are the bounds readTable enforces (MaxDataBytes and
// MaxLineBytes; smaller in tests).
type readLimits struct {
	bytes int64 // of the file, and of a gzip file's decompressed content
	line  int   // of one line
}

// documentedLimits are the bounds docs/cli.md states.
func documentedLimits() readLimits { return readLimits{bytes: MaxDataBytes, line: MaxLineBytes} }

// readTable reads a CSV file (gzip-compressed when its name ends in .gz)
// once, streaming it: one row at a time, the features kept as numbers.
// Every field of a feature column must be a finite number; every row has
// the first row's number of fields. open opens the file (os.Open, or an
// embedded file system's Open); only a regular file is read, and no more
// than lim allows.
func readTable(path string, open func(string) (fs.File, error), ts tableSpec, lim readLimits) (*table, error) {
	fail := func(line int, col, format string, a ...any) error {
		return &DataError{Path: path, Line: line, Column: col, Reason: fmt.Sprintf(format, a...)}
	}
	notRegular := func(kind string) error {
		return &DataError{Path: path, Err: ErrNotRegular, Reason: fmt.Sprintf("not a regular file but %s, which could block or never end; dpbandit reads a data file once, from a regular file: save the stream to one first", kind)}
	}
	f, err := open(path)
	var nr *regfile.NotRegularError
	switch {
	case errors.As(err, &nr) && nr.Kind == "a directory":
		return nil, fail(0, "", "is a directory")
	case errors.As(err, &nr):
		return nil, notRegular(nr.Kind)
	case err != nil:
		return nil, fail(0, "", "%v", errors.Unwrap(err))
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return nil, fail(0, "", "%v", err)
	case st.IsDir():
		return nil, fail(0, "", "is a directory")
	case !st.Mode().IsRegular():
		return nil, notRegular(regfile.Kind(st.Mode()))
	case st.Size() > lim.bytes:
		return nil, &DataError{Path: path, Err: ErrTooLarge, Reason: fmt.Sprintf("%s, above the %s dpbandit reads (a run permutes the rows, held in memory): sample it first", bytesText(st.Size()), bytesText(lim.bytes))}
	}
	// The file's own bytes are bounded too (it may grow while read), and
	// the lines of what is parsed: a bomb or a file without line breaks
	// fails at the bound, having held no more than a line.
	file := &boundedReader{r: f, left: lim.bytes, limit: lim.bytes, what: "the file"}
	var r io.Reader = bufio.NewReaderSize(file, 1<<16)
	size := int64(0) // the bytes to read, when known
	bounded := file
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(r)
		if err != nil {
			if file.err != nil {
				return nil, file.dataError(path)
			}
			return nil, fail(0, "", "not a gzip file: %v", err)
		}
		defer gz.Close()
		bounded = &boundedReader{r: gz, left: lim.bytes, limit: lim.bytes, what: "its decompressed content"}
		r = bounded
	} else {
		size = st.Size()
	}
	bounded.maxLine = lim.line
	// A UTF-8 byte-order mark (spreadsheets write one) is not part of
	// the first column's name.
	br := bufio.NewReaderSize(r, 1<<16)
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3)
	}
	t, err := parseTable(csv.NewReader(br), ts, size, fail)
	for _, b := range []*boundedReader{file, bounded} {
		if b.err != nil {
			return nil, b.dataError(path)
		}
	}
	return t, err
}

// boundedReader reads r up to left bytes, and lines up to maxLine bytes
// (0: unbounded); past either it fails, for good, with an error of kind
// ErrTooLarge.
type boundedReader struct {
	r       io.Reader
	left    int64 // the bytes still allowed
	limit   int64 // the bytes allowed in all
	maxLine int
	what    string // "the file", or "its decompressed content"
	line    int    // the bytes of the current line so far
	lines   int    // the line breaks so far
	err     error  // the bound it failed at
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	// One byte more than allowed, to tell a file at the bound from one
	// beyond it.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	if int64(n) > b.left {
		b.err = fmt.Errorf("%s exceeds %s", b.what, bytesText(b.limit))
		return 0, b.err
	}
	b.left -= int64(n)
	if b.maxLine > 0 {
		q := p[:n]
		for {
			i := bytes.IndexByte(q, '\n')
			if i < 0 {
				b.line += len(q)
				break
			}
			if b.line += i; b.line > b.maxLine {
				break
			}
			b.line, b.lines, q = 0, b.lines+1, q[i+1:]
		}
		if b.line > b.maxLine {
			b.err = fmt.Errorf("a line longer than %s", bytesText(int64(b.maxLine)))
			return 0, b.err
		}
	}
	return n, err
}

// dataError is the reader's failure as a DataError.
func (b *boundedReader) dataError(path string) error {
	line := 0
	if b.maxLine > 0 && b.line > b.maxLine {
		line = b.lines + 1
	}
	return &DataError{Path: path, Line: line, Err: ErrTooLarge, Reason: b.err.Error() + ", above what dpbandit reads (the limits are in docs/cli.md)"}
}

// bytesText writes a number of bytes in the largest binary unit that
// keeps it a whole number or above 1.
func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'g', 3, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'g', 3, 64) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
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
	if len(first) > MaxColumns {
		return nil, kind(ErrTooLarge, fail(1, "", "%d columns, above the %d dpbandit reads (every feature a coordinate of each action, for each class: select columns in the file first)", len(first), MaxColumns))
	}
	if len(first) < 2 {
		return nil, kind(ErrColumns, fail(1, "", "%v", oneColumn(first[0], cr.Comma)))
	}
	cols := make([]string, len(first))
	for j := range cols {
		cols[j] = strconv.Itoa(j + 1)
		if ts.header {
			cols[j] = strings.TrimSpace(first[j])
		}
	}
	if ts.header {
		if err := checkHeader(cols, ts); err != nil {
			k := ErrColumns
			if errors.Is(err, ErrNotUTF8) {
				k = ErrNotUTF8
			}
			return nil, kind(k, fail(1, "", "%v", err))
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
				return kind(err, fail(line, cols[j], "%q is %v", shorten(rec[j], 40), err))
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
		if !utf8.ValidString(lab) {
			return kind(ErrNotUTF8, fail(line, cols[label], "the label %q is not valid UTF-8: save the file as UTF-8", shorten(lab, 40)))
		}
		// A number is one class however it is written: 1, 1.0 and 1e0
		// alike.
		key := lab
		if v, err := decimal.Parse(lab); err == nil && !math.IsNaN(v) {
			key = strconv.FormatFloat(v, 'g', -1, 64)
		}
		c, ok := codes[key]
		if !ok {
			// A copy: lab and key point into the record's line, which
			// they would keep alive.
			c = int32(len(t.classes))
			t.classes = append(t.classes, strings.Clone(lab))
			codes[strings.Clone(key)] = c
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

// checkHeader refuses a header row whose names are not those of distinct
// columns: a name given twice (features=a would take the first a
// silently), or a row of numbers alone, which is data: read as a header,
// a headerless file's first row would be lost unseen. header=yes (said)
// accepts numbers as names.
func checkHeader(cols []string, ts tableSpec) error {
	// The label column may hold a word on every row, a headerless
	// file's first row included.
	label := len(cols) - 1
	if n, err := strconv.Atoi(ts.label); ts.label != "" && (err != nil || slices.Contains(cols, ts.label)) {
		label = -1 // a name: the row is read as names
	} else if ts.label != "" {
		label = n - 1
	}
	seen := make(map[string]int, len(cols))
	numbers := len(cols) > 1
	for j, c := range cols {
		if !utf8.ValidString(c) {
			return fmt.Errorf("%w: column %d's name %q: save the file as UTF-8", ErrNotUTF8, j+1, shorten(c, 40))
		}
		if i, dup := seen[c]; dup {
			return fmt.Errorf("columns %d and %d are both named %q: name each column once", i+1, j+1, c)
		}
		seen[c] = j
		if _, err := decimal.Parse(c); err != nil && j != label {
			numbers = false
		}
	}
	if numbers && !ts.headerSaid {
		return fmt.Errorf("the header row (%s) holds only numbers: it looks like a first row of data; give header=no if the file has no header row, or header=yes if these are the columns' names", shorten(strings.Join(cols, ","), 60))
	}
	return nil
}

// oneColumn explains a first row read as a single column: the file's
// delimiter is not comma's (the one read), and which of the usual others
// it holds, to give as delim=.
func oneColumn(row string, comma rune) error {
	for _, d := range []string{";", "\t", "|", "#", ":", " "} {
		if strings.Contains(row, d) && d != string(comma) {
			name := d
			if d == "\t" {
				name = "tab"
			}
			return fmt.Errorf("the first row is a single column (%q), delimited by %q: it holds %q, so the file may be delimited by it: give delim=%s", shorten(row, 40), comma, d, name)
		}
	}
	return fmt.Errorf("the first row is a single column (%q), delimited by %q: a table needs a label column and at least one feature column (delim=C gives another delimiter)", shorten(row, 40), comma)
}

// kind sets the kind of a DataError (its Err) and returns it.
func kind(k, err error) error {
	var de *DataError
	if errors.As(err, &de) {
		de.Err = k
	}
	return err
}

// shorten cuts s to at most n bytes (at a rune boundary), marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
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

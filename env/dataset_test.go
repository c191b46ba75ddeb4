package env

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/internal/decimal"
	"github.com/dpbandit/dpbandit/mechanism"
)

// The shipped data sets hold the rows and classes their documentation
// publishes (UCI; sklearn's descriptions for the class counts).
func TestShippedDatasets(t *testing.T) {
	want := map[string]struct {
		rows, features int
		counts         []int // per class in sorted order; nil: only the number of classes
		classes        int
	}{
		"iris":          {150, 4, []int{50, 50, 50}, 3},
		"wine":          {178, 13, []int{59, 71, 48}, 3},
		"breast-cancer": {569, 30, []int{357, 212}, 2}, // benign, malignant
		"digits":        {1797, 64, nil, 10},
		"letter":        {20000, 16, nil, 26},
	}
	shipped := Shipped()
	if len(shipped) != len(want) {
		t.Fatalf("%d shipped data sets, want %d", len(shipped), len(want))
	}
	for _, s := range shipped {
		w := want[s.Name]
		d, err := ParseDataset("dataset:"+s.Name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if d.Rows() != w.rows || len(d.Features) != w.features || d.Arms() != w.classes || s.Rows != w.rows {
			t.Errorf("%s: %d rows, %d features, %d classes; want %d, %d, %d", s.Name, d.Rows(), len(d.Features), d.Arms(), w.rows, w.features, w.classes)
		}
		if w.counts != nil && !slices.Equal(d.ClassCounts(), w.counts) {
			t.Errorf("%s: class counts %v, want %v", s.Name, d.ClassCounts(), w.counts)
		}
		if d.Clipped != 0 {
			t.Errorf("%s: %d values outside the declared ranges", s.Name, d.Clipped)
		}
		if s.Source == "" || !strings.Contains(s.Licence, "CC BY 4.0") {
			t.Errorf("%s: provenance %q, licence %q", s.Name, s.Source, s.Licence)
		}
	}
}

// Every action of the disjoint-arm encoding has norm at most 1, is zero
// outside its arm's block, and a pass plays every row exactly once.
func TestDatasetRounds(t *testing.T) {
	d, err := ParseDataset("dataset:wine", 0)
	if err != nil {
		t.Fatal(err)
	}
	k, w := d.Arms(), len(d.Features)+1
	r := d.NewRun(5, 2)
	seen := map[string]int{}
	for step := range 2 * d.Rows() {
		acts := r.Next()
		if len(acts) != k {
			t.Fatalf("%d actions, want %d", len(acts), k)
		}
		for a, act := range acts {
			if len(act) != d.Dim() {
				t.Fatalf("action of dimension %d, want %d", len(act), d.Dim())
			}
			n := 0.0
			for i, v := range act {
				if (i < a*w || i >= (a+1)*w) && v != 0 {
					t.Fatalf("step %d: action %d has %v outside its block at %d", step, a, v, i)
				}
				n += v * v
			}
			if n > 1+1e-12 {
				t.Fatalf("step %d: ||a_%d||^2 = %v > 1", step, a, n)
			}
		}
		row := acts[0][:w]
		seen[fmt.Sprint(row)]++
		ones := 0
		for a := range k {
			if r.Reward(a) == 1 {
				ones++
				if r.Value(a) != 1 {
					t.Fatalf("rewarded arm %d has mean %v", a, r.Value(a))
				}
			}
		}
		if ones != 1 {
			t.Fatalf("step %d: %d arms rewarded, want 1", step, ones)
		}
		if step == d.Rows()-1 {
			if len(seen) != d.Rows() {
				t.Fatalf("the first pass played %d distinct rows of %d", len(seen), d.Rows())
			}
		}
	}
	for _, n := range seen {
		if n != 2 {
			t.Fatalf("two passes played a row %d times", n)
		}
	}
	// The same (seed, run) gives the same order, another run another.
	a, b, c := d.NewRun(5, 2), d.NewRun(5, 2), d.NewRun(5, 3)
	same, other := true, true
	for range 20 {
		x, y, z := a.Next()[0], b.Next()[0], c.Next()[0]
		same = same && slices.Equal(x, y)
		other = other && slices.Equal(x, z)
	}
	if !same || other {
		t.Fatalf("same run equal: %v (want true), other run equal: %v (want false)", same, other)
	}
}

// With flip = p, the rewarded arm is the row's class with probability
// 1 - p: the frequency of flipped steps over n steps lies within 4
// standard deviations sqrt(p (1 - p) / n) of p.
func TestDatasetFlip(t *testing.T) {
	const p, n = 0.2, 20000
	d, err := ParseDataset("dataset:iris,flip=0.2", 0)
	if err != nil {
		t.Fatal(err)
	}
	r := d.NewRun(1, 0)
	flipped := 0
	for range n {
		r.Next()
		for a := range d.Arms() {
			if r.Value(a) == 1-p && r.Reward(a) == 0 {
				flipped++
			}
		}
	}
	if f, sd := float64(flipped)/n, math.Sqrt(p*(1-p)/n); math.Abs(f-p) > 4*sd {
		t.Fatalf("flipped %v of steps, want %v +- %v", f, p, 4*sd)
	}
	// The hindsight policy, wrong on a fraction h of the rows, loses
	// with flips p + h (1 - 2p): a flip turns a right answer into a
	// loss and a wrong one into a reward.
	plain, err := ParseDataset("dataset:iris", 0)
	if err != nil {
		t.Fatal(err)
	}
	h, err := plain.HindsightLoss()
	if err != nil {
		t.Fatal(err)
	}
	if hf, err := d.HindsightLoss(); err != nil || math.Abs(hf-(p+h*(1-2*p))) > 1e-12 {
		t.Fatalf("hindsight loss with flip = %v: %v (%v), want %v", p, hf, err, p+h*(1-2*p))
	}
}

// tempWriter returns a function that writes a file of a test's temporary
// directory and returns its path.
func tempWriter(t *testing.T) func(name, body string) string {
	dir := t.TempDir()
	return func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// Every bad input gives one DataError (or spec error) naming the problem,
// with its line where it has one.
func TestDatasetBadInput(t *testing.T) {
	write := tempWriter(t)
	dir := filepath.Dir(write("probe", ""))
	good := "a,b,y\n1,2,x\n3,4,z\n"
	big := filepath.Join(dir, "big.csv")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(10 << 30); err != nil { // sparse: no disk used
		t.Skip("cannot make a sparse file:", err)
	}
	f.Close()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(good))
	zw.Close()
	for _, c := range []struct {
		name, spec string
		line       int    // the DataError's line, -1 for a spec error
		want       string // in the message
	}{
		{"missing file", "csv:" + filepath.Join(dir, "nope.csv") + ",lo=0,hi=1", 0, "no such file"},
		{"directory", "csv:" + dir + ",lo=0,hi=1", 0, "directory"},
		{"ragged row", "csv:" + write("ragged.csv", "a,b,y\n1,2,x\n3,z\n") + ",lo=0,hi=1", 3, "ragged"},
		{"non-numeric", "csv:" + write("text.csv", "a,b,y\n1,2,x\n3,four,z\n") + ",lo=0,hi=9", 3, "not a decimal number"},
		{"NaN", "csv:" + write("nan.csv", "a,b,y\n1,NaN,x\n3,4,z\n") + ",lo=0,hi=9", 2, "not a finite number"},
		{"Inf", "csv:" + write("inf.csv", "a,b,y\n1,2,x\n3,-Inf,z\n") + ",lo=0,hi=9", 3, "not a finite number"},
		{"underscore", "csv:" + write("under.csv", "a,b,y\n1,2,x\n1_000.5,4,z\n") + ",lo=0,hi=9", 3, "not a decimal number"},
		{"hex", "csv:" + write("hex.csv", "a,b,y\n0x1p-2,2,x\n3,4,z\n") + ",lo=0,hi=9", 2, "not a decimal number"},
		{"unknown label", "csv:" + write("good.csv", good) + ",lo=0,hi=9,label=class", 1, `no column "class"`},
		{"single class", "csv:" + write("one.csv", "a,y\n1,x\n2,x\n") + ",lo=0,hi=9", 0, "single class"},
		{"empty file", "csv:" + write("empty.csv", "") + ",lo=0,hi=9", 0, "empty"},
		{"header only", "csv:" + write("head.csv", "a,b,y\n") + ",lo=0,hi=9", 0, "no data rows"},
		{"10 GiB file", "csv:" + big + ",lo=0,hi=1", 0, "10 GiB"},
		{"not gzip", "csv:" + write("plain.csv.gz", good) + ",lo=0,hi=9", 0, "gzip"},
		{"no range", "csv:" + write("good.csv", good), -1, "lo=L,hi=H"},
		{"empty range", "csv:" + write("good.csv", good) + ",lo=1,hi=1", -1, "lo=L,hi=H"},
		{"label is a feature", "csv:" + write("good.csv", good) + ",lo=0,hi=9,features=1-3", 1, "also a feature"},
		{"bad range", "csv:" + write("good.csv", good) + ",lo=0,hi=9,features=2-7", 1, "range"},
		{"range missing for a feature", "csv:" + write("good.csv", good) + ",ranges=a:0:4", -1, `no declared range for feature "b"`},
		{"range of no feature", "csv:" + write("good.csv", good) + ",lo=0,hi=9,ranges=c:0:4", -1, `ranges: "c" is not a feature column`},
		{"range of the label", "csv:" + write("good.csv", good) + ",lo=0,hi=9,ranges=y:0:4", -1, `ranges: "y" is not a feature column`},
		{"range malformed", "csv:" + write("good.csv", good) + ",lo=0,hi=9,ranges=a:4", -1, "COLUMN:LO:HI"},
		{"range empty", "csv:" + write("good.csv", good) + ",lo=0,hi=9,ranges=a:4:4", -1, "COLUMN:LO:HI"},
		{"range infinite", "csv:" + write("good.csv", good) + ",lo=0,hi=9,ranges=a:0:Inf", -1, "COLUMN:LO:HI"},
		{"range twice", "csv:" + write("good.csv", good) + ",lo=0,hi=9,ranges=a:0:1+1:0:2", -1, "twice"},
		{"unknown shipped", "dataset:mnist", -1, "iris"},
		{"flip too large", "dataset:iris,flip=0.5", -1, "flip"},
		{"unknown key", "dataset:iris,seed=3", -1, "unknown key"},
	} {
		_, err := ParseDataset(c.spec, 0)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %q, want one line with %q", c.name, err, c.want)
		}
		var de *DataError
		if isData := errors.As(err, &de); isData != (c.line >= 0) || isData && de.Line != c.line {
			t.Errorf("%s: %#v, want a DataError at line %d", c.name, err, c.line)
		}
	}
	// A gzip-compressed file, a header-less one with a numbered label and
	// a tab delimiter, and out-of-range values clipped and counted.
	if _, err := ParseDataset("csv:"+write("good.csv.gz", gz.String())+",lo=0,hi=9", 0); err != nil {
		t.Error(err)
	}
	d, err := ParseDataset("csv:"+write("tab.tsv", "x\t1\t5\ny\t2\t-3\n")+",lo=0,hi=4,header=no,delim=tab,label=1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Rows() != 2 || d.Arms() != 2 || len(d.Features) != 2 || d.Clipped != 2 {
		t.Fatalf("tab file: %d rows, %d arms, %d features, %d clipped; want 2, 2, 2, 2", d.Rows(), d.Arms(), len(d.Features), d.Clipped)
	}
	// Per-feature ranges (by name or number, negative bounds), the
	// others at lo/hi; or every feature by its own range without lo/hi.
	d, err = ParseDataset("csv:"+write("ranges.csv", "a,b,c,y\n-2,10,0.5,x\n2,30,9,z\n")+",lo=0,hi=1,ranges=a:-2:2+2:10:20", 0)
	if err != nil {
		t.Fatal(err)
	}
	s3 := 1 / math.Sqrt(4)
	if want := []float64{-s3, -s3, 0, s3, s3, s3, s3, s3}; !slices.Equal(d.x, want) || d.Clipped != 2 ||
		!slices.Equal(d.Lo, []float64{-2, 10, 0}) || !slices.Equal(d.Hi, []float64{2, 20, 1}) {
		t.Fatalf("ranges: x %v clipped %d lo %v hi %v, want x %v and 2 clipped", d.x, d.Clipped, d.Lo, d.Hi, want)
	}
	if _, err := ParseDataset("csv:"+write("ranges.csv", "a,b,y\n-2,10,x\n2,30,z\n")+",ranges=a:-2:2+b:10:30", 0); err != nil {
		t.Fatal(err)
	}
	// Numeric labels sort as numbers.
	d, err = ParseDataset("csv:"+write("num.csv", "a,y\n1,10\n2,9\n3,100\n")+",lo=0,hi=4", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Classes, []string{"9", "10", "100"}) {
		t.Fatalf("classes %v, want [9 10 100]", d.Classes)
	}
	// A UTF-8 byte-order mark before the header is not part of the
	// first column's name (found by a stranger's trial); labels of each
	// row map to their sorted classes.
	d, err = ParseDataset("csv:"+write("bom.csv", "\ufeffa,b,label\n0.5,1,z\n1,0,x\n0,0,z\n")+",lo=0,hi=1,features=a+b", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Features, []string{"a", "b"}) || !slices.Equal(d.Classes, []string{"x", "z"}) || !slices.Equal(d.y, []int{1, 0, 1}) {
		t.Fatalf("BOM file: features %q, classes %q, rows' classes %v", d.Features, d.Classes, d.y)
	}
}

// BenchmarkLoadLetter reads, checks and scales the 20,000 rows of the
// letter data set (gzip-compressed CSV).
func BenchmarkLoadLetter(b *testing.B) {
	for b.Loop() {
		if _, err := ParseDataset("dataset:letter", 0); err != nil {
			b.Fatal(err)
		}
	}
}

// extremeCSV writes a table of rows whose d features all sit at lo or
// hi, or beyond them (clipped onto them), in k classes.
func extremeCSV(t testing.TB, d, k int, lo, hi string) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(d), uint64(k)))
	var b strings.Builder
	for j := range d {
		fmt.Fprintf(&b, "x%d,", j)
	}
	b.WriteString("y\n")
	ends := []string{lo, hi, lo + "1", hi + "1"} // the last two clipped (lo1 < lo when lo is negative)
	if !strings.HasPrefix(lo, "-") {
		ends[2] = "-" + hi
	}
	for i := range 200 {
		for range d {
			b.WriteString(ends[rng.IntN(len(ends))] + ",")
		}
		fmt.Fprintf(&b, "%d\n", i%k)
	}
	p := filepath.Join(t.TempDir(), fmt.Sprintf("extreme-%d-%d.csv", d, k))
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every action of a data set lies in the unit ball exactly, as the
// policies check it (mechanism.CheckActions), even when every feature of
// a row sits at an end of its range, where the norm is 1 in exact
// arithmetic and rounding made it 1.0000000000000002 (issue #50).
func TestDatasetActionsInUnitBall(t *testing.T) {
	for _, d := range []int{2, 5, 11, 17} {
		for _, k := range []int{2, 3, 7} {
			for _, r := range [][2]string{{"0", "1"}, {"-1.7", "3.1"}, {"0.1", "0.3"}} {
				ds, err := ParseDataset("csv:"+extremeCSV(t, d, k, r[0], r[1])+",lo="+r[0]+",hi="+r[1], 0)
				if err != nil {
					t.Fatal(err)
				}
				run := ds.NewRun(1, 0)
				for step := range ds.Rows() {
					if err := mechanism.CheckActions(run.Next(), ds.Dim()); err != nil {
						t.Fatalf("d=%d, K=%d, range %v, step %d: %v", d, k, r, step, err)
					}
				}
			}
		}
	}
}

// A CSV that would be read wrongly is refused (issue #50): a column name
// given twice (features=a took the first silently), a first row of
// numbers read as the header (a headerless file lost its first row), and
// a range of infinite width (every feature scaled to 0). header=yes said
// takes numbers as names; a wide but finite range near MaxFloat64 scales
// without overflow.
func TestCSVReadWrongly(t *testing.T) {
	write := tempWriter(t)
	for _, c := range []struct {
		name, spec string
		kind       error
	}{
		{"duplicate column", "csv:" + write("dup.csv", "a,a,c,y\n1,2,3,x\n2,3,4,z\n") + ",lo=0,hi=9,features=a", ErrColumns},
		{"duplicate, unused", "csv:" + write("dup.csv", "a,a,c,y\n1,2,3,x\n2,3,4,z\n") + ",lo=0,hi=9,features=c", ErrColumns},
		{"headerless", "csv:" + write("nohead.csv", "1,2,x\n3,4,z\n5,6,x\n") + ",lo=0,hi=9", ErrColumns},
		{"headerless, label first", "csv:" + write("nohead1.csv", "x,5,7\nz,3,4\n") + ",lo=0,hi=9,label=1", ErrColumns},
		{"infinite width", "csv:" + write("ok.csv", "a,y\n1,x\n2,z\n") + ",lo=-1e308,hi=1e308", ErrRange},
		{"infinite width, ranges", "csv:" + write("ok.csv", "a,y\n1,x\n2,z\n") + ",ranges=a:-1e308:1e308", ErrRange},
	} {
		if _, err := ParseDataset(c.spec, 0); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
	d, err := ParseDataset("csv:"+write("numnames.csv", "1,2,y\n0,1,x\n1,0,z\n")+",lo=0,hi=1,header=yes", 0)
	if err != nil || d.Rows() != 2 || !slices.Equal(d.Features, []string{"1", "2"}) {
		t.Fatalf("numeric names with header=yes: %v", err)
	}
	d, err = ParseDataset("csv:"+write("huge.csv", "a,y\n1e308,x\n1.2e308,z\n1.5e308,x\n")+",lo=1e308,hi=1.5e308", 0)
	if err != nil {
		t.Fatal(err)
	}
	s := 1 / math.Sqrt(2)
	if got := []float64{d.Context(0)[0], d.Context(1)[0], d.Context(2)[0]}; got[0] != -s || got[2] != s || !(got[1] > -s && got[1] < s) {
		t.Fatalf("a range near MaxFloat64 scaled to %v, want -%v < ... < %v", got, s, s)
	}
}

// The rough edges of CSV reading (issue #50), each with its own kind of
// error or its documented reading: a file delimited by ; or # is refused
// as a single column (with the delimiter to give), and reads with
// delim=; a path with a comma is read; 1e309 is an overflow; an empty
// option is refused (features= meant every column); a feature with
// spaces around it reads as the number; labels 1 and 1.0 are one class;
// a name or label not in UTF-8 is refused; a file wider than MaxColumns
// is refused before its rows are read.
func TestCSVRoughEdges(t *testing.T) {
	write := tempWriter(t)
	good := write("a,b.csv", "a,b,y\n0, 0.5 ,1\n1,1,1.0\n0.5,0,2\n")
	wide := write("wide.csv", strings.Repeat("c,", MaxColumns)+"y\n")
	for _, c := range []struct {
		name, spec string
		kind       error
	}{
		{"semicolons", "csv:" + write("semi.csv", "a;b;y\n1;2;x\n3;4;z\n") + ",lo=0,hi=9", ErrColumns},
		{"hashes", "csv:" + write("hash.csv", "a#b#y\n1#2#x\n3#4#z\n") + ",lo=0,hi=9", ErrColumns},
		{"overflow", "csv:" + write("over.csv", "a,y\n1,x\n1e309,z\n") + ",lo=0,hi=9", decimal.ErrOverflow},
		{"empty features", "csv:" + good + ",lo=0,hi=1,features=", ErrEmptyOption},
		{"empty label", "csv:" + good + ",lo=0,hi=1,label=", ErrEmptyOption},
		{"latin-1 header", "csv:" + write("latin.csv", "caf\xe9,y\n1,x\n2,z\n") + ",lo=0,hi=9", ErrNotUTF8},
		{"latin-1 label", "csv:" + write("latinl.csv", "a,y\n1,x\n2,caf\xe9\n") + ",lo=0,hi=9", ErrNotUTF8},
		{"too many columns", "csv:" + wide + ",lo=0,hi=1", ErrTooLarge},
	} {
		if _, err := ParseDataset(c.spec, 0); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
	if _, err := ParseDataset("csv:"+write("semi.csv", "a;b;y\n1;2;x\n3;4;z\n")+",lo=0,hi=9,delim=;", 0); err != nil {
		t.Errorf("delim=;: %v", err)
	}
	d, err := ParseDataset("csv:"+good+",lo=0,hi=1", 0)
	if err != nil {
		t.Fatalf("a path with a comma: %v", err)
	}
	if !slices.Equal(d.Classes, []string{"1", "2"}) || !slices.Equal(d.y, []int{0, 0, 1}) {
		t.Errorf("labels 1, 1.0, 2: classes %q, rows' classes %v; want [1 2], [0 0 1]", d.Classes, d.y)
	}
	if s := 1 / math.Sqrt(3); d.Context(0)[1] != 0 || d.Context(0)[0] != -s {
		t.Errorf("\" 0.5 \" in [0, 1] scaled to %v, want 0", d.Context(0)[1])
	}
}

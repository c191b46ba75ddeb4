package env

import (
	"cmp"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dpbandit/dpbandit/internal/linalg"
	"github.com/dpbandit/dpbandit/internal/regfile"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
)

// Dataset is a classification data set turned into a contextual bandit,
// the supervised-to-bandit reduction of Bietti, Agarwal and Langford ("A
// Contextual Bandit Bake-off", JMLR 2021, Section 4): each row is a round,
// one arm per class, reward 1 for the row's class and 0 for the others
// (with Flip > 0, each step's rewards are flipped together with
// probability Flip, so the means are 1 - Flip and Flip).
//
// The decision set is the disjoint-arm encoding: action k is e_k (x) x~,
// of dimension K (d + 1), where x~ is the row's features mapped into
// [-1, 1] by their declared ranges, followed by a constant 1 (an
// intercept), the whole divided by sqrt(d + 1). So ||a|| <= 1 for every
// row, which the privacy proofs need, by a rule fixed before the data is
// seen: values outside their declared range are clipped to it (Clipped
// counts them). In 001's model contexts are public and only rewards
// private (Remark 4); a data-dependent scaling would matter for
// algorithms that also protect contexts (private-lasso).
//
// Each run plays the rows in a fresh random permutation drawn from (seed,
// run), the same for every policy of the run; when the horizon exceeds
// the number of rows, the next pass is a new permutation. Passes reuse the
// rows, so the rewards are no longer independent across rounds as the
// regret bounds assume; a pass's rows are an i.i.d.-like sample only of
// the data set's empirical distribution.
type Dataset struct {
	// Name is the data set's name (dataset:NAME) or its file (csv:PATH).
	Name string
	// Classes names the arms: arm k is the class Classes[k] (sorted, as
	// numbers when they all are).
	Classes []string
	// Features names the feature columns.
	Features []string
	// Lo and Hi are the declared range of each feature.
	Lo, Hi []float64
	// Flip is the probability that a step's rewards are flipped.
	Flip float64
	// Clipped counts the feature values outside their declared range.
	Clipped int
	x       []float64 // rows x (d + 1), scaled (see above)
	y       []int     // each row's class
	spec    string
}

// Bytes returns the memory of the data set's table as allocated (its
// capacity, not only its length): its scaled rows and their classes.
func (d *Dataset) Bytes() int64 { return 8*int64(cap(d.x)) + 8*int64(cap(d.y)) }

// Rows returns the number of rows.
func (d *Dataset) Rows() int { return len(d.y) }

// Arms returns K, the number of classes.
func (d *Dataset) Arms() int { return len(d.Classes) }

// Dim returns K (d + 1), the dimension of the disjoint-arm encoding.
func (d *Dataset) Dim() int { return d.Arms() * d.width() }

// width is d + 1, the length of a scaled row.
func (d *Dataset) width() int { return len(d.Features) + 1 }

// Bounds returns [0, 1].
func (d *Dataset) Bounds() mechanism.Bounds { return mechanism.Unit }

// Support returns nil: a data set has no theta*.
func (d *Dataset) Support() []int { return nil }

// String returns the canonical spec.
func (d *Dataset) String() string { return d.spec }

// Label returns row i's class.
func (d *Dataset) Label(i int) int { return d.y[i] }

// Context returns row i's scaled features x~ (d + 1 numbers, the last
// the intercept), norm at most 1.
func (d *Dataset) Context(i int) []float64 {
	w := d.width()
	return d.x[i*w : (i+1)*w : (i+1)*w]
}

// ClassCounts returns the number of rows of each class.
func (d *Dataset) ClassCounts() []int {
	n := make([]int, d.Arms())
	for _, y := range d.y {
		n[y]++
	}
	return n
}

// NewRun returns run run's sequence of rounds.
func (d *Dataset) NewRun(seed, run uint64) Rounds {
	k, w := d.Arms(), d.width()
	buf := make([]float64, k*k*w)
	acts := make([][]float64, k)
	for a := range acts {
		acts[a] = buf[a*k*w : (a+1)*k*w : (a+1)*k*w]
	}
	return &dataRun{d: d, rng: noise.Stream(seed, run, tagInstance+3), acts: acts, pos: len(d.y), perm: make([]int32, len(d.y))}
}

// dataRun plays a data set's rows in random order, pass after pass.
type dataRun struct {
	d       *Dataset
	rng     *rand.Rand
	perm    []int32
	pos     int
	acts    [][]float64
	y       int
	flipped bool
}

// Next serves the next row's decision set.
func (r *dataRun) Next() [][]float64 {
	d := r.d
	if r.pos == len(r.perm) {
		for i := range r.perm {
			r.perm[i] = int32(i)
		}
		r.rng.Shuffle(len(r.perm), func(i, j int) { r.perm[i], r.perm[j] = r.perm[j], r.perm[i] })
		r.pos = 0
	}
	i := int(r.perm[r.pos])
	r.pos++
	w := d.width()
	x := d.Context(i)
	for a, act := range r.acts {
		copy(act[a*w:(a+1)*w], x)
	}
	r.y = d.y[i]
	r.flipped = d.Flip > 0 && r.rng.Float64() < d.Flip
	return r.acts
}

// Value is the mean reward of arm k: 1 - Flip for the row's class, Flip
// for the others.
func (r *dataRun) Value(k int) float64 {
	if k == r.y {
		return 1 - r.d.Flip
	}
	return r.d.Flip
}

// Reward is 1 for the row's class and 0 for the others, both flipped
// when the step's flip came up.
func (r *dataRun) Reward(k int) float64 {
	if (k == r.y) != r.flipped {
		return 1
	}
	return 0
}

// newDataset scales a table by the declared ranges, in place, and
// numbers its classes in order (numbers as numbers).
func newDataset(name string, t *table, lo, hi []float64, flip float64, spec string) (*Dataset, error) {
	classes := slices.Clone(t.classes)
	slices.SortFunc(classes, compareLabels(classes))
	if len(classes) < 2 {
		return nil, &DataError{Path: name, Reason: fmt.Sprintf("a single class (%q): a bandit needs at least 2", classes[0])}
	}
	if len(classes) > maxClasses {
		return nil, &DataError{Path: name, Reason: fmt.Sprintf("%d classes, above the %d this reduction takes (one arm each)", len(classes), maxClasses)}
	}
	d := &Dataset{Name: name, Classes: classes, Features: t.names, Lo: lo, Hi: hi, Flip: flip, spec: spec}
	n, f := len(t.y), len(t.names)
	if int64(len(classes))*int64(len(classes)*(f+1)) > MaxCells {
		return nil, &DataError{Path: name, Reason: fmt.Sprintf("%d classes of %d features make decision sets above %d coordinates", len(classes), f, MaxCells)}
	}
	rank := make([]int, len(t.classes)) // a label's code -> its class
	for k, c := range classes {
		rank[slices.Index(t.classes, c)] = k
	}
	d.x, d.y = t.x, make([]int, n)
	s := 1 / math.Sqrt(float64(f+1))
	act := make([]float64, len(classes)*(f+1)) // an action, for intoBall
	for i := range n {
		row := d.x[i*(f+1) : (i+1)*(f+1)]
		for j, v := range row[:f] {
			if v < lo[j] || v > hi[j] {
				d.Clipped++
			}
			v = min(max(v, lo[j]), hi[j])
			// (v - lo) - (hi - v), not 2v - lo - hi: both terms lie in
			// [0, hi - lo], which is finite, where 2v overflows for v
			// above MaxFloat64 / 2.
			row[j] = s * ((v - lo[j]) - (hi[j] - v)) / (hi[j] - lo[j])
		}
		row[f] = s
		if !intoBall(row, act) {
			return nil, &DataError{Path: name, Line: i + 1, Reason: "a row scaled to a non-finite value"} // unreachable: v - lo and hi - v lie in [0, hi - lo], finite
		}
		d.y[i] = rank[t.y[i]]
	}
	return d, nil
}

// intoBall scales a scaled row so that each of the K actions it becomes
// (the row in block a of act, zeros elsewhere) lies in the unit ball
// exactly, as the policies compute the norm (mechanism.InUnitBall): a
// row whose features all sit at their range's ends has norm 1 in exact
// arithmetic, which rounding can leave an ulp above 1, and the sum's
// rounding depends on the block's place in the action (linalg.Dot sums
// long vectors in four interleaved parts). The row shrinks by an ulp at
// a time until every block passes; rows already inside are unchanged,
// to the bit. act has K times the row's length, and is left zero. It
// reports false, leaving the row, if the row is not finite (no scaling
// would bring it inside).
func intoBall(row, act []float64) bool {
	if nn := linalg.SquaredNorm(row); math.IsNaN(nn) || math.IsInf(nn, 0) {
		return false
	}
	mechanism.IntoUnitBall(row)
	w := len(row)
	for a, inside := 0, 0; inside < len(act)/w; a = (a + 1) % (len(act) / w) {
		block := act[a*w : (a+1)*w]
		copy(block, row)
		if nn := linalg.DotWithin(act, act, a*w, (a+1)*w); nn <= 1 {
			inside++
		} else {
			for j := range row {
				row[j] *= 1 - 0x1p-52
			}
			inside = 0
		}
		clear(block)
	}
	return true
}

// maxClasses bounds the number of classes (arms).
const maxClasses = 1000

// compareLabels orders labels as numbers when they all are, else as
// strings.
func compareLabels(ls []string) func(a, b string) int {
	for _, l := range ls {
		if _, err := strconv.ParseFloat(l, 64); err != nil {
			return strings.Compare
		}
	}
	return func(a, b string) int {
		x, _ := strconv.ParseFloat(a, 64)
		y, _ := strconv.ParseFloat(b, 64)
		return cmp.Or(cmp.Compare(x, y), strings.Compare(a, b))
	}
}

//go:embed datasets/*.csv.gz datasets/datasets.json
var shipped embed.FS

// ShippedDataset describes a data set shipped with dpbandit
// (env/datasets, built from Debian packages by convert.py there).
type ShippedDataset struct {
	Name     string      `json:"name"`
	File     string      `json:"file"`
	Rows     int         `json:"rows"`
	Features int         `json:"features"`
	Classes  []string    `json:"classes"`
	Bounds   [][]float64 `json:"bounds"`
	Source   string      `json:"source"`
	Licence  string      `json:"licence"`
}

// Shipped lists the data sets shipped with dpbandit.
func Shipped() []ShippedDataset {
	b, err := shipped.ReadFile("datasets/datasets.json")
	if err != nil {
		panic(err) // embedded at build time
	}
	var out []ShippedDataset
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// ParseDataset builds a data set environment from its spec:
//
//	dataset:NAME[,flip=P]
//	csv:PATH,lo=L,hi=H[,ranges=COLUMN:LO:HI+...][,label=COLUMN][,features=LIST][,header=yes|no][,delim=C][,flip=P]
//
// NAME is a shipped data set (Shipped: iris, wine, breast-cancer, digits,
// letter), with the declared feature ranges of its datasets.json. PATH is
// a CSV file (gzip-compressed if it ends in .gz), read as a stream: the
// label column (a name from the header, or a 1-based number; default the
// last column), the feature columns (LIST: names, numbers or ranges N-M
// joined by +; default every other column), a header row (default yes),
// the delimiter (a character, or "tab"; default ","). Every feature must
// be a finite number; L and H declare the range of every feature that
// ranges (a list joined by +, each COLUMN a name or a 1-based number)
// does not; every feature needs one (values outside are clipped;
// required, since the scaling must not come from the data). P in [0, 0.5) flips each step's rewards with that
// probability (default 0). The seed is unused: the data are the instance.
func ParseDataset(spec string, _ uint64) (*Dataset, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	first, opts, _ := strings.Cut(rest, ",")
	if kind == "csv" {
		first, opts = csvPath(rest)
	}
	if first == "" {
		return nil, errorf("spec %q: name the data set (%s:NAME)", spec, kind)
	}
	switch kind {
	case "dataset":
		kv, err := keys(spec, opts, "flip")
		if err != nil {
			return nil, err
		}
		flip, err := flipKey(spec, kv)
		if err != nil {
			return nil, err
		}
		return loadShipped(first, flip, spec)
	case "csv":
		return parseCSV(spec, first, opts)
	}
	return nil, errorf("unknown data set kind %q", kind)
}

// flipKey reads flip=P.
func flipKey(spec string, kv map[string]string) (float64, error) {
	v, ok := kv["flip"]
	if !ok {
		return 0, nil
	}
	p, err := strconv.ParseFloat(v, 64)
	if err != nil || !(p >= 0 && p < 0.5) {
		return 0, errorf("spec %q: flip=%q must lie in [0, 0.5)", spec, v)
	}
	return p, nil
}

// loadShipped reads a shipped data set.
func loadShipped(name string, flip float64, spec string) (*Dataset, error) {
	var names []string
	for _, s := range Shipped() {
		names = append(names, s.Name)
		if s.Name != name {
			continue
		}
		t, err := readTable("datasets/"+s.File, shipped.Open, tableSpec{label: "class", header: true}, documentedLimits())
		if err != nil {
			return nil, err
		}
		lo, hi := make([]float64, len(s.Bounds)), make([]float64, len(s.Bounds))
		for j, b := range s.Bounds {
			lo[j], hi[j] = b[0], b[1]
		}
		return newDataset(name, t, lo, hi, flip, spec)
	}
	return nil, errorf("no shipped data set %q (shipped: %s)", name, strings.Join(names, ", "))
}

// csvPath splits a csv spec's rest into the path and the options: the
// path runs to the first comma followed by a key=value, so that a path
// with commas (a,b.csv) needs no quoting; a part after a comma that holds
// "=" starts the options.
func csvPath(rest string) (path, opts string) {
	parts := strings.Split(rest, ",")
	n := 1
	for n < len(parts) && parts[n] != "" && !strings.Contains(parts[n], "=") {
		n++
	}
	return strings.Join(parts[:n], ","), strings.Join(parts[n:], ",")
}

// csvKeys returns the options of a csv spec.
func csvKeys() []string {
	return []string{"label", "features", "header", "delim", "lo", "hi", "ranges", "flip"}
}

// parseCSV reads a user's CSV file (see ParseDataset).
func parseCSV(spec, path, opts string) (*Dataset, error) {
	kv, err := keys(spec, opts, csvKeys()...)
	if err != nil {
		return nil, err
	}
	for _, k := range csvKeys() {
		if v, ok := kv[k]; ok && v == "" {
			return nil, errorf("spec %q: %s= is empty (%w): give it a value or leave the key out", spec, k, ErrEmptyOption)
		}
	}
	ts := tableSpec{label: kv["label"], features: kv["features"], header: true}
	switch kv["header"] {
	case "":
	case "yes":
		ts.headerSaid = true
	case "no":
		ts.header = false
	default:
		return nil, errorf("spec %q: header must be yes or no, got %q", spec, kv["header"])
	}
	switch d := kv["delim"]; {
	case d == "":
	case d == "tab":
		ts.delim = '\t'
	case len([]rune(d)) == 1 && d != "\"" && d != "\n" && d != "\r":
		ts.delim = []rune(d)[0]
	default:
		return nil, errorf("spec %q: delim must be one character or tab, got %q", spec, d)
	}
	flip, err := flipKey(spec, kv)
	if err != nil {
		return nil, err
	}
	ranges, err := parseRanges(spec, kv["ranges"])
	if err != nil {
		return nil, err
	}
	_, hasLo := kv["lo"]
	_, hasHi := kv["hi"]
	lo, eLo := strconv.ParseFloat(kv["lo"], 64)
	hi, eHi := strconv.ParseFloat(kv["hi"], 64)
	if (hasLo || hasHi || len(ranges) == 0) && !finiteRange(lo, hi, eLo, eHi) {
		return nil, errorf("spec %q: %w: declare the features' range with lo=L,hi=H, L < H and H - L finite, or each feature's with ranges=COLUMN:LO:HI+... (values outside are clipped; the scaling that keeps ||a|| <= 1 must not come from the data)", spec, ErrRange)
	}
	t, err := readTable(path, openData, ts, documentedLimits())
	if err != nil {
		return nil, err
	}
	los, his := make([]float64, len(t.names)), make([]float64, len(t.names))
	seen := make([]bool, len(t.names))
	for _, r := range ranges {
		j := slices.Index(t.names, r.column)
		if j < 0 {
			n, _ := strconv.Atoi(r.column)
			j = slices.Index(t.nums, n)
		}
		switch {
		case j < 0:
			return nil, errorf("spec %q: ranges: %q is not a feature column (features: %s)", spec, r.column, strings.Join(t.names, ", "))
		case seen[j]:
			return nil, errorf("spec %q: ranges: feature %q is given a range twice", spec, t.names[j])
		}
		seen[j], los[j], his[j] = true, r.lo, r.hi
	}
	for j := range los {
		if seen[j] {
			continue
		}
		if !hasLo {
			return nil, errorf("spec %q: no declared range for feature %q: give it in ranges=COLUMN:LO:HI, or every other feature's with lo=L,hi=H", spec, t.names[j])
		}
		los[j], his[j] = lo, hi
	}
	return newDataset(path, t, los, his, flip, spec)
}

// openData opens a data file, a regular file only (regfile.Open).
func openData(path string) (fs.File, error) { return regfile.Open(path) }

// ErrEmptyOption is a csv spec's key given an empty value (features=
// would have meant every column).
var ErrEmptyOption = errors.New("empty option")

// ErrRange is a declared feature range that cannot scale: missing,
// malformed, empty (lo >= hi) or of infinite width.
var ErrRange = errors.New("no usable declared range")

// featureRange is one feature's declared range, ranges=COLUMN:LO:HI.
type featureRange struct {
	column string
	lo, hi float64
}

// parseRanges reads ranges=COLUMN:LO:HI+... (COLUMN a name or a 1-based
// number; split at its last two colons, so a name may hold colons).
func parseRanges(spec, v string) ([]featureRange, error) {
	if v == "" {
		return nil, nil
	}
	var out []featureRange
	for _, part := range strings.Split(v, "+") {
		rest, h, ok1 := cutLast(part, ":")
		col, l, ok2 := cutLast(rest, ":")
		lo, eLo := strconv.ParseFloat(l, 64)
		hi, eHi := strconv.ParseFloat(h, 64)
		if !ok1 || !ok2 || col == "" || !finiteRange(lo, hi, eLo, eHi) {
			return nil, errorf("spec %q: ranges: %w: %q must be COLUMN:LO:HI with LO < HI and HI - LO finite", spec, ErrRange, part)
		}
		out = append(out, featureRange{col, lo, hi})
	}
	return out, nil
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// finiteRange reports whether lo < hi, both parsed, and hi - lo finite
// (lo=-1e308,hi=1e308 has an infinite width, which would scale every
// feature to 0).
func finiteRange(lo, hi float64, eLo, eHi error) bool {
	return eLo == nil && eHi == nil && lo < hi && !math.IsInf(hi-lo, 0)
}

// HindsightLoss is the loss, over every row, of the best linear policy in
// hindsight as least squares finds it: for each class k, the ridge
// regression (lambda = 1e-6, on the scaled rows) of the indicator of class k
// on x~, and the policy that plays argmax_k <theta_k, x~>. In the
// disjoint-arm encoding this is the least-squares fit of a linear reward
// model, the model OFUL's confidence sets are about; it bounds the loss of
// the best linear classifier from above (which minimising 0-1 loss
// exactly, NP-hard in general, could only lower), so regret measured
// against it is a lower bound on regret against that classifier. It is
// computed from all the data, hence never shown to a policy. With
// flipped rewards (Flip = p) its expected loss is p + h (1 - 2p), h its
// rate of wrong answers: a flip turns a right answer into a loss and a
// wrong one into a reward.
func (d *Dataset) HindsightLoss() (float64, error) {
	w, k := d.width(), d.Arms()
	g := mat.NewSymDense(w, nil)
	b := mat.NewDense(w, k, nil)
	for i := range d.y {
		x := mat.NewVecDense(w, slices.Clone(d.Context(i)))
		g.SymRankOne(g, 1, x)
		for j := range w {
			b.Set(j, d.y[i], b.At(j, d.y[i])+x.AtVec(j))
		}
	}
	for j := range w {
		g.SetSym(j, j, g.At(j, j)+1e-6)
	}
	var ch mat.Cholesky
	if !ch.Factorize(g) {
		return 0, errorf("%s: the rows' Gram matrix is singular", d.Name)
	}
	var theta mat.Dense
	if err := ch.SolveTo(&theta, b); err != nil {
		return 0, err
	}
	wrong := 0
	for i := range d.y {
		best, arg := math.Inf(-1), -1
		for c := range k {
			v := mat.Dot(mat.NewVecDense(w, d.Context(i)), theta.ColView(c))
			if v > best {
				best, arg = v, c
			}
		}
		if arg != d.y[i] {
			wrong++
		}
	}
	h := float64(wrong) / float64(len(d.y))
	return d.Flip + h*(1-2*d.Flip), nil
}

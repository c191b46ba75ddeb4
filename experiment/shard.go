package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dpbandit/dpbandit/internal/regfile"
	"github.com/dpbandit/dpbandit/sim"
)

// PartialFile is the name of a shard's output.
const PartialFile = "partial.json"

// maxPartial bounds the size of a partial.json that merge reads (1 GiB):
// a shard of 10^4 runs at 100 checkpoints of 5 entries writes about
// 100 MB.
const maxPartial = 1 << 30

// partialFormat and partialVersion identify the format of partial.json.
const (
	partialFormat  = "dpbandit-partial"
	partialVersion = 2 // 2: one record per run (sim.Record)
)

// Partial is what one shard of an experiment writes (partial.json): the
// configuration and its hash, which shard it is, and for every entry the
// regret of each of its runs at every checkpoint. `dpbandit merge`
// puts the shards' runs back in order and computes exactly what the
// unsharded experiment computes.
//
// Format (version 1), a JSON object:
//
//	format       "dpbandit-partial"
//	version      1
//	config       the experiment (Config's JSON: env, algos, horizon, runs,
//	             seed, budgets, mode, reference, checkpoints, noise, name)
//	config_hash  hex SHA-256 of the config's JSON
//	preset, scale  the preset and scale, for `dpbandit reproduce` shards
//	shard        {"index": I, "count": N}: runs r with r mod N = I
//	checkpoints  the checkpoint times
//	runs         the run indices computed, increasing
//	entries      per entry: label, regret[run][checkpoint] (in the order
//	             of runs), episodes[run], seconds (compute time)
//	wall_seconds, interrupted
type Partial struct {
	Format      string         `json:"format"`
	Version     int            `json:"version"`
	Config      Config         `json:"config"`
	ConfigHash  string         `json:"config_hash"`
	Preset      string         `json:"preset,omitempty"`
	Scale       string         `json:"scale,omitempty"`
	Shard       shardJSON      `json:"shard"`
	Checkpoints []int64        `json:"checkpoints"`
	Runs        []int          `json:"runs"`
	Entries     []PartialEntry `json:"entries"`
	// DataHash is Hash of the checkpoints, runs and entries: a shard
	// edited by hand is refused.
	DataHash    string  `json:"data_hash"`
	WallSeconds float64 `json:"wall_seconds"`
	Interrupted bool    `json:"interrupted,omitempty"`
}

// Hash returns the SHA-256 of the partial's data (checkpoints, runs and
// entries), hex-encoded.
func (p Partial) Hash() string {
	b, _ := json.Marshal(struct {
		C []int64        `json:"checkpoints"`
		R []int          `json:"runs"`
		E []PartialEntry `json:"entries"`
	}{p.Checkpoints, p.Runs, p.Entries})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

type shardJSON struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// PartialEntry is one entry's runs in a Partial: a record per run, in
// the order of the Partial's Runs.
type PartialEntry struct {
	Label   string       `json:"label"`
	Records []sim.Record `json:"records"`
	Seconds float64      `json:"seconds"`
}

// ShardDir is the folder a shard writes into, inside the output
// directory, so that every shard of a scheduler's job can share one
// --out: shard-I-of-N.
func ShardDir(sh sim.Shard) string { return fmt.Sprintf("shard-%d-of-%d", sh.Index, sh.Count) }

// expandShards replaces each directory that holds shard folders
// (ShardDir) rather than a partial result by those folders.
func expandShards(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		m, _ := filepath.Glob(filepath.Join(d, "shard-*-of-*"))
		if _, err := os.Stat(filepath.Join(d, PartialFile)); err == nil || len(m) == 0 {
			out = append(out, d)
			continue
		}
		slices.Sort(m)
		out = append(out, m...)
	}
	return out
}

// ParseShard parses "I/N" (0 <= I < N).
func ParseShard(s string) (sim.Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return sim.Shard{}, fieldErr("shard", "needs the form I/N (0 <= I < N) or env, got %q", s)
	}
	sh := sim.Shard{Index: i, Count: n}
	if sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count {
		return sim.Shard{}, fieldErr("shard", "needs 0 <= I < N, got %d/%d", sh.Index, sh.Count)
	}
	return sh, nil
}

// ShardFromEnv reads the shard from a batch scheduler's environment:
// Kubernetes Indexed Jobs (JOB_COMPLETION_INDEX, with the count from
// count, or else DPBANDIT_SHARDS) or Slurm job arrays
// (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT).
func ShardFromEnv(getenv func(string) string, count int) (sim.Shard, error) {
	num := func(k string) (int, bool, error) {
		v := getenv(k)
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, true, fieldErr("shard", "%s=%q is not an integer", k, v)
		}
		return n, true, nil
	}
	if i, ok, err := num("JOB_COMPLETION_INDEX"); ok || err != nil {
		if err != nil {
			return sim.Shard{}, err
		}
		if count == 0 {
			n, ok, err := num("DPBANDIT_SHARDS")
			if err != nil || !ok {
				return sim.Shard{}, fieldErr("shard", "JOB_COMPLETION_INDEX is set: give the number of shards with --shards or DPBANDIT_SHARDS (the Job's completions)")
			}
			count = n
		}
		return ParseShard(fmt.Sprintf("%d/%d", i, count))
	}
	if id, ok, err := num("SLURM_ARRAY_TASK_ID"); ok || err != nil {
		if err != nil {
			return sim.Shard{}, err
		}
		n, ok, err := num("SLURM_ARRAY_TASK_COUNT")
		if err != nil || !ok {
			return sim.Shard{}, fieldErr("shard", "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not")
		}
		lo, _, err := num("SLURM_ARRAY_TASK_MIN")
		if err != nil {
			return sim.Shard{}, err
		}
		return ParseShard(fmt.Sprintf("%d/%d", id-lo, n))
	}
	return sim.Shard{}, fieldErr("shard", "--shard env needs JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID (Slurm array)")
}

// hash returns the hex SHA-256 of the config's JSON (which leaves out
// workers, output and other settings that do not change results).
func (c Config) hash() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// writePartial writes one shard's runs to dir/partial.json.
func writePartial(dir string, c Config, sh sim.Shard, es []entry, res *sim.Result, wall float64, interrupted bool, preset, scale string) error {
	h, err := c.hash()
	if err != nil {
		return err
	}
	p := Partial{Format: partialFormat, Version: partialVersion, Config: c, ConfigHash: h, Preset: preset, Scale: scale,
		Shard: shardJSON{sh.Index, sh.Count}, Checkpoints: res.Checkpoints, Runs: res.Runs,
		WallSeconds: wall, Interrupted: interrupted}
	for j, e := range es {
		p.Entries = append(p.Entries, PartialEntry{Label: e.label, Records: res.Records[j], Seconds: res.Seconds[j]})
	}
	p.DataHash = p.Hash()
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := ensureDir(dir); err != nil {
		return err
	}
	return writeBytes(filepath.Join(dir, PartialFile), append(b, '\n'))
}

// readPartial reads dir/partial.json and checks its format.
func readPartial(dir string) (*Partial, error) {
	path := filepath.Join(dir, PartialFile)
	b, err := regfile.ReadAll(path, maxPartial)
	switch {
	case errors.Is(err, regfile.ErrNotRegular) || errors.Is(err, regfile.ErrTooLarge):
		return nil, fieldErr("merge", "%v", err)
	case err != nil:
		return nil, fieldErr("merge", "%s: no readable %s (%v): not the output of a shard", dir, PartialFile, unwrapPath(err))
	}
	var p Partial
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fieldErr("merge", "%s: not a partial result: %v", dir, err)
	}
	if p.Format != partialFormat || p.Version != partialVersion {
		return nil, fieldErr("merge", "%s: format %q version %d, want %q version %d", dir, p.Format, p.Version, partialFormat, partialVersion)
	}
	if h, err := p.Config.hash(); err != nil || h != p.ConfigHash {
		return nil, fieldErr("merge", "%s: the config does not match its hash (edited by hand?)", dir)
	}
	if p.Hash() != p.DataHash {
		return nil, fieldErr("merge", "%s: the data do not match their hash (edited by hand?)", dir)
	}
	return &p, nil
}

// mergeRuns checks that the partials belong to one configuration and
// cover every run exactly once, and returns the runs put back in order
// as the unsharded simulation returns them, with their report.
func mergeRuns(dirs []string, ps []*Partial) (*Report, error) {
	first := ps[0]
	owner := map[int]string{}
	seenShard := map[int]string{}
	for i, p := range ps {
		if p.ConfigHash != first.ConfigHash {
			return nil, fieldErr("merge", "%s and %s are shards of different experiments (config hashes %.12s and %.12s)", dirs[0], dirs[i], first.ConfigHash, p.ConfigHash)
		}
		if p.Shard.Count != first.Shard.Count {
			return nil, fieldErr("merge", "%s is shard %d/%d but %s is of %d shards", dirs[i], p.Shard.Index, p.Shard.Count, dirs[0], first.Shard.Count)
		}
		if d, ok := seenShard[p.Shard.Index]; ok {
			return nil, fieldErr("merge", "shard %d/%d is given twice (%s and %s)", p.Shard.Index, p.Shard.Count, d, dirs[i])
		}
		seenShard[p.Shard.Index] = dirs[i]
		if p.Interrupted {
			return nil, fieldErr("merge", "%s: shard %d/%d was interrupted; run it again", dirs[i], p.Shard.Index, p.Shard.Count)
		}
		if len(p.Entries) != len(first.Entries) || !slices.Equal(p.Checkpoints, first.Checkpoints) {
			return nil, fieldErr("merge", "%s does not have the entries and checkpoints of %s", dirs[i], dirs[0])
		}
		for _, r := range p.Runs {
			if d, ok := owner[r]; ok {
				return nil, fieldErr("merge", "run %d is in both %s and %s", r, d, dirs[i])
			}
			owner[r] = dirs[i]
		}
	}
	c := first.Config
	// The settings that are not part of the experiment take their
	// defaults (the memory bound is the shards' business).
	d := Defaults()
	c.Out, c.MaxMemory = d.Out, d.MaxMemory
	var missing []string
	for k := range first.Shard.Count {
		if _, ok := seenShard[k]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", k, first.Shard.Count))
		}
	}
	if len(missing) > 0 {
		return nil, fieldErr("merge", "missing shard %s", strings.Join(missing, ", "))
	}
	for r := range c.Runs {
		if _, ok := owner[r]; !ok {
			return nil, fieldErr("merge", "run %d is in no partial result", r)
		}
	}
	if len(owner) != c.Runs {
		return nil, fieldErr("merge", "the partial results hold %d runs, the experiment %d", len(owner), c.Runs)
	}
	w, es, err := c.validPlan(c.Runs)
	if err != nil {
		return nil, err
	}
	res := &sim.Result{Checkpoints: first.Checkpoints, Records: make([][]sim.Record, len(es)), Seconds: make([]float64, len(es))}
	// Run r is at position pos[r] of its partial.
	type at struct{ p, pos int }
	where := map[int]at{}
	for i, p := range ps {
		for k, r := range p.Runs {
			where[r] = at{i, k}
		}
	}
	wall := 0.0
	for _, p := range ps {
		wall += p.WallSeconds
	}
	for i, p := range ps {
		if len(p.Entries) != len(es) || !slices.Equal(p.Checkpoints, first.Checkpoints) {
			return nil, fieldErr("merge", "%s: %d entries at %d checkpoints, the config has %d entries (the first shard %d checkpoints)",
				dirs[i], len(p.Entries), len(p.Checkpoints), len(es), len(first.Checkpoints))
		}
		for j, e := range es {
			if p.Entries[j].Label != e.label {
				return nil, fieldErr("merge", "%s: entry %d is %q, but %q in the config", dirs[i], j, p.Entries[j].Label, e.label)
			}
			res.Seconds[j] += p.Entries[j].Seconds
		}
	}
	for r := range c.Runs {
		a := where[r]
		res.Runs = append(res.Runs, r)
		for j := range es {
			pe := ps[a.p].Entries[j]
			if len(pe.Records) != len(ps[a.p].Runs) || len(pe.Records[a.pos].Regret) != len(first.Checkpoints) {
				return nil, fieldErr("merge", "%s: entry %q does not hold one record per run", dirs[a.p], pe.Label)
			}
			if err := possible(w, first.Checkpoints, pe.Records[a.pos]); err != nil {
				return nil, fieldErr("merge", "%s: entry %q, run %d: %v", dirs[a.p], pe.Label, r, err)
			}
			res.Records[j] = append(res.Records[j], pe.Records[a.pos])
		}
	}
	return summarize(c, w, es, res, wall), nil
}

// Merge combines the partial results of the shards of one experiment
// (directories holding partial.json, from `dpbandit run --shard`) or of
// one reproduction (directories holding one folder per preset, from
// `dpbandit reproduce --shard`); a directory holding shard folders
// (ShardDir, as the command line writes them) stands for those folders.
// It writes into out what the unsharded
// run writes: summary.json, regret.csv and the plots (and index.html for a
// reproduction), identical apart from wall_seconds, and returns the
// path of the report (summary.json, or index.html), the number of shards
// merged and their reports (Merged). Shards edited by hand (their data
// no longer match their hash) or holding impossible results (a regret
// outside what the world allows) are refused.
func Merge(dirs []string, out string, now func() time.Time) (*Merged, error) {
	if len(dirs) == 0 {
		return nil, fieldErr("merge", "name the directories of the shards")
	}
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil {
			return nil, fieldErr("merge", "%s: %v", d, unwrapPath(err))
		} else if !st.IsDir() {
			return nil, fieldErr("merge", "%s: not a directory: name the --out of the shards, or a shard's folder", d)
		}
	}
	dirs = expandShards(dirs)
	path, reps, err := merge(dirs, out, now)
	if err != nil {
		return nil, err
	}
	return &Merged{Path: path, Shards: len(dirs), Reports: reps}, nil
}

// Merged is what Merge wrote.
type Merged struct {
	// Path is the report: summary.json, or index.html for a reproduction.
	Path string
	// Shards is the number of shards merged.
	Shards int
	// Reports are the merged experiments, in the order of the report.
	Reports []*Report
}

// merge is Merge on the shards' directories.
func merge(dirs []string, out string, now func() time.Time) (string, []*Report, error) {
	if _, err := os.Stat(filepath.Join(dirs[0], PartialFile)); err == nil {
		ps, err := readAll(dirs)
		if err != nil {
			return "", nil, err
		}
		rep, err := mergeRuns(dirs, ps)
		if err != nil {
			return "", nil, err
		}
		return filepath.Join(out, "summary.json"), []*Report{rep}, rep.Write(out)
	}
	// A reproduction: one folder per preset in each directory.
	var reports []presetReport
	var reps []*Report
	scale := ""
	for _, p := range Presets() {
		parts, first := p.parts(Quick), len(reports) // a sweep's folders do not depend on the scale
		for _, pt := range parts {
			rep, sc, err := mergePart(dirs, pt.dir, out)
			if err != nil {
				return "", nil, err
			}
			if rep != nil {
				scale = sc
				reports = append(reports, presetReport{Preset: p, Report: rep, Dir: filepath.ToSlash(pt.dir)})
				reps = append(reps, rep)
			}
		}
		if err := p.combineParts(reports[first:], len(parts), out); err != nil {
			return "", nil, err
		}
	}
	if len(reports) == 0 {
		return "", nil, fieldErr("merge", "%s holds no %s, nor preset folders holding one", dirs[0], PartialFile)
	}
	sc, err := ParseScale(scale)
	if err != nil {
		return "", nil, err
	}
	path, err := writeIndex(out, sc, reports, now)
	return path, reps, err
}

// mergePart merges the shards of one preset part (the folder dir of every
// reproduction directory) into out/dir; it returns a nil report when no
// shard holds the part.
func mergePart(dirs []string, dir, out string) (*Report, string, error) {
	sub := make([]string, len(dirs))
	found := 0
	for i, d := range dirs {
		sub[i] = filepath.Join(d, dir)
		if _, err := os.Stat(filepath.Join(sub[i], PartialFile)); err == nil {
			found++
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, "", fieldErr("merge", "%s: %v", sub[i], unwrapPath(err))
		}
	}
	if found == 0 {
		return nil, "", nil
	}
	ps, err := readAll(sub)
	if err != nil {
		return nil, "", err
	}
	rep, err := mergeRuns(sub, ps)
	if err != nil {
		return nil, "", err
	}
	if err := rep.Write(filepath.Join(out, dir)); err != nil {
		return nil, "", err
	}
	return rep, ps[0].Scale, nil
}

// readAll reads the partial of every directory.
func readAll(dirs []string) ([]*Partial, error) {
	ps := make([]*Partial, len(dirs))
	for i, d := range dirs {
		p, err := readPartial(d)
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	return ps, nil
}

// possible reports an error for a record no simulation on w could have
// produced: a regret outside the world's range at a checkpoint, or a
// non-finite or negative count.
func possible(w World, checkpoints []int64, rec sim.Record) error {
	for c, t := range checkpoints {
		lo, hi := w.regretRange(t)
		if r := rec.Regret[c]; !(r >= lo-1e-9*float64(t) && r <= hi+1e-9*float64(t)) {
			return fmt.Errorf("regret %v at t = %d is impossible (it lies in [%v, %v])", r, t, lo, hi)
		}
	}
	if !(rec.Episodes >= 0) || math.IsInf(rec.Episodes, 0) {
		return fmt.Errorf("episodes %v is impossible", rec.Episodes)
	}
	for k, v := range rec.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("metric %s = %v is impossible", k, v)
		}
	}
	return nil
}

package experiment

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/dpbandit/dpbandit/sim"
)

// Scale selects the size of a preset: Quick finishes in seconds, Paper
// uses the horizon and number of runs of the source paper.
type Scale string

// The scales of `dpbandit reproduce --scale`.
const (
	Quick Scale = "quick"
	Paper Scale = "paper"
)

// ParseScale returns the scale named s.
func ParseScale(s string) (Scale, error) {
	switch Scale(s) {
	case Quick, Paper:
		return Scale(s), nil
	}
	return "", fmt.Errorf("unknown scale %q (known: quick, paper)", s)
}

// presetsYAML holds the embedded presets (presets.yaml).
//
//go:embed presets.yaml
var presetsYAML []byte

// Preset is an embedded experiment that reproduces a result of a paper
// (presets.yaml).
type Preset struct {
	// Name is the preset's folder name and its name on the command line.
	Name string
	// Source says what it reproduces, e.g. "001 Figure 4 (left)".
	Source string
	// Description says what is compared and what the paper claims.
	Description string
	// Sweep, if set, runs the configuration once per point, on the
	// point's environment, each into the folder Name/Tag; the plots named
	// by combine are then drawn across the points' reports into Name.
	Sweep []SweepPoint

	quick, paper Fields // the configuration, and its paper-scale overrides
	combine      string // "robust", "sparse", "realdata", "drift" or ""
}

// SweepPoint is one environment of a preset's sweep, with its value X on
// the sweep's axis and the algorithms to run on it when they differ from
// the configuration's.
type SweepPoint struct {
	Tag   string   `yaml:"tag"`
	X     float64  `yaml:"x"`
	Env   string   `yaml:"env"`
	Algos []string `yaml:"algos"`
}

// presetEntry is one preset in presets.yaml.
type presetEntry struct {
	Name        string    `yaml:"name"`
	Source      string    `yaml:"source"`
	Description string    `yaml:"description"`
	Quick       yaml.Node `yaml:"quick"`
	Paper       yaml.Node `yaml:"paper"`
	Sweep       struct {
		Combine string       `yaml:"combine"`
		Points  []SweepPoint `yaml:"points"`
	} `yaml:"sweep"`
}

// Presets returns the embedded presets, in report order. presets.yaml is
// part of the program, checked by the tests: it cannot be malformed.
func Presets() []Preset {
	var entries []presetEntry
	dec := yaml.NewDecoder(bytes.NewReader(presetsYAML))
	dec.KnownFields(true)
	if err := dec.Decode(&entries); err != nil {
		panic(fmt.Sprintf("experiment: presets.yaml: %v", err))
	}
	out := make([]Preset, len(entries))
	for i, e := range entries {
		out[i] = Preset{Name: e.Name, Source: e.Source, Description: e.Description, Sweep: e.Sweep.Points,
			quick: &e.Quick, paper: &e.Paper, combine: e.Sweep.Combine}
	}
	return out
}

// Config returns the preset's experiment at a scale.
func (p Preset) Config(s Scale) Config {
	c := Defaults()
	err := c.Set(p.quick)
	if s == Paper && err == nil && p.paper.Kind != 0 {
		err = c.Set(p.paper)
	}
	if err != nil {
		panic(fmt.Sprintf("experiment: presets.yaml: %s: %v", p.Name, err))
	}
	return c
}

// part is one experiment of a preset: the preset itself or a point of
// its sweep, with the folder it writes (relative to the reproduction's).
type part struct {
	dir    string
	config Config
}

// parts expands a preset at a scale into its experiments.
func (p Preset) parts(s Scale) []part {
	c := p.Config(s)
	if p.Sweep == nil {
		return []part{{p.Name, c}}
	}
	var out []part
	for _, pt := range p.Sweep {
		c := c
		c.Env = pt.Env
		if pt.Algos != nil {
			c.Algos = pt.Algos
		}
		c.Name += " (" + pt.Tag + ")"
		out = append(out, part{filepath.Join(p.Name, pt.Tag), c})
	}
	return out
}

// combineParts draws the preset's plots across its parts' reports
// (combine), mine, and records the files on the last one; it draws
// nothing unless every part has its report.
func (p Preset) combineParts(mine []presetReport, parts int, out string) error {
	draw := map[string]func([]*Report, []SweepPoint, string) ([]string, error){"robust": combineRobust, "sparse": combineSparse, "realdata": combineRealdata,
		"drift": combineDrift}[p.combine]
	if draw == nil || parts < 2 || len(mine) != parts {
		return nil
	}
	var reps []*Report
	for _, r := range mine {
		reps = append(reps, r.Report)
	}
	files, err := draw(reps, p.Sweep, filepath.Join(out, p.Name))
	for _, f := range files {
		mine[len(mine)-1].Extra = append(mine[len(mine)-1].Extra, p.Name+"/"+f)
	}
	return err
}

// CheckReproduction checks every part of the reproduction o asks for,
// its memory estimate included, before anything is computed.
func CheckReproduction(o ReproduceOptions) error {
	if err := CheckPresets(o.Only); err != nil {
		return err
	}
	for _, p := range o.presets() {
		for _, pt := range p.parts(o.Scale) {
			if err := o.config(pt).Validate(); err != nil {
				return fmt.Errorf("preset %s: %w", pt.dir, err)
			}
		}
	}
	return nil
}

// presets returns the presets o runs, in order.
func (o ReproduceOptions) presets() []Preset {
	var out []Preset
	for _, p := range Presets() {
		if len(o.Only) == 0 || slices.Contains(o.Only, p.Name) {
			out = append(out, p)
		}
	}
	return out
}

// config is a part's configuration with o's workers and memory limit.
func (o ReproduceOptions) config(pt part) Config {
	c := pt.config
	c.Workers = o.Workers
	if o.MaxMemory > 0 {
		c.MaxMemory = o.MaxMemory
	}
	return c
}

// ReproduceOptions configures Reproduce.
type ReproduceOptions struct {
	Scale Scale
	// Out is the directory that receives one folder per preset and index.html.
	Out string
	// Only, if non-empty, restricts the run to these preset names.
	Only []string
	// Workers is the number of parallel workers (0: all cores).
	Workers int
	// MaxMemory, in MiB, bounds what each preset may need (0: Config's
	// default, 4096).
	MaxMemory int64
	// Progress, if set, is told which preset runs and how far it is.
	Progress func(preset string, done, total int)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Shard, if set, computes only the shard's runs of every preset and
	// writes Out/PRESET/partial.json (no report); `dpbandit merge`
	// combines the shards.
	Shard sim.Shard
}

// Reproduce runs the presets and writes their results and an index.html
// report linking them. It returns the report's path (the output
// directory for a shard).
func Reproduce(ctx context.Context, o ReproduceOptions) (string, error) {
	if err := CheckReproduction(o); err != nil {
		return "", err
	}
	var reports []presetReport
	for _, p := range o.presets() {
		parts, first := p.parts(o.Scale), len(reports)
		for _, pt := range parts {
			c := o.config(pt)
			opt := Options{Out: filepath.Join(o.Out, pt.dir), Now: o.Now, Shard: o.Shard, preset: pt.dir, scale: o.Scale}
			if o.Progress != nil {
				name := filepath.ToSlash(pt.dir)
				opt.Progress = func(done, total int) { o.Progress(name, done, total) }
			}
			rep, err := Run(ctx, c, opt)
			if rep != nil {
				reports = append(reports, presetReport{Preset: p, Report: rep, Dir: filepath.ToSlash(pt.dir)})
			}
			if err != nil {
				// What finished is kept, with an index of it (the
				// caller keeps it on an interruption).
				path := ""
				if len(reports) > 0 && o.Shard == (sim.Shard{}) {
					path, _ = writeIndex(o.Out, o.Scale, reports, o.Now)
				}
				return path, fmt.Errorf("preset %s: %w", pt.dir, err)
			}
		}
		if o.Shard == (sim.Shard{}) {
			if err := p.combineParts(reports[first:], len(parts), o.Out); err != nil {
				return "", fmt.Errorf("preset %s: %w", p.Name, err)
			}
		}
	}
	if o.Shard != (sim.Shard{}) {
		return o.Out, nil
	}
	return writeIndex(o.Out, o.Scale, reports, o.Now)
}

// presetReport is the report of one part of a preset, in the folder Dir
// of the reproduction, with the preset's combined plots (Extra, paths
// relative to the reproduction) on its last part.
type presetReport struct {
	Preset
	*Report
	Dir   string
	Extra []string
}

// CheckPresets reports an error naming the first unknown preset.
func CheckPresets(names []string) error {
	presets := Presets()
	for i, name := range names {
		if slices.Contains(names[:i], name) {
			return fieldErr("preset", "%s is listed twice", name)
		}
		if !slices.ContainsFunc(presets, func(p Preset) bool { return p.Name == name }) {
			var known []string
			for _, p := range presets {
				known = append(known, p.Name)
			}
			return fieldErr("preset", "unknown preset %q (known: %s)", name, strings.Join(known, ", "))
		}
	}
	return nil
}

// ensureDir creates dir.
func ensureDir(dir string) error { return os.MkdirAll(dir, 0o755) }

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/dpbandit/dpbandit/experiment"
)

func reproduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reproduce", stdout)
	scale := fs.String("scale", "quick", "`scale`: quick (seconds) or paper (the papers' T and runs)")
	out := fs.String("out", "results/reproduction", "output `dir`")
	only := fs.String("preset", "", "comma `list` of presets to run (default: all)")
	workers := fs.Int("workers", 0, "parallel `workers` (0: all cores)")
	maxMemory := fs.Int64("max-memory", experiment.Defaults().MaxMemory, "refuse presets estimated to need more than this many `MiB` (all are checked before any runs)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	readShard := shardFlags(fs)
	force := forceFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	shard, err := readShard()
	if err != nil {
		return err
	}
	sc, err := experiment.ParseScale(*scale)
	if err != nil {
		return &experiment.FieldError{Field: "scale", Err: err}
	}
	if *workers < 0 {
		return &experiment.FieldError{Field: "workers", Err: fmt.Errorf("must be non-negative, got %d", *workers)}
	}
	if *maxMemory < 1 {
		return &experiment.FieldError{Field: "max-memory", Err: fmt.Errorf("must be a positive number of MiB, got %d", *maxMemory)}
	}
	var names []string
	if fs.given("preset") {
		if names, err = splitList("preset", *only); err != nil {
			return err
		}
		if err := experiment.CheckPresets(names); err != nil {
			return err
		}
	}
	opts := experiment.ReproduceOptions{Scale: sc, Only: names, Workers: *workers, Shard: shard, MaxMemory: *maxMemory}
	if err := experiment.CheckReproduction(opts); err != nil { // before anything is written or computed
		return err
	}
	if shard.Count > 0 {
		*out = filepath.Join(*out, experiment.ShardDir(shard))
	}
	dest, err := experiment.PrepareOut(*out, *force)
	if err != nil {
		return err
	}
	onForcedExit(ctx, dest.Abort)
	defer limitMemory(*maxMemory)()
	bar := newProgress(stderr, *quiet, "runs")
	start := time.Now()
	opts.Out = dest.Temp
	opts.Progress = func(p string, done, total int) { bar.label = p; bar.update(done, total) }
	path, err := experiment.Reproduce(ctx, opts)
	bar.finish()
	if err := settle(dest, path != "" && (err == nil || errors.Is(err, context.Canceled)), err); err != nil {
		return err
	}
	if rel, rerr := filepath.Rel(dest.Temp, path); rerr == nil {
		path = filepath.Join(dest.Dir, rel)
	}
	if shard.Count > 0 {
		fmt.Fprintf(stdout, "shard %d/%d of the reproduction (%s scale) finished in %.1fs; partial results in %s; `dpbandit merge` the shards\n",
			shard.Index, shard.Count, sc, time.Since(start).Seconds(), path)
		return nil
	}
	fmt.Fprintf(stdout, "reproduction (%s scale) finished in %.1fs; report: %s\n", sc, time.Since(start).Seconds(), path)
	return nil
}

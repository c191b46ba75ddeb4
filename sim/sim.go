// Package sim is the simulation engine: it runs bandit policies on an
// environment for a horizon T, R times, over several workers, and records
// pseudo-regret on a grid of checkpoints.
//
// Run i draws all its randomness from streams derived from (seed, i), so
// results are bit-identical whatever the number of workers. In run i every
// policy faces the same reward sequence of each arm (the stack-of-rewards
// model of env.Stream), so differences between policies are paired and can
// be estimated with little variance. Plans are played whole (batched mode):
// an n-pull plan costs one range sum of the arm's stream, so episodic
// policies cost O(episodes), not O(T).
package sim

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/noise"
)

// Mode selects how plans are played and rewards drawn.
type Mode int

const (
	// Batched plays each plan whole on the stack of rewards.
	Batched Mode = iota
	// Stepped unrolls every plan one decision at a time, as a server
	// would, on the same stack of rewards: results equal Batched's.
	Stepped
	// Independent unrolls plans one step at a time and draws each reward
	// independently (env.Instance.Draw), without the bridge: the naive
	// reference against which the batched path is tested in distribution.
	Independent
)

// ParseMode returns the mode named "batched", "step" or "iid".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "batched", "":
		return Batched, nil
	case "step":
		return Stepped, nil
	case "iid":
		return Independent, nil
	}
	return 0, errorf("unknown mode %q (known: batched, step, iid)", s)
}

// Of is one policy of an experiment, of any kind: S is the setting it is
// built from, P the policy. Entry, ContextualEntry, OLOEntry and
// BatchedEntry are its instances for the simulators.
type Of[S, P any] struct {
	// Name labels the entry in results.
	Name string
	// New builds the policy for a run.
	New func(S) (P, error)
	// NoiseKey selects the policy's random streams: entries with the same
	// key (an algorithm at several budgets, say) draw the same underlying
	// random numbers in a run, which pairs their comparison too.
	NoiseKey uint64
}

// Entry is one policy of a bandit experiment (Run).
type Entry = Of[bandit.Setting, bandit.Policy]

// Config describes a simulation.
type Config struct {
	Env     env.Instance
	Horizon int64
	Runs    int
	Seed    uint64
	// Workers is the number of goroutines; 0 means runtime.NumCPU().
	Workers int
	// Checkpoints are the times (1..Horizon, increasing) at which regret is
	// recorded; nil means LogGrid(Horizon, 100).
	Checkpoints []int64
	Mode        Mode
	// Secure draws privacy noise from noise.Secure (discrete noise on a
	// grid, operating-system entropy) instead of the seeded fast path: what
	// a deployment would run. Results are then not reproducible.
	Secure bool
	// Progress, if set, is called after each completed run with the number
	// of completed runs. It is called from the workers, one call at a time.
	Progress func(done int)
	// Now is the clock for timings; nil means time.Now.
	Now func() time.Time
	// Shard selects the runs to compute (all by default).
	Shard Shard
	// Delay, when set, delays every reward (see Delay): the policy then
	// runs one decision at a time through bandit.Delayed, whatever Mode.
	Delay Delay
}

// Steps holds the settings of a step-by-step simulation (contextual or
// online learning); the fields mean what they mean in Config.
type Steps struct {
	Horizon     int64
	Runs        int
	Seed        uint64
	Workers     int
	Checkpoints []int64
	Secure      bool
	Progress    func(done int)
	Now         func() time.Time
	Shard       Shard
	// Delay delays every reward (see Delay); contextual policies then
	// run through contextual.Delayed, the decision service's rule.
	Delay Delay
}

// Shard selects the runs that one process computes when an experiment is
// split across machines: run r belongs to shard r mod Count. Run r draws
// every random number from streams derived from (seed, r), so a shard
// computes exactly the runs the whole experiment would, and the shards'
// runs, put back in order, are the whole experiment's. The zero Shard is
// the whole experiment.
type Shard struct{ Index, Count int }

// Has reports whether run r belongs to the shard.
func (s Shard) Has(r int) bool { return s.Count <= 1 || r%s.Count == s.Index }

// Size returns the number of the runs 0..runs-1 that belong to the shard.
func (s Shard) Size(runs int) int {
	if s.Count <= 1 {
		return runs
	}
	return (runs - s.Index + s.Count - 1) / s.Count
}

// Validate reports an error unless 0 <= Index < Count (or the zero Shard).
func (s Shard) Validate() error {
	if s == (Shard{}) {
		return nil
	}
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return errorf("a shard needs 0 <= index < count, got %d/%d", s.Index, s.Count)
	}
	return nil
}

// Result holds the per-run records of a simulation.
type Result struct {
	Checkpoints []int64
	// Records[j][r] is what entry j produced in the r-th completed run.
	Records [][]Record
	// Seconds[j] is the compute time spent in entry j over all runs.
	Seconds []float64
	// Runs lists the completed runs' indices, increasing.
	Runs []int
}

// Record is what one run of one entry produced. It travels unchanged
// through shards (partial.json), merges and summaries: a new per-run
// measure is a key of Metrics that a simulator sets, and nothing else.
type Record struct {
	// Regret[c] is the pseudo-regret at Checkpoints[c].
	Regret []float64 `json:"regret"`
	// Episodes is the number of episodes (0 for policies that are not
	// bandit.Episodic).
	Episodes float64 `json:"episodes"`
	// Metrics are further measures of the run by name (nil when there are
	// none), e.g. "support_recall" for a sparse policy (SupportMetrics).
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// Regret returns entry j's regret curves, one per completed run.
func (r *Result) Regret(j int) [][]float64 {
	out := make([][]float64, len(r.Records[j]))
	for i, rec := range r.Records[j] {
		out[i] = rec.Regret
	}
	return out
}

// Episodes returns entry j's number of episodes, one per completed run.
func (r *Result) Episodes(j int) []float64 {
	out := make([]float64, len(r.Records[j]))
	for i, rec := range r.Records[j] {
		out[i] = rec.Episodes
	}
	return out
}

// tag separates the policies' random streams from the environment's.
const tagPolicy, tagNoise = 1 << 62, 1<<62 + 1

// LogGrid returns about n checkpoints from 1 to T, geometrically spaced,
// rounded to integers, without repeats, always ending at T.
func LogGrid(T int64, n int) []int64 {
	var out []int64
	for i := range n {
		t := int64(math.Round(math.Pow(float64(T), float64(i)/float64(n-1))))
		if t < 1 {
			t = 1
		}
		if len(out) == 0 || t > out[len(out)-1] {
			out = append(out, t)
		}
	}
	if out[len(out)-1] != T {
		out = append(out, T)
	}
	return out
}

// steps is the config's settings that every simulation shares.
func (c *Config) steps() Steps {
	return Steps{Horizon: c.Horizon, Runs: c.Runs, Seed: c.Seed, Workers: c.Workers, Checkpoints: c.Checkpoints,
		Secure: c.Secure, Progress: c.Progress, Now: c.Now, Shard: c.Shard, Delay: c.Delay}
}

// prepare checks what every simulation needs (validateRuns, and at
// least one entry) and fills the defaults: LogGrid(Horizon, 100) for
// the checkpoints, time.Now for the clock.
func (s *Steps) prepare(entries int) error {
	if err := validateRuns(s.Horizon, s.Runs, s.Workers, s.Checkpoints); err != nil {
		return err
	}
	if entries == 0 {
		return errorf("no policies")
	}
	if s.Checkpoints == nil {
		s.Checkpoints = LogGrid(s.Horizon, 100)
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return nil
}

// validateRuns checks what every simulation needs.
func validateRuns(horizon int64, runs, workers int, checkpoints []int64) error {
	if horizon < 1 || horizon > 1<<50 {
		return errorf("horizon must lie in [1, 2^50], got %d", horizon)
	}
	if runs < 1 {
		return errorf("runs must be positive, got %d", runs)
	}
	if workers < 0 {
		return errorf("workers must be non-negative, got %d", workers)
	}
	for i, t := range checkpoints {
		if t < 1 || t > horizon || (i > 0 && t <= checkpoints[i-1]) {
			return errorf("checkpoints must increase within [1, %d]", horizon)
		}
	}
	return nil
}

// Run simulates the entries. When ctx is cancelled it stops, returns the
// runs completed so far and ctx's error.
func Run(ctx context.Context, cfg Config, entries []Entry) (*Result, error) {
	if cfg.Env == nil {
		return nil, errorf("no environment")
	}
	st := cfg.steps()
	if err := st.prepare(len(entries)); err != nil {
		return nil, err
	}
	cfg.Checkpoints = st.Checkpoints // the default ones, for runOne
	return entrywise(ctx, &st, entries, func(e Entry) string { return e.Name },
		func(ctx context.Context, e Entry, run uint64) ([]float64, float64, map[string]float64, error) {
			return runOne(ctx, &cfg, e, run)
		})
}

// record holds one run's results for every entry.
type record struct {
	entries []Record
	seconds []float64
}

// parallel runs one(run) for every run over the workers, and gathers the
// completed runs in increasing order, so that results do not depend on the
// number of workers. On cancellation it keeps the runs completed so far
// and returns the context's cause.
func parallel(ctx context.Context, runs int, shard Shard, workers, entries int, checkpoints []int64, progress func(int),
	one func(ctx context.Context, run uint64, rec *record) error) (*Result, error) {
	if err := shard.Validate(); err != nil {
		return nil, err
	}
	if workers == 0 {
		workers = runtime.NumCPU()
	}
	workers = max(min(workers, shard.Size(runs)), 1)
	records := make([]*record, runs)
	jobs := make(chan int)
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				rec := &record{entries: make([]Record, entries), seconds: make([]float64, entries)}
				err := one(ctx, uint64(i), rec)
				mu.Lock()
				if err != nil {
					if firstErr == nil && ctx.Err() == nil {
						firstErr = err
					}
					cancel()
				} else {
					records[i] = rec
					done++
					if progress != nil {
						progress(done)
					}
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range runs {
		if !shard.Has(i) {
			continue
		}
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()

	res := &Result{Checkpoints: checkpoints, Records: make([][]Record, entries), Seconds: make([]float64, entries)}
	for i, rec := range records {
		if rec == nil {
			continue
		}
		res.Runs = append(res.Runs, i)
		for j := range entries {
			res.Records[j] = append(res.Records[j], rec.entries[j])
			res.Seconds[j] += rec.seconds[j]
		}
	}
	if firstErr != nil {
		return res, firstErr
	}
	if len(res.Runs) < shard.Size(runs) {
		return res, context.Cause(ctx)
	}
	return res, nil
}

// privacyNoise returns the noise source of an entry's policy in a run:
// the deployment's secure noise, or fast noise seeded by (seed, run,
// entry), reproducible.
func privacyNoise(secure bool, seed, run, key uint64) noise.Noise {
	if secure {
		return noise.Secure{}
	}
	return noise.NewFast(seed, run, tagNoise, key)
}

// entrywise runs every run of a simulation that plays its entries one
// after the other, on the settings s (prepared): one(ctx, e, run) plays
// the entry e in the run and returns its regret at the checkpoints and
// its number of episodes, timed alone; name(e) names it in errors.
func entrywise[E any](ctx context.Context, s *Steps, entries []E, name func(E) string,
	one func(ctx context.Context, e E, run uint64) ([]float64, float64, map[string]float64, error)) (*Result, error) {
	return parallel(ctx, s.Runs, s.Shard, s.Workers, len(entries), s.Checkpoints, s.Progress,
		func(ctx context.Context, run uint64, rec *record) error {
			for j, e := range entries {
				start := s.Now()
				var err error
				rec.entries[j].Regret, rec.entries[j].Episodes, rec.entries[j].Metrics, err = one(ctx, e, run)
				rec.seconds[j] = s.Now().Sub(start).Seconds()
				if err != nil {
					return fmt.Errorf("%s, run %d: %w", name(e), run, err)
				}
			}
			return nil
		})
}

// runOne plays one entry for one run and returns its regret at the
// checkpoints, its number of episodes and its metrics (IdentifyMetrics).
func runOne(ctx context.Context, cfg *Config, e Entry, run uint64) ([]float64, float64, map[string]float64, error) {
	inst := cfg.Env
	k := inst.Arms()
	nz := privacyNoise(cfg.Secure, cfg.Seed, run, e.NoiseKey)
	st := bandit.Setting{
		Arms:    k,
		Horizon: cfg.Horizon,
		Bounds:  inst.Bounds(),
		Rand:    noise.Stream(cfg.Seed, run, tagPolicy, e.NoiseKey),
		Noise:   nz,
	}
	if l, ok := inst.(bandit.Linear); ok {
		st.Actions = l.Actions()
	}
	p, err := e.New(st)
	if err != nil {
		return nil, 0, nil, err
	}
	c := curve{ck: cfg.Checkpoints, out: make([]float64, len(cfg.Checkpoints))}
	if d, ok := inst.(*env.Drifting); ok {
		if err := runDrifting(ctx, cfg, p, d, run, &c); err != nil {
			return nil, 0, nil, err
		}
		return c.out, episodes(p), nil, nil
	}
	if !cfg.Delay.IsZero() {
		if err := runDelayed(ctx, cfg, p, run, &c); err != nil {
			return nil, 0, nil, err
		}
		return c.out, episodes(p), IdentifyMetrics(p, inst.Means(), cfg.Horizon), nil
	}
	gaps := env.Gaps(inst.Means())
	wantSamples := false
	if su, ok := p.(bandit.SampleUser); ok {
		wantSamples = su.NeedsSamples()
	}
	// Rewards that may leave the declared range (corrupted ones) go with
	// their samples, so that the policy clips each one: a sum of them
	// cannot be checked (bandit.Feedback).
	if u, ok := inst.(env.Unclipped); ok && u.Unclipped() {
		wantSamples = true
	}
	streams := make([]*env.Stream, k)
	pos := make([]int64, k)
	var iid = noise.Stream(cfg.Seed, run, tagPolicy+2) // Independent mode only
	var samples []float64
	for iter := 0; c.t < cfg.Horizon; iter++ {
		if iter&1023 == 0 && ctx.Err() != nil {
			return nil, 0, nil, ctx.Err()
		}
		pl := p.Next()
		if pl.Arm < 0 || pl.Arm >= k || pl.Count < 1 {
			return nil, 0, nil, errorf("invalid plan %+v", pl)
		}
		n := min(pl.Count, cfg.Horizon-c.t)
		if cfg.Mode != Batched {
			n = 1
		}
		a := pl.Arm
		var sum float64
		samples = samples[:0]
		if cfg.Mode == Independent {
			sum = inst.Draw(iid, a)
			if wantSamples {
				samples = append(samples, sum)
			}
		} else {
			if streams[a] == nil {
				streams[a] = inst.Stream(cfg.Seed, run, a, cfg.Horizon)
			}
			sum = streams[a].Sum(pos[a], pos[a]+n)
			if wantSamples {
				samples = streams[a].Samples(pos[a], pos[a]+n, samples)
			}
		}
		c.add(n, gaps[a])
		pos[a] += n
		fb := bandit.Feedback{Arm: a, Count: n, Sum: sum}
		if wantSamples {
			fb.Samples = samples
		}
		if err := p.Update(fb); err != nil {
			return nil, 0, nil, err
		}
	}
	return c.out, episodes(p), IdentifyMetrics(p, inst.Means(), cfg.Horizon), nil
}

// episodes returns the number of episodes of an Episodic policy, else 0.
func episodes(p bandit.Policy) float64 {
	if ep, ok := p.(bandit.Episodic); ok {
		return float64(ep.Episodes())
	}
	return 0
}

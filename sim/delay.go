package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/noise"
)

// Delay is how many decisions pass before a reward reaches the policy:
// the reward of decision t arrives just before decision t + 1 + D, with
// D fixed, or geometric on {0, 1, ...} with a given mean; a fraction Miss
// of the rewards never arrives. The zero Delay is no delay at all, and a
// run with it is the plain step-by-step run.
//
// A reward that has not come once its slot is overdue (bandit.Waits:
// about twice the time the rewards that do come take) is not waited
// for: the slot is dropped (freed for a later decision), or takes the
// reward Default when Defaults is set. A reward that comes after that is
// not learned. Missing rewards here are missing at random, so dropping
// their slots is unbiased; a default suits rewards whose absence means
// an outcome (no conversion: 0).
type Delay struct {
	// Fixed is D when Mean is 0.
	Fixed int64
	// Mean, when positive, draws D ~ Geometric(1/(1+Mean)): P(D = k) =
	// p (1-p)^k, whose mean is Mean.
	Mean float64
	// Miss is the probability that a reward never arrives.
	Miss float64
	// Default is the reward of an overdue slot when Defaults is set.
	Default  float64
	Defaults bool
}

// ParseDelay parses "D" (a fixed number of decisions) or "geom:MEAN",
// optionally followed by ",miss=P" and ",default=R".
func ParseDelay(s string) (Delay, error) {
	parts := strings.Split(s, ",")
	head := parts[0]
	var d Delay
	if m, ok := strings.CutPrefix(head, "geom:"); ok {
		x, err := strconv.ParseFloat(m, 64)
		if err != nil || !(x > 0) || x > 1e12 {
			return Delay{}, fmt.Errorf("sim: delay geom:MEAN needs a mean in (0, 1e12], got %q", m)
		}
		d.Mean = x
	} else {
		f, err := strconv.ParseInt(head, 10, 64)
		if err != nil || f < 0 || f > 1<<40 {
			return Delay{}, fmt.Errorf("sim: delay must be a number of decisions in [0, 2^40] or geom:MEAN, then ,miss=P and ,default=R, got %q", s)
		}
		d.Fixed = f
	}
	seen := map[string]bool{}
	for _, kv := range parts[1:] {
		k, v, _ := strings.Cut(kv, "=")
		x, err := strconv.ParseFloat(v, 64)
		once := !seen[k]
		seen[k] = true
		switch {
		case err != nil || math.IsNaN(x) || math.IsInf(x, 0):
			return Delay{}, fmt.Errorf("sim: delay option %q needs a number", kv)
		case k == "miss" && once && x >= 0 && x < 1:
			d.Miss = x
		case k == "default" && once:
			d.Default, d.Defaults = x, true
		default:
			return Delay{}, fmt.Errorf("sim: delay option %q: known are miss=P (P in [0, 1)) and default=R, once each", kv)
		}
	}
	return d, nil
}

// String returns the spec ParseDelay reads.
func (d Delay) String() string {
	s := strconv.FormatInt(d.Fixed, 10)
	if d.Mean > 0 {
		s = "geom:" + strconv.FormatFloat(d.Mean, 'g', -1, 64)
	}
	if d.Miss > 0 {
		s += ",miss=" + strconv.FormatFloat(d.Miss, 'g', -1, 64)
	}
	if d.Defaults {
		s += ",default=" + strconv.FormatFloat(d.Default, 'g', -1, 64)
	}
	return s
}

// IsZero reports whether there is no delay.
func (d Delay) IsZero() bool { return d == Delay{} }

// missed draws whether a reward never arrives (no draw when Miss is 0,
// so that runs without misses keep their numbers).
func (d Delay) missed(r *rand.Rand) bool { return d.Miss > 0 && r.Float64() < d.Miss }

// late resolves the overdue slots of a delayed policy (bandit.Waits):
// each takes the default reward, or is dropped.
func (d Delay) late(overdue []bandit.Ticket, reward, drop func(bandit.Ticket, float64) error) error {
	for _, tk := range overdue {
		var err error
		if d.Defaults {
			err = reward(tk, d.Default)
		} else {
			err = drop(tk, 0)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// arrive hands a reward that came to its policy: an overflow decision's
// only counts among the delays (seen), and so does one whose slot was
// resolved as overdue before it came (bandit.ErrStale: not learned).
func arrive(reward func(bandit.Ticket, float64) error, seen func(bandit.Ticket), a arrival) error {
	if !a.ticket.Learns() {
		seen(a.ticket)
		return nil
	}
	err := reward(a.ticket, a.reward)
	if errors.Is(err, bandit.ErrStale) {
		seen(a.ticket)
		return nil
	}
	return err
}

// draw returns one delay.
func (d Delay) draw(r *rand.Rand) int64 {
	if d.Mean <= 0 {
		return d.Fixed
	}
	// Inversion: floor(ln U / ln(1-p)) is geometric on {0, 1, ...}.
	p := 1 / (1 + d.Mean)
	u := 1 - r.Float64() // in (0, 1]
	return int64(math.Floor(math.Log(u) / math.Log1p(-p)))
}

// arrival is a reward on its way to the policy.
type arrival struct {
	at     int64 // the decision before which it arrives
	seq    int64 // tie-break: order of decisions
	ticket bandit.Ticket
	reward float64
}

type arrivals []arrival

func (a arrivals) Len() int { return len(a) }
func (a arrivals) Less(i, j int) bool {
	return a[i].at < a[j].at || a[i].at == a[j].at && a[i].seq < a[j].seq
}
func (a arrivals) Swap(i, j int) { a[i], a[j] = a[j], a[i] }
func (a *arrivals) Push(x any)   { *a = append(*a, x.(arrival)) }
func (a *arrivals) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}

// runDelayed plays p one decision at a time through bandit.Delayed, the
// service's own rule for pending rewards, with rewards arriving after
// cfg.Delay. Every decision counts in the regret, overflow ones too.
// Rewards are the Stepped mode's (each arm's stack, in order), so that
// with a zero delay the run is the Stepped run.
func runDelayed(ctx context.Context, cfg *Config, p bandit.Policy, run uint64, c *curve) error {
	inst := cfg.Env
	k := inst.Arms()
	gaps := env.Gaps(inst.Means())
	d := bandit.NewDelayed(p)
	streams := make([]*env.Stream, k)
	pos := make([]int64, k)
	dr := noise.Stream(cfg.Seed, run, tagPolicy+3)
	var q arrivals
	for t := int64(1); t <= cfg.Horizon; t++ {
		if t&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		for len(q) > 0 && q[0].at <= t {
			if err := arrive(d.Reward, d.Seen, heap.Pop(&q).(arrival)); err != nil {
				return err
			}
		}
		tk := d.Decide()
		if err := cfg.Delay.late(d.Overdue(), d.Default, func(t bandit.Ticket, _ float64) error { return d.Drop(t) }); err != nil {
			return err
		}
		if tk.Arm < 0 || tk.Arm >= k {
			return fmt.Errorf("sim: invalid arm %d", tk.Arm)
		}
		a := tk.Arm
		if streams[a] == nil {
			streams[a] = inst.Stream(cfg.Seed, run, a, cfg.Horizon)
		}
		r := streams[a].Sum(pos[a], pos[a]+1)
		pos[a]++
		c.add(1, gaps[a])
		if tk.Learns() || cfg.Delay.Miss > 0 {
			// Overflow rewards come too (when rewards can be missing:
			// their delays tell how long rewards take, Delayed.Seen).
			at := t + 1 + cfg.Delay.draw(dr)
			if !cfg.Delay.missed(dr) {
				heap.Push(&q, arrival{at: at, seq: t, ticket: tk, reward: r})
			}
		}
	}
	return nil
}

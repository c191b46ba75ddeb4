package sim

import (
	"container/heap"
	"context"
	"errors"
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
// Finite-armed and linear policies decide through bandit.Pooled, the
// decision service's rule: a decision whose reward is overdue (about
// twice the time the rewards that do come take) is replaced, and its
// reward is learned whenever it comes within the window, Window
// decisions after it; a reward that has not come by then takes the
// reward Default when Defaults is set, or is dropped, and one that comes
// later is not learned. Contextual policies decide through
// contextual.Delayed, whose overdue slots are resolved at once (default
// or drop). Missing rewards here are missing at random, so dropping
// them is unbiased; a default suits rewards whose absence means an
// outcome (no conversion: 0).
type Delay struct {
	// Fixed is D when Mean is 0.
	Fixed int64
	// Mean, when positive, draws D ~ Geometric(1/(1+Mean)): P(D = k) =
	// p (1-p)^k, whose mean is Mean.
	Mean float64
	// Miss is the probability that a reward never arrives.
	Miss float64
	// Default is the reward of a decision whose reward has not come by
	// the end of its window (finite-armed and linear policies) or once
	// overdue (contextual ones), when Defaults is set.
	Default  float64
	Defaults bool
	// Window is the reward window in decisions (0: DefaultWindow).
	Window int64
	// Late selects for contextual policies the decision service's rule
	// since its rules version 5 (contextual.NewDelayedLate): an overdue
	// choice is withdrawn from V and its reward learned when it comes in
	// its window; one that does not come takes the default, or is
	// dropped, at the window's end. Without it (the default, whose
	// pinned digests stay) an overdue choice is settled at once.
	// Finite-armed and linear policies learn every reward in its window
	// either way (bandit.Pooled).
	Late bool
}

// DefaultWindow is the reward window, in decisions, of a Delay that
// sets none: ten minutes (the service's default window) at about 17
// decisions a second.
const DefaultWindow = 10000

// window returns the reward window in decisions.
func (d Delay) window() int64 {
	if d.Window > 0 {
		return d.Window
	}
	return DefaultWindow
}

// ParseDelay parses "D" (a fixed number of decisions) or "geom:MEAN",
// optionally followed by ",miss=P", ",default=R", ",window=W" and
// ",late=1".
func ParseDelay(s string) (Delay, error) {
	parts := strings.Split(s, ",")
	head := parts[0]
	var d Delay
	if m, ok := strings.CutPrefix(head, "geom:"); ok {
		x, err := strconv.ParseFloat(m, 64)
		if err != nil || !(x > 0) || x > 1e12 {
			return Delay{}, errorf("delay geom:MEAN needs a mean in (0, 1e12], got %q", m)
		}
		d.Mean = x
	} else {
		f, err := strconv.ParseInt(head, 10, 64)
		if err != nil || f < 0 || f > 1<<40 {
			return Delay{}, errorf("delay must be a number of decisions in [0, 2^40] or geom:MEAN, then ,miss=P and ,default=R, got %q", s)
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
			return Delay{}, errorf("delay option %q needs a number", kv)
		case k == "miss" && once && x >= 0 && x < 1:
			d.Miss = x
		case k == "default" && once:
			d.Default, d.Defaults = x, true
		case k == "window" && once && x >= 1 && x <= 1<<40 && x == math.Trunc(x):
			d.Window = int64(x)
		case k == "late" && once && x == 1:
			d.Late = true
		default:
			return Delay{}, errorf("delay option %q: known are miss=P (P in [0, 1)), default=R, window=W (decisions, 1 to 2^40) and late=1, once each", kv)
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
	if d.Window > 0 {
		s += ",window=" + strconv.FormatInt(d.Window, 10)
	}
	if d.Late {
		s += ",late=1"
	}
	return s
}

// IsZero reports whether there is no delay.
func (d Delay) IsZero() bool { return d == Delay{} }

// missed draws whether a reward never arrives (no draw when Miss is 0,
// so that runs without misses keep their numbers).
func (d Delay) missed(r *rand.Rand) bool { return d.Miss > 0 && r.Float64() < d.Miss }

// late resolves the overdue slots of a contextual delayed policy
// (bandit.Waits): each takes the default reward, or is dropped.
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
	// expires marks the end of the window of a decision whose reward
	// does not come in it (Pooled): a default or a drop.
	expires bool
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

// runDelayed plays p one decision at a time through bandit.Pooled, the
// service's own rule for pending rewards, with rewards arriving after
// cfg.Delay. Rewards are the Stepped mode's (each arm's stack, in
// order), so that with a zero delay the run is the Stepped run.
func runDelayed(ctx context.Context, cfg *Config, p bandit.Policy, run uint64, c *curve) error {
	inst := cfg.Env
	k := inst.Arms()
	gaps := env.Gaps(inst.Means())
	d := bandit.NewPooled(p)
	streams := make([]*env.Stream, k)
	pos := make([]int64, k)
	dr := noise.Stream(cfg.Seed, run, tagPolicy+3)
	w := cfg.Delay.window()
	var q arrivals
	for t := int64(1); t <= cfg.Horizon; t++ {
		if t&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		for len(q) > 0 && q[0].at <= t {
			a := heap.Pop(&q).(arrival)
			var err error
			switch {
			case !a.expires:
				err = d.Reward(a.ticket, a.reward)
			case cfg.Delay.Defaults:
				err = d.Default(a.ticket, cfg.Delay.Default)
			default:
				err = d.Drop(a.ticket)
			}
			if err != nil {
				return err
			}
		}
		tk, err := d.Decide()
		if err != nil {
			return err
		}
		if tk.Arm < 0 || tk.Arm >= k {
			return errorf("invalid arm %d", tk.Arm)
		}
		a := tk.Arm
		if streams[a] == nil {
			streams[a] = inst.Stream(cfg.Seed, run, a, cfg.Horizon)
		}
		r := streams[a].Sum(pos[a], pos[a]+1)
		pos[a]++
		c.add(1, gaps[a])
		lag := cfg.Delay.draw(dr)
		if cfg.Delay.missed(dr) || lag >= w {
			heap.Push(&q, arrival{at: t + w, seq: t, ticket: tk, expires: true})
		} else {
			heap.Push(&q, arrival{at: t + 1 + lag, seq: t, ticket: tk, reward: r})
		}
	}
	return nil
}

package sim

import (
	"container/heap"
	"context"
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
// D fixed, or geometric on {0, 1, ...} with a given mean. The zero Delay
// is no delay at all, and a run with it is the plain step-by-step run.
type Delay struct {
	// Fixed is D when Mean is 0.
	Fixed int64
	// Mean, when positive, draws D ~ Geometric(1/(1+Mean)): P(D = k) =
	// p (1-p)^k, whose mean is Mean.
	Mean float64
}

// ParseDelay parses "D" (a fixed number of decisions) or "geom:MEAN".
func ParseDelay(s string) (Delay, error) {
	if m, ok := strings.CutPrefix(s, "geom:"); ok {
		x, err := strconv.ParseFloat(m, 64)
		if err != nil || !(x > 0) || x > 1e12 {
			return Delay{}, fmt.Errorf("sim: delay geom:MEAN needs a mean in (0, 1e12], got %q", m)
		}
		return Delay{Mean: x}, nil
	}
	d, err := strconv.ParseInt(s, 10, 64)
	if err != nil || d < 0 || d > 1<<40 {
		return Delay{}, fmt.Errorf("sim: delay must be a number of decisions in [0, 2^40] or geom:MEAN, got %q", s)
	}
	return Delay{Fixed: d}, nil
}

// String returns the spec ParseDelay reads.
func (d Delay) String() string {
	if d.Mean > 0 {
		return "geom:" + strconv.FormatFloat(d.Mean, 'g', -1, 64)
	}
	return strconv.FormatInt(d.Fixed, 10)
}

// IsZero reports whether there is no delay.
func (d Delay) IsZero() bool { return d == Delay{} }

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
			a := heap.Pop(&q).(arrival)
			if err := d.Reward(a.ticket, a.reward); err != nil {
				return err
			}
		}
		tk := d.Decide()
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
		if tk.Learns() {
			heap.Push(&q, arrival{at: t + 1 + cfg.Delay.draw(dr), seq: t, ticket: tk, reward: r})
		}
	}
	return nil
}

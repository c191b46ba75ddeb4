package ope

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// TestOBPDataset: an Open Bandit Dataset CSV (its header as the dataset
// publishes it: an unnamed index, timestamp, item_id, position, click,
// propensity_score, user_feature_*, user-item_affinity_*) is detected
// from its header, K is its number of affinity columns, and IPS and
// SNIPS are the direct sums; a click that is not a number is refused
// with its line and column.
func TestOBPDataset(t *testing.T) {
	const k = 3
	r := rand.New(rand.NewPCG(4, 4))
	var b strings.Builder
	b.WriteString(",timestamp,item_id,position,click,propensity_score,user_feature_0,user_feature_1,user-item_affinity_0,user-item_affinity_1,user-item_affinity_2\n")
	var ipsSum, wSum float64
	n := 400
	for i := range n {
		a := r.IntN(k)
		ps := []float64{0.2, 0.3, 0.5}[a]
		click := r.IntN(2)
		fmt.Fprintf(&b, "%d,2019-11-24 00:00:%02d,%d,%d,%d,%g,%x,%x,%g,%g,%g\n", i, i%60, a, 1+r.IntN(3), click, ps, r.IntN(4), r.IntN(2), r.Float64(), r.Float64(), r.Float64())
		w := 1.0 / k / ps
		ipsSum += w * float64(click)
		wSum += w
	}
	res, err := Evaluate(opener([]byte(b.String())), Uniform{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Arms != k || res.Events != n {
		t.Fatalf("%d actions, %d events; want %d, %d", res.Arms, res.Events, k, n)
	}
	for _, e := range res.Estimate {
		want := map[string]float64{"ips": ipsSum / float64(n), "snips": ipsSum / wSum}[e.Name]
		if (e.Name == "ips" || e.Name == "snips") && math.Abs(e.Value-want) > 1e-12 {
			t.Errorf("%s = %.15g, the direct sum %.15g", e.Name, e.Value, want)
		}
	}
	bad := strings.Replace(b.String(), ",0.2,", ",0,", 1) // a propensity of 0
	_, err = Evaluate(opener([]byte(bad)), Uniform{}, Options{})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "propensity_score" {
		t.Errorf("a propensity of 0: %v, want the field propensity_score", err)
	}
}

// TestFormatNamed: a format named that the content is not is refused at
// line 1; an unknown format, or hashing bits for a format without
// hashed features, are refused as options.
func TestFormatNamed(t *testing.T) {
	log := []byte("{\"action\":0,\"reward\":1,\"pscore\":0.5}\n")
	for _, f := range []string{"csv", "obp"} {
		var le *LogError
		if _, err := Evaluate(opener(log), Uniform{}, Options{Arms: 2, Reading: Reading{Format: f}}); !errors.As(err, &le) || le.Line != 1 {
			t.Errorf("a JSON log named %s: %v", f, err)
		}
	}
	var oe *OptionError
	if _, err := Evaluate(opener(log), Uniform{}, Options{Arms: 2, Reading: Reading{HashBits: 4}}); !errors.As(err, &oe) || oe.Field != "hash-bits" {
		t.Errorf("hashing bits for a log detected as jsonl: %v, want an OptionError on hash-bits", err)
	}
	for _, c := range []struct {
		format string
		bits   int
		field  string
	}{{"xml", 0, "format"}, {"jsonl", 4, "hash-bits"}, {"dsjson", 40, "hash-bits"}} {
		var oe *OptionError
		if _, err := NewReading(c.format, c.bits); !errors.As(err, &oe) || oe.Field != c.field {
			t.Errorf("%s, %d bits: %v, want an OptionError on %s", c.format, c.bits, err, c.field)
		}
	}
}

// TestMaxEventsPerUnit: with a bound of 2, the third and later events of
// a unit are dropped and counted (IPS is then the mean over the kept
// ones), an event without a unit_id is refused at its line, and a
// private release's sensitivity is twice one event's.
func TestMaxEventsPerUnit(t *testing.T) {
	log := "{\"unit_id\":\"a\",\"action\":0,\"reward\":1,\"pscore\":0.5}\n" +
		"{\"unit_id\":\"a\",\"action\":0,\"reward\":1,\"pscore\":0.5}\n" +
		"{\"unit_id\":\"a\",\"action\":0,\"reward\":0,\"pscore\":0.5}\n" +
		"{\"unit_id\":\"b\",\"action\":1,\"reward\":0,\"pscore\":0.5}\n" +
		"{\"unit_id\":\"a\",\"action\":1,\"reward\":0,\"pscore\":0.5}\n"
	bounds, _ := mechanism.NewBounds(0, 1)
	o := Options{Arms: 2, Clip: 2, Rewards: &bounds, MaxEventsPerUnit: 2}
	res, err := Evaluate(opener([]byte(log)), Always(0), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != 3 || res.DroppedOverUnitCap != 2 {
		t.Fatalf("%d events kept, %d dropped; want 3 and 2", res.Events, res.DroppedOverUnitCap)
	}
	if ips := res.Estimate[1].Value; math.Abs(ips-4.0/3) > 1e-15 { // weights 2, 2, 0; rewards 1, 1, 0
		t.Errorf("IPS %v over the kept events, want 4/3", ips)
	}
	rho, _ := privacy.NewZCDP(1)
	one := *res
	one.opts.MaxEventsPerUnit = 0
	r1, err := Private(&one, "ips", rho, noise.NewFast(1))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Private(res, "ips", rho, noise.NewFast(1))
	if err != nil {
		t.Fatal(err)
	}
	if r2.Sensitivity != 2*r1.Sensitivity {
		t.Errorf("sensitivity %v with 2 events a unit, %v with one: want twice", r2.Sensitivity, r1.Sensitivity)
	}
	noUnit := log + "{\"action\":1,\"reward\":0,\"pscore\":0.5}\n"
	var le *LogError
	if _, err := Evaluate(opener([]byte(noUnit)), Always(0), o); !errors.As(err, &le) || le.Line != 6 {
		t.Errorf("an event without unit_id: %v, want a LogError at line 6", err)
	}
}

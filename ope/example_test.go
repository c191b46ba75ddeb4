package ope_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/ope"
	"github.com/dpbandit/dpbandit/privacy"
)

// Evaluate "always action 0" on a log of a uniform logging policy over
// two actions, then release its IPS estimate under 0.5-zCDP through a
// ledger whose total is 1: the release is recorded once, and the ledger
// counts what it spent.
func Example() {
	log := []byte(`{"action":0,"reward":1,"pscore":0.5}
{"action":1,"reward":0,"pscore":0.5}
{"action":0,"reward":0,"pscore":0.5}
{"action":0,"reward":1,"pscore":0.5}
`)
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(log)), nil }
	unit := mechanism.Unit
	res, err := ope.Evaluate(open, ope.Always(0), ope.Options{Arms: 2, Clip: 2, Rewards: &unit})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("IPS %.2f on %d events\n", res.Estimate[1].Value, res.Events)

	dir, _ := os.MkdirTemp("", "ope")
	defer os.RemoveAll(dir)
	book := ope.Ledger{Path: filepath.Join(dir, "releases.json"), Total: new(1.0)}
	b, _ := privacy.NewZCDP(0.5)
	rel, reused, err := book.ReleaseOnce("always-0", func() (ope.Release, error) {
		return ope.Private(res, "ips", b, noise.NewFast(1)) // a deployment draws from noise.Secure
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := book.Read()
	fmt.Printf("released with %s noise of scale %.2f (reused: %v); rho %.1f of %.0f spent\n", rel.Mechanism, rel.Scale, reused, st.Spent, *st.Total)
	// Output:
	// IPS 1.00 on 4 events
	// released with gaussian noise of scale 0.50 (reused: false); rho 0.5 of 1 spent
}

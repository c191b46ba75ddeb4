package engine

import (
	"context"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/importer"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
)

// State returns what the API shows of an experiment, once every change
// it reflects is durable: a release is shown only after it is stored.
func (x *Experiment) State(ctx context.Context) (outcome.State, error) {
	st, last := x.view()
	// A change whose submit failed is in the snapshot, never in the
	// store; the writer had failed before that submit returned, and the
	// snapshot was taken after (both under x.mu): checked here, it is
	// seen.
	if err := x.env.Writer.Failed(); err != nil {
		return outcome.State{}, fault.Errorf(fault.Unavailable, "the service stopped after a store failure; its memory may be ahead of the store, so it shows nothing: %v", err)
	}
	if last != nil {
		if err := x.env.Writer.Wait(ctx, last); err != nil {
			return outcome.State{}, err
		}
	}
	return st, nil
}

// view returns the experiment's state and the durable channel of the
// last change it reflects.
func (x *Experiment) view() (outcome.State, chan struct{}) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.pol == nil { // it failed to load: only why
		return outcome.State{Definition: x.def, Failed: x.failed.Error()}, nil
	}
	st := outcome.State{Definition: x.def, Counts: x.n, Awaiting: outcome.Awaiting(x.n), Pulls: append([]int64(nil), x.pulls...), Releases: int(x.nrel),
		Recent: append([]store.Release{}, x.recent...)}
	st.ShowPolicy(x.pol, x.def.Algorithm, x.failed != nil)
	if imp := x.imported; imp != (importer.Totals{}) {
		st.Imported = &imp
	}
	st.Apprentice = x.appr.State()
	if x.failed != nil {
		st.Failed = x.failed.Error()
	}
	return st, x.last
}

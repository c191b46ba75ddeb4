package enginetest

import (
	"context"
	"errors"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/importer"
)

// errStop is the import failure with which Stop stops an experiment.
var errStop = errors.New("enginetest: an import failure of the test")

// Stop stops the experiment id as a failed policy does: an import that
// fails once it took a decision (engine.Experiment.RunImport; its
// decision, on a contextual experiment, fails the policy itself). The
// experiment then answers Unavailable until a restart.
func (h *Harness) Stop(id string) {
	h.t.Helper()
	_, err := h.Get(id).RunImport(context.Background(), func(s importer.Session) error {
		if _, err := s.Decide(nil, func(int) (string, string) { return "stop", "stop" }); err != nil {
			return err
		}
		return errStop
	})
	if fault.Of(err) != fault.Unavailable {
		h.t.Fatalf("an import that failed after a decision: %v (kind %v), want the experiment stopped", err, fault.Of(err))
	}
}

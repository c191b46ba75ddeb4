package service

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/dpbandit/dpbandit/service/store"

	"github.com/dpbandit/dpbandit/service/fault"
)

// writer commits changes in the order they were submitted, in groups: it
// takes every change waiting when the previous commit ends and writes
// them in one transaction (group commit), so that a commit's cost is
// shared by every request that arrived during the previous one.
type writer struct {
	store store.Committer
	fail  func(error)
	m     *metrics
	ch    chan *store.Change
	wg    sync.WaitGroup

	// mu guards the channel's closing: submit holds it shared while it
	// checks and sends, close exclusively while it closes.
	mu      sync.RWMutex
	closing bool
	// failed is the store's error, once a commit failed; dead is closed
	// then.
	failed atomic.Pointer[error]
	dead   chan struct{}
}

// maxGroup bounds the changes of one transaction.
const maxGroup = 4096

func newWriter(st store.Committer, fail func(error), m *metrics) *writer {
	w := &writer{store: st, fail: fail, m: m, ch: make(chan *store.Change, maxGroup), dead: make(chan struct{})}
	w.wg.Add(1)
	go w.run()
	return w
}

// Submit queues a change, whose durable channel (set by the caller) is
// closed once it is committed; it fails if the writer has stopped.
// Callers submit under the experiment's lock, so an experiment's changes
// are queued, and committed, in the order they were made.
func (w *writer) Submit(c *store.Change) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	switch {
	case w.failed.Load() != nil:
		return *w.failed.Load()
	case w.closing:
		return errStopped
	}
	w.ch <- c
	return nil
}

// Wait waits until durable is closed (the change is committed), the
// writer fails, or ctx ends.
func (w *writer) Wait(ctx context.Context, durable chan struct{}) error {
	select {
	case <-durable:
		return nil
	case <-w.dead:
		return fault.Errorf(fault.Unavailable, "the store failed; the service stopped taking writes: %v", *w.failed.Load())
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *writer) run() {
	defer w.wg.Done()
	batch := make([]*store.Change, 0, maxGroup)
	for c := range w.ch {
		batch = append(batch[:0], c)
	drain:
		for len(batch) < maxGroup {
			select {
			case c, ok := <-w.ch:
				if !ok {
					break drain
				}
				batch = append(batch, c)
			default:
				break drain
			}
		}
		if w.failed.Load() != nil {
			continue
		}
		err := w.store.Commit(context.Background(), batch)
		w.m.commits.Inc()
		w.m.group.Observe(float64(len(batch)))
		if err != nil {
			// The service's failure is recorded before any waiting
			// request is told: a client answered 503 finds Err and
			// /healthz already reporting it.
			w.failed.Store(&err)
			w.fail(err)
			close(w.dead)
			continue
		}
		for _, c := range batch {
			if c.Durable != nil {
				close(c.Durable)
			}
			if c.Folded != nil {
				close(c.Folded)
			}
		}
	}
}

// Failed returns the store's error, once a commit failed.
func (w *writer) Failed() error {
	if p := w.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// close commits what is queued and stops; later submits fail.
func (w *writer) close() {
	w.mu.Lock()
	if !w.closing {
		w.closing = true
		close(w.ch)
	}
	w.mu.Unlock()
	w.wg.Wait()
}

// errStopped is returned for writes after a store failure.
var errStopped = errors.New("service: stopped after a store failure")

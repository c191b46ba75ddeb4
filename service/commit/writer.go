// Package commit is the service's group-commit writer: it commits the
// experiments' changes in the order they were submitted, in groups.
package commit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/dpbandit/dpbandit/service/store"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpbandit/dpbandit/service/fault"
)

// Writer commits changes in the order they were submitted, in groups: it
// takes every change waiting when the previous commit ends and writes
// them in one transaction (group commit), so that a commit's cost is
// shared by every request that arrived during the previous one. A
// change's Group is committed with it, in the same transaction, however
// many changes that makes.
type Writer struct {
	store store.Committer
	fail  func(error)
	// commits counts the transactions, group observes their sizes
	// (both may be nil)
	commits prometheus.Counter
	group   prometheus.Observer
	ch      chan *store.Change
	wg      sync.WaitGroup

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

// New starts a writer on st. fail is called with the store's error once
// a commit fails, before any waiting request is told; commits and group
// count the transactions and observe their sizes (nil: not counted).
func New(st store.Committer, fail func(error), commits prometheus.Counter, group prometheus.Observer) *Writer {
	w := &Writer{store: st, fail: fail, commits: commits, group: group, ch: make(chan *store.Change, maxGroup), dead: make(chan struct{})}
	w.wg.Add(1)
	go w.run()
	return w
}

// Submit queues a change, whose durable channel (set by the caller) is
// closed once it is committed; it fails if the writer has stopped.
// Callers submit under the experiment's lock, so an experiment's changes
// are queued, and committed, in the order they were made.
func (w *Writer) Submit(c *store.Change) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	switch {
	case w.failed.Load() != nil:
		return *w.failed.Load()
	case w.closing:
		return ErrStopped
	}
	w.ch <- c
	return nil
}

// Wait waits until durable is closed (the change is committed), the
// writer fails, or ctx ends.
func (w *Writer) Wait(ctx context.Context, durable chan struct{}) error {
	select {
	case <-durable:
		return nil
	case <-w.dead:
		return fault.Errorf(fault.Unavailable, "the store failed; the service stopped taking writes: %v", *w.failed.Load())
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Writer) run() {
	defer w.wg.Done()
	batch := make([]*store.Change, 0, maxGroup)
	for c := range w.ch {
		batch = append(append(batch[:0], c), c.Group...)
	drain:
		for len(batch) < maxGroup {
			select {
			case c, ok := <-w.ch:
				if !ok {
					break drain
				}
				batch = append(append(batch, c), c.Group...)
			default:
				break drain
			}
		}
		if w.failed.Load() != nil {
			continue
		}
		err := w.store.Commit(context.Background(), batch)
		if w.commits != nil {
			w.commits.Inc()
		}
		if w.group != nil {
			w.group.Observe(float64(len(batch)))
		}
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
func (w *Writer) Failed() error {
	if p := w.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Close commits what is queued and stops; later submits fail.
func (w *Writer) Close() {
	w.mu.Lock()
	if !w.closing {
		w.closing = true
		close(w.ch)
	}
	w.mu.Unlock()
	w.wg.Wait()
}

// ErrStopped is returned for writes after a store failure.
var ErrStopped = errors.New("service: stopped after a store failure")

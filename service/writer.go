package service

import (
	"context"
	"sync"
	"sync/atomic"
)

// writer commits changes in the order they were submitted, in groups: it
// takes every change waiting when the previous commit ends and writes
// them in one transaction (group commit), so that a commit's cost is
// shared by every request that arrived during the previous one.
type writer struct {
	store Store
	fail  func(error)
	m     *metrics
	ch    chan job
	wg    sync.WaitGroup

	// mu guards the channel's closing: submit holds it shared while it
	// checks and sends, close exclusively while it closes.
	mu      sync.RWMutex
	closing bool
	// failed is the store's error, once a commit failed.
	failed atomic.Pointer[error]
}

type job struct {
	c    *Change
	done chan error
}

// maxGroup bounds the changes of one transaction.
const maxGroup = 4096

func newWriter(st Store, fail func(error), m *metrics) *writer {
	w := &writer{store: st, fail: fail, m: m, ch: make(chan job, maxGroup)}
	w.wg.Add(1)
	go w.run()
	return w
}

// submit queues a change; the channel returned gets the commit's error.
// Callers submit under the experiment's lock, so an experiment's changes
// are queued, and committed, in the order they were made.
func (w *writer) submit(c *Change) <-chan error {
	done := make(chan error, 1)
	w.mu.RLock()
	defer w.mu.RUnlock()
	switch {
	case w.failed.Load() != nil:
		done <- *w.failed.Load()
	case w.closing:
		done <- errStopped
	default:
		w.ch <- job{c, done}
	}
	return done
}

func (w *writer) run() {
	defer w.wg.Done()
	batch := make([]job, 0, maxGroup)
	changes := make([]*Change, 0, maxGroup)
	for j := range w.ch {
		batch = append(batch[:0], j)
	drain:
		for len(batch) < maxGroup {
			select {
			case j, ok := <-w.ch:
				if !ok {
					break drain
				}
				batch = append(batch, j)
			default:
				break drain
			}
		}
		var err error
		if p := w.failed.Load(); p != nil {
			err = *p
		} else {
			changes = changes[:0]
			for _, j := range batch {
				changes = append(changes, j.c)
			}
			err = w.store.Commit(context.Background(), changes)
			w.m.commits.Inc()
			w.m.group.Observe(float64(len(batch)))
			if err != nil {
				w.failed.Store(&err)
				w.fail(err)
			}
		}
		for _, j := range batch {
			j.done <- err
		}
	}
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

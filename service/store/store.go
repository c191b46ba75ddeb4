// Package store is the service's durable state, as the engine sees it:
// the rows it writes and reads (experiments, events, releases, draws,
// snapshots, the ledger) and small interfaces over them. Two stores
// implement them: SQLite (modernc.org/sqlite, the embedded default) and
// PostgreSQL (pgx/v5, which replicas share); see Open in package
// service. Nothing here knows HTTP or the policies.
package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Owner is a store's ownership: one service writes it at a time.
type Owner interface {
	// Own makes the caller the store's only writer, waiting while another
	// live service holds it (waiting is called once, with that service's
	// description) and fencing every earlier owner: see ErrFenced. Commit
	// and CreateExperiment fail before Own.
	Own(ctx context.Context, holder string, waiting func(current string)) error
	// Owned returns ErrFenced once another service has taken the store.
	Owned(ctx context.Context) error
}

// Registry holds the experiments' rows.
type Registry interface {
	// CreateExperiment stores a new experiment; ErrExists if its key is
	// taken.
	CreateExperiment(ctx context.Context, e Experiment) error
	// Experiments returns every experiment's row, oldest first.
	Experiments(ctx context.Context) ([]Experiment, error)
}

// Histories reads what an experiment did.
type Histories interface {
	// History returns what is needed to rebuild an experiment from a
	// mark (the zero Mark: from its start): the events decided after
	// the mark and those it lists, in decision order, and the releases
	// and draws from the mark's, in order.
	History(ctx context.Context, exp string, from Mark) (*History, error)
	// Snapshot returns an experiment's last snapshot, or nil.
	Snapshot(ctx context.Context, exp string) (*Snapshot, error)
	// Event returns an experiment's event of an event id, or nil.
	Event(ctx context.Context, exp, eventID string) (*Event, error)
	// EventIDs calls fn with the event id of every event of an
	// experiment decided up to operation upTo.
	EventIDs(ctx context.Context, exp string, upTo int64, fn func(string)) error
	// Log calls fn for every rewarded event of an experiment, in order.
	Log(ctx context.Context, exp string, fn func(Event) error) error
}

// Units reads the ledger: what each unit spent.
type Units interface {
	// UnitRewards returns the rewards of a unit an experiment learned.
	UnitRewards(ctx context.Context, exp, unit string) (int64, error)
	// UnitTotal returns a unit's spend over its tenant's experiments.
	UnitTotal(ctx context.Context, tenant, unit string) (int64, error)
	// UnitStats returns the number of units an experiment learned from
	// and the most rewards it learned from one.
	UnitStats(ctx context.Context, exp string) (units, most int64, err error)
	// LedgerUnits calls fn for every unit the ledger holds, with each
	// experiment it has a row in.
	LedgerUnits(ctx context.Context, fn func(u UnitKey, exp string)) error
	// Ledger returns a tenant's unit's ledger rows.
	Ledger(ctx context.Context, tenant, unit string) ([]LedgerRow, error)
}

// Committer writes changes.
type Committer interface {
	// Commit writes a batch of changes in one transaction, which fails
	// with ErrFenced, changing nothing, if another service owns the store.
	Commit(ctx context.Context, batch []*Change) error
	// WritesAsItGoes reports whether every commit indexes its events and
	// debits its ledger rows itself (PostgreSQL), so that the service
	// need not fold them (Fold): a store that replicas share must.
	WritesAsItGoes() bool
}

// Store is the service's durable state.
type Store interface {
	Owner
	Registry
	Histories
	Units
	Committer
	Evaluations
	// Close releases the database.
	Close() error
}

// Experiment is an experiment's row: its definition, which the store
// keeps as the engine wrote it, and what changes beside it.
type Experiment struct {
	// Key is the experiment's key: "tenant/id".
	Key string
	// Tenant owns it.
	Tenant string
	// Definition is the engine's encoding of its definition (JSON).
	Definition string
	// Created is when it was created, unix nanoseconds.
	Created int64
	// Status is its lifecycle status (Active, Paused, Archived).
	Status string
	// Folded is the operation up to which its event ids are in the
	// event-id index and its debits in the ledger (Fold).
	Folded int64
}

// LookupTimeout bounds a lookup in the store on a request's path.
const LookupTimeout = 10 * time.Second

// ErrExists is returned when an experiment id is already taken.
var ErrExists = errors.New("service: the experiment exists")

// ErrFenced is returned by a commit of a service that no longer owns the
// store (another service took it over since), or of a replica that no
// longer holds the lease of an experiment it writes.
var ErrFenced = errors.New("service: fenced: another service has taken over the store, or another replica the experiment's lease; this one writes it no more")

// Experiment lifecycle statuses, as stored.
const (
	// Active: decisions and rewards are served.
	Active = "active"
	// Paused: new decisions are refused (409); rewards of earlier ones
	// are still taken and learned.
	Paused = "paused"
	// Archived: every request about the experiment answers 410; it is
	// not loaded, and its ledger rows stay (its debits stay spent).
	Archived = "archived"
)

// Event statuses, as stored.
const (
	// Pending: decided, no reward yet.
	Pending = "pending"
	// Learned: the reward reached the policy.
	Learned = "learned"
	// Defaulted: no reward in the window; the default reward was learned.
	Defaulted = "defaulted"
	// Ignored: the reward was acknowledged, not learned (see Reason).
	Ignored = "ignored"
	// Expired: no reward in the window and no default: not learned.
	Expired = "expired"
)

// Event is one decision and what became of its reward.
type Event struct {
	Seq     int64    // the decision's operation number
	ID      string   // the client's event_id
	Unit    string   // the privacy unit
	Context string   // the context, as JSON, when given
	Arm     int      // the arm decided
	Plan    int64    // the plan (policy version) it belongs to; 0: overflow
	Decided int64    // unix nanoseconds
	Status  string   // Pending, Learned, ...
	Reason  string   // why an Ignored reward was not learned
	Reward  *float64 // the reward; nil while pending, or once deleted
	RSeq    int64    // the operation number of its reward or drop; 0: none
	At      int64    // when the reward (or expiry) was recorded, unix ns
	// PScore is the probability with which the logging policy chose Arm
	// (1 without exploration), and PolicyArm the arm the policy itself
	// chose (-1 when not recorded): with an exploration rate e over K
	// arms, every arm has probability e/K and PolicyArm 1 - e more.
	PScore    float64
	PolicyArm int
	// Debit is the nano-rho its learned reward debited from its unit.
	Debit int64
	// Shared, when set, is a part of Context that many events share,
	// which a store may keep once (Shared); only an Insert's is read.
	Shared *Shared `json:"-"`
}

// Shared is a part of an event's Context that many events share: the
// action list of a Personalizer rank, which repeats from call to call. A
// store keeps each distinct part once, by its SHA-256, and the event its
// Context without the part and a reference; reads give the Context back
// whole, byte for byte.
type Shared struct {
	// At is where the part starts in the Context; Text is the part,
	// Context[At:At+len(Text)].
	At   int
	Text string
	// Digest is the SHA-256 of Text.
	Digest [32]byte
}

// Split returns an event's Context without its shared part and the
// part (nil when the event has none, or its Shared does not lie in its
// Context as it says).
func (e *Event) Split() (rest string, part *Shared) {
	p := e.Shared
	if p == nil || p.At < 0 || p.At+len(p.Text) > len(e.Context) || e.Context[p.At:p.At+len(p.Text)] != p.Text {
		return e.Context, nil
	}
	return e.Context[:p.At] + e.Context[p.At+len(p.Text):], p
}

// Join returns a Context stored without its shared part text, which
// stood at at.
func Join(rest string, at int, text string) (string, error) {
	if at < 0 || at > len(rest) {
		return "", fmt.Errorf("service: a stored context of %d bytes refers to a shared part at byte %d", len(rest), at)
	}
	return rest[:at] + text + rest[at:], nil
}

// Release is one value released by a policy's noise: persisted before
// any decision uses it, and returned as is on replay, never re-drawn.
type Release struct {
	Seq         int64   `json:"operation"`   // the operation that released it
	Kind        string  `json:"mechanism"`   // "gaussian" or "laplace"
	Scale       float64 `json:"noise_scale"` // sigma or Laplace scale
	Sensitivity float64 `json:"sensitivity"`
	Value       float64 `json:"value"`
	Arm         int     `json:"arm"` // the arm of the plan it was released in (-1: none)
	At          int64   `json:"at_unix_nano"`
}

// History is an experiment's durable state, from a Mark.
type History struct {
	Events   []Event
	Releases []Release
	Draws    []uint64
}

// Mark is where a History starts: after operation Seq, at release
// Releases and draw Draws, with the earlier events Pending (by seq) too.
type Mark struct {
	Seq, Releases, Draws int64
	Pending              []int64
}

// Snapshot is an experiment's state after operation Seq (package
// service/snapshot's format, Encode), with the SHA-256 of State: a restart loads it and replays
// only the operations after Seq.
type Snapshot struct {
	Seq   int64
	State []byte
	Sum   []byte
}

// LedgerRow is what one unit spent in one experiment: Rewards learned,
// NanoRho the zCDP they cost, in units of 1e-9 rho.
type LedgerRow struct {
	Unit       string `json:"unit_id"`
	Experiment string `json:"experiment"`
	Rewards    int64  `json:"rewards"`
	NanoRho    int64  `json:"nano_rho"`
}

// Change is one operation's writes: at most one event insert or update,
// releases and draws, and at times a snapshot and a fold (Fold).
type Change struct {
	Exp      string
	Insert   *Event // a new decision
	Update   *Event // a reward, an expiry or a deletion of the reward
	Debit    int64  // nano-rho debited from Update's unit (0: none), stored with it
	Releases []Release
	Draws    []uint64
	DrawBase int64 // index of the first draw
	RelBase  int64 // index of the first release
	Forget   Span  // the decisions whose stored rewards are deleted lie in it
	// Keep lists, in order, decisions in Forget whose rewards stay: under
	// the pooled rule, those that wait for a release (the engine's covered).
	Keep   []int64
	Status string // the experiment's new lifecycle status ("": unchanged)
	// Definition is the experiment's new definition, as Registry's
	// Experiment.Definition holds it ("": unchanged): a change of its
	// settings (define.Setting), which replicas then read with the row.
	Definition string
	Snapshot   *Snapshot
	Fold       *Fold // what the change folds into the event-id index and the ledger (Fold)
	// Group are changes committed in the same transaction as this one,
	// right after it (an import's operations: all or nothing). The
	// service's writer never splits them; a store's Commit is given
	// them in the batch, in order, and never reads this field.
	Group []*Change

	// Durable is closed by the service's writer once the change is
	// committed, and Folded too when Fold is set (the fold's channel);
	// the store neither reads nor closes them.
	Durable, Folded chan struct{}
}

// Span is the smallest interval of decision seqs that holds a set of
// events; the zero value is empty (seqs start at 1). It holds the learned
// events whose rewards are stored and not yet released: without
// --keep-log only learned rewards are stored, and once the policy holds
// no unreleased reward (Forgetter.Unreleased is 0) every stored reward
// is covered by a release, so that all of those in the span may be
// deleted. The span, unlike a list of the events, does not grow with an
// episode (AdaC-UCB's last one holds up to half the history), neither in
// memory nor in each snapshot.
type Span struct{ Lo, Hi int64 }

// Add widens the span to hold seq.
func (p *Span) Add(seq int64) {
	if p.Empty() || seq < p.Lo {
		p.Lo = seq
	}
	p.Hi = max(p.Hi, seq)
}

// Empty reports whether the span holds no seq.
func (p Span) Empty() bool { return p.Hi == 0 }

// Except returns the spans that cover p but the seqs of keep (in
// increasing order).
func (p Span) Except(keep []int64) []Span {
	if p.Empty() {
		return nil
	}
	var out []Span
	lo := p.Lo
	for _, k := range keep {
		if k > p.Hi {
			break
		}
		if k > lo {
			out = append(out, Span{lo, k - 1})
		}
		lo = max(lo, k+1)
	}
	if lo <= p.Hi {
		out = append(out, Span{lo, p.Hi})
	}
	return out
}

// UnitKey names a unit: unit ids are their tenant's own.
type UnitKey struct{ Tenant, Unit string }

// Fold is what a change folds: the experiment's events decided in Index
// are indexed (but the change's own decision, written indexed), its
// debits since its last fold are added to the ledger, and Upto, its last
// operation, becomes its cursor.
type Fold struct {
	Upto   int64
	Index  Span
	Debits []Debit // by unit
	// Unreserved marks debits that no reservation added to their units'
	// spend rows (a replica without a cap, postgres/lease.go): the commit adds
	// them there with the ledger's, so that replicas with a cap count
	// them.
	Unreserved bool
}

// Debit is what a unit's learned rewards in a fold cost it.
type Debit struct {
	Unit          string
	Rewards, Nano int64
}

// ErrReplicasNeedPostgres is returned when replicas are asked of a
// SQLite store: it has one writer, the single service.
var ErrReplicasNeedPostgres = errors.New("service: replicas coordinate through PostgreSQL; a SQLite store is served by a single service (drop --replica, or use a postgres:// store)")

// UnitBudgetMismatchError is returned when a replica starts with a cap
// on a unit's ledger (Config.UnitBudget, --unit-budget) other than the
// one the live replicas enforce: the cap holds only if every replica
// enforces it.
type UnitBudgetMismatchError struct {
	// Replica is the starting replica's cap, Recorded the live replicas',
	// in nano-rho (0: none).
	Replica, Recorded int64
	// Live are the ids of the live replicas.
	Live []string
	// TTL is the lease time after which a stopped replica is no longer
	// live.
	TTL time.Duration
}

func (e *UnitBudgetMismatchError) Error() string {
	fix := "Start this one with --unit-budget " + capFlag(e.Recorded)
	if e.Recorded == 0 {
		fix = "Start this one without --unit-budget"
	}
	return fmt.Sprintf("service: this replica would enforce %s (--unit-budget), but the live replicas (%s) enforce %s, recorded in the store when the first of them started: "+
		"every replica must enforce one cap. %s; or, to change the cap, stop every replica, wait %v (a lease time), and start them all with the new value",
		capRho(e.Replica), strings.Join(e.Live, ", "), capRho(e.Recorded), fix, e.TTL)
}

// capRho describes a cap in nano-rho.
func capRho(nano int64) string {
	if nano == 0 {
		return "no cap"
	}
	return "a cap of " + capFlag(nano) + " rho"
}

// capFlag is a cap in nano-rho as --unit-budget takes it.
func capFlag(nano int64) string {
	return strconv.FormatFloat(float64(nano)/1e9, 'g', -1, 64)
}

// Replica describes a service among replicas.
type Replica struct {
	// ID names the replica among the others; unique per process start.
	ID string
	// Addr is the base URL at which the other replicas reach it (its
	// internal address, for forwarded requests).
	Addr string
}

// Replicated is what replicas coordinate through (the PostgreSQL
// store).
type Replicated interface {
	// Join registers the replica (or renews its registration) and takes
	// the store's shared lock, which excludes a single service. The
	// replicas' cap on a unit's ledger (unitBudget, nano-rho, 0: none)
	// is recorded by the first replica; a replica whose cap differs from
	// the live replicas' is refused (*UnitBudgetMismatchError).
	Join(ctx context.Context, r Replica, ttl time.Duration, unitBudget int64, waiting func()) error
	// Acquire takes an experiment's lease if take is set and the lease
	// is free or expired; it returns the live holder (this replica when
	// it took it; Replica{} when the lease is free; Addr "" when the
	// holder is not registered).
	Acquire(ctx context.Context, exp string, take bool) (holder Replica, err error)
	// Holder returns the live holder of an experiment's lease (Replica{}
	// when it is free, expired or was never taken).
	Holder(ctx context.Context, exp string) (Replica, error)
	// Reserve adds nano to a unit's spend over its tenant's experiments
	// unless that would exceed limit, in a transaction of its own
	// before the reward is learned; false: refused.
	Reserve(ctx context.Context, u UnitKey, nano, limit int64) (bool, error)
	// Renew extends every lease the replica holds and its registration,
	// and returns the experiments it still holds.
	Renew(ctx context.Context) (held map[string]bool, err error)
	// Release gives an experiment's lease up (after its last commit).
	Release(ctx context.Context, exp string) error
	// Leave removes the replica's registration.
	Leave(ctx context.Context) error
	// Live returns the registered replicas renewed within the lease time.
	Live(ctx context.Context) ([]Replica, error)
	// Leases returns every lease: experiment to holder ("" when free or
	// expired).
	Leases(ctx context.Context) (map[string]string, error)
	// FreeLeases returns the experiments whose leases are free or
	// expired, in key order.
	FreeLeases(ctx context.Context) ([]string, error)
	// Definition returns an experiment's definition; ok false when there
	// is none.
	Definition(ctx context.Context, exp string) (e Experiment, ok bool, err error)
}

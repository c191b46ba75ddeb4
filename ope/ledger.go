package ope

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"syscall"

	"github.com/dpbandit/dpbandit/internal/regfile"
	"github.com/dpbandit/dpbandit/privacy"
)

// Ledger is a file of private releases (JSON), each recorded under a key
// that names what was released, and optionally a total: a cap, in zCDP
// rho, on what the releases in the file spend together. zCDP composes by
// adding rho (Bun and Steinke 2016, Lemma 2.3), so the spend is the sum
// of the releases' Rho.
//
// The total guards against spending a log's budget by accident (one
// more target, one more estimator, a script run once too often); it is
// not a security boundary: whoever runs the evaluation holds the log.
type Ledger struct {
	Path string
	// Total caps the file's spend in rho; nil keeps the file's own (or
	// none). A cap of 0 allows no release; a negative, NaN or infinite
	// one is ErrTotal. A total is recorded in the file by its first use,
	// after which it binds every caller; it may be lowered, never raised.
	Total *float64
}

// ErrTotal is a ledger total that is not a cap: negative, NaN or
// infinite, given by the caller or read from the file (a *TotalError
// wraps it).
var ErrTotal = errorf("a ledger's total must be a finite rho >= 0")

// TotalError is a total that is not a cap: the caller's (File empty) or
// the one File records.
type TotalError struct {
	File  string
	Total float64
}

func (e *TotalError) Error() string { return "ope: " + e.Message() }

// Message is the error without the package's name.
func (e *TotalError) Message() string {
	if e.File == "" {
		return fmt.Sprintf("a ledger's total must be a finite rho >= 0, got %v", e.Total)
	}
	return fmt.Sprintf("release ledger %s: its total_rho must be a finite rho >= 0, got %v", e.File, e.Total)
}

// Unwrap makes a TotalError an ErrTotal.
func (e *TotalError) Unwrap() error { return ErrTotal }

// ErrTotalRaised is a ledger total above the one its file records.
var ErrTotalRaised = errorf("a ledger's total cannot be raised")

// OverTotalError refuses releases that would together take their
// ledger's spend past the total: Cost is theirs, summed.
type OverTotalError struct {
	Spent, Cost, Total float64
}

func (e *OverTotalError) Error() string { return "ope: " + e.Message() }

// Message is the error without the package's name.
func (e *OverTotalError) Message() string {
	return fmt.Sprintf("the ledger's releases have spent rho=%.6g of its total rho=%.6g; the releases asked would cost rho=%.6g more", e.Spent, e.Total, e.Cost)
}

// LedgerState is a ledger's spend (rho), its total (nil: none) and its
// number of releases.
type LedgerState struct {
	Spent    float64  `json:"spent_rho"`
	Total    *float64 `json:"total_rho,omitempty"`
	Releases int      `json:"releases"`
}

// ledgerFile is a ledger's contents: the total is absent (nil) when the
// file has none, and 0 is a total that allows nothing. A ledger written
// before totals is a JSON array of releases.
type ledgerFile struct {
	Total    *float64  `json:"total_rho,omitempty"`
	Releases []Release `json:"releases"`
}

// checkTotal returns a *TotalError for a total that is not a cap, read
// from file ("": the caller's).
func checkTotal(t *float64, file string) error {
	if t != nil && !(*t >= 0 && !math.IsInf(*t, 1)) {
		return &TotalError{File: file, Total: *t}
	}
	return nil
}

// Rho returns the zCDP the release meets, which a ledger's total counts:
// its budget's rho for a zCDP budget, eps^2/2 for a pure one (Laplace
// noise is eps-DP, which implies (eps^2/2)-zCDP: Bun and Steinke 2016,
// Proposition 1.4), and for an (eps, delta) budget the zCDP of its
// Gaussian noise (privacy.GaussianRho), with DR's reward model.
func (r Release) Rho() float64 {
	if rho, err := r.Budget.ToZCDP(); err == nil {
		return rho
	}
	rho := privacy.GaussianRho(r.Sensitivity, r.Scale)
	if r.Model != nil {
		rho += privacy.GaussianRho(r.Model.Sensitivity, r.Model.Scale)
	}
	return rho
}

// Read returns the ledger's state, with the total in force (the lower of
// the file's and l.Total).
func (l Ledger) Read() (LedgerState, error) {
	if err := checkTotal(l.Total, ""); err != nil {
		return LedgerState{}, err
	}
	f, err := l.read()
	if err != nil {
		return LedgerState{}, err
	}
	return LedgerState{Spent: f.spent(), Total: l.total(f), Releases: len(f.Releases)}, nil
}

// spent returns the sum of the releases' Rho.
func (f ledgerFile) spent() float64 {
	s := 0.0
	for _, r := range f.Releases {
		s += r.Rho()
	}
	return s
}

func (l Ledger) read() (ledgerFile, error) {
	var f ledgerFile
	b, err := regfile.ReadAll(l.Path, MaxFile)
	if errors.Is(err, os.ErrNotExist) || err == nil && len(b) == 0 {
		return f, nil
	}
	if errors.Is(err, ErrNotRegular) || errors.As(err, new(*os.PathError)) {
		return f, err
	}
	if err != nil {
		return f, errorf("release ledger %s: %v", l.Path, err)
	}
	if b[0] == '[' {
		err = json.Unmarshal(b, &f.Releases)
	} else {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		return f, errorf("release ledger %s: %v", l.Path, err)
	}
	return f, checkTotal(f.Total, l.Path)
}

// total returns the total in force for the file f (nil: none), the
// lower of the file's and the caller's.
func (l Ledger) total(f ledgerFile) *float64 {
	if f.Total == nil || l.Total != nil && *l.Total < *f.Total {
		return l.Total
	}
	return f.Total
}

// Request is one release asked of a ledger: the key that names what is
// released, and how to draw it if the ledger has none under that key.
type Request struct {
	Key  string
	Draw func() (Release, error)
}

// ReleaseOnce is ReleaseAll for one request.
func (l Ledger) ReleaseOnce(key string, draw func() (Release, error)) (rel Release, reused bool, err error) {
	rels, re, err := l.ReleaseAll([]Request{{Key: key, Draw: draw}})
	if err != nil {
		return Release{}, false, err
	}
	return rels[0], re[0], nil
}

// ReleaseAll returns, for each request, the release recorded under its
// key, or draws it: a private estimate of a log is released once, and
// asking again (after a crash, from another process) returns the same
// value without spending the budget again; reused reports which were
// already there. The new releases are recorded together or not at all:
// if their costs together would take the spend past the total, none is
// (*OverTotalError, with their summed cost) and their draws are
// discarded unseen, so that a refused run spends nothing. A key asked
// twice is drawn once. The file is locked (PATH.lock) while it is read
// and written.
func (l Ledger) ReleaseAll(reqs []Request) (rels []Release, reused []bool, err error) {
	if err := checkTotal(l.Total, ""); err != nil {
		return nil, nil, err
	}
	// The lock is on a file of its own: the ledger is replaced by a
	// rename, and a lock on its old inode would guard nothing.
	lock, err := os.OpenFile(l.Path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, nil, err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	f, err := l.read()
	if err != nil {
		return nil, nil, err
	}
	if l.Total != nil && f.Total != nil && *l.Total > *f.Total {
		return nil, nil, errorf("%w: %s records rho=%g, asked rho=%g", ErrTotalRaised, l.Path, *f.Total, *l.Total)
	}
	total := l.total(f)
	if total != f.Total { // set or lowered: recorded even if the releases are refused
		f.Total = total
		if err := l.write(f); err != nil {
			return nil, nil, err
		}
	}
	recorded := len(f.Releases)
	spent, cost := f.spent(), 0.0
	rels, reused = make([]Release, len(reqs)), make([]bool, len(reqs))
	for i, r := range reqs {
		if j := slices.IndexFunc(f.Releases, func(x Release) bool { return x.Key == r.Key }); j >= 0 {
			rels[i], reused[i] = f.Releases[j], true
			continue
		}
		rel, err := r.Draw()
		if err != nil {
			return nil, nil, err
		}
		rel.Key = r.Key
		cost += rel.Rho()
		f.Releases = append(f.Releases, rel)
		rels[i] = rel
	}
	if cost > 0 && total != nil && spent+cost > *total { // reading recorded releases costs nothing
		return nil, nil, &OverTotalError{Spent: spent, Cost: cost, Total: *total}
	}
	if len(f.Releases) > recorded {
		err = l.write(f)
	}
	return rels, reused, err
}

// write replaces the file by f: written beside, synced and renamed, so
// that a crash leaves the old ledger or the new.
func (l Ledger) write(f ledgerFile) error {
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp := l.Path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o600); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, l.Path)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

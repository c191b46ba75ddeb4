package ope

import (
	"fmt"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
)

// ReleaseSpec is what a private release of a target's estimate depends
// on, and so what names it in a Ledger: the same spec is the same
// release, drawn once.
type ReleaseSpec struct {
	// LogDigest is the log's SHA-256, hex-encoded (LogDigest).
	LogDigest string
	// Policy is the target as the user named it; Target the policy it
	// parsed to (a Linear target adds its model's SHA-256, a *Dist its
	// file's).
	Policy string
	Target Policy
	// Estimator is the released estimator (PrivateEstimators).
	Estimator string
	// Clip, Rewards and Arms are the evaluation's cap, reward range and
	// declared number of actions (uniform's value depends on K).
	Clip    float64
	Rewards mechanism.Bounds
	Arms    int
	Budget  privacy.Budget
	// MaxEventsPerUnit is the bound on a unit's events (0: none) and
	// Reading how the log's records were read ("": the default JSON
	// lines or CSV): both change the events, so the release.
	MaxEventsPerUnit int
	Reading          string
}

// Key is the spec's ledger key. Its words keep the order and spelling
// of the releases recorded before the spec had a type (an IPS release
// names no estimator; a default reading and no bound on units add
// nothing), so that those releases are found again.
func (s ReleaseSpec) Key() string {
	key := fmt.Sprintf("sha256:%s policy=%s clip=%g range=%s budget=%s arms=%d", s.LogDigest, s.Policy, s.Clip, s.Rewards, s.Budget, s.Arms)
	switch t := s.Target.(type) {
	case Linear:
		key += " model=sha256:" + t.Model
	case *Dist:
		key += " dist=sha256:" + t.Digest
	}
	if s.Estimator != "ips" {
		key += " estimator=" + s.Estimator
	}
	if s.MaxEventsPerUnit > 0 {
		key += fmt.Sprintf(" max-events-per-unit=%d", s.MaxEventsPerUnit)
	}
	if s.Reading != "" {
		key += " reading=" + s.Reading
	}
	return key
}

// Package fault is the service's error vocabulary: every error the
// engine, the ledger or the store returns to a request has a Kind, and
// the HTTP surface maps kinds to statuses in one place (api's status),
// as Prometheus's API maps its error types. Nothing below the HTTP
// surface names a status code.
package fault

import (
	"errors"
	"fmt"
)

// Kind is what went wrong, as a client must act on it.
type Kind int

// The kinds of errors.
const (
	// Internal is a fault of the service itself (an error without a
	// kind is one).
	Internal Kind = iota
	// Invalid is a request that is malformed or breaks a rule.
	Invalid
	// Unauthenticated is a request without a known credential.
	Unauthenticated
	// Forbidden is a request its credential may not make.
	Forbidden
	// NotFound names something that does not exist (for the caller).
	NotFound
	// Conflict contradicts the state: an id taken, an event decided
	// otherwise, an experiment paused.
	Conflict
	// Gone names an archived experiment.
	Gone
	// TooLarge is a body or a field over its limit.
	TooLarge
	// UnsupportedMedia is a body of a content type not taken.
	UnsupportedMedia
	// OutOfRange is a value outside its declared range (a reward).
	OutOfRange
	// Unavailable is a request the service cannot serve now: its store
	// failed, a replica moved, the request ended. Retry marks those a
	// client should retry.
	Unavailable
)

// Error is an error with its kind.
type Error struct {
	Kind Kind
	Msg  string
	// Retry marks an Unavailable error the client retries after a
	// moment (an experiment moving between replicas).
	Retry bool
}

func (e *Error) Error() string { return e.Msg }

// Errorf returns an error of kind k.
func Errorf(k Kind, format string, a ...any) error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, a...)}
}

// RetryLater returns an Unavailable error that the client retries.
func RetryLater(format string, a ...any) error {
	return &Error{Kind: Unavailable, Msg: fmt.Sprintf(format, a...) + ": retry", Retry: true}
}

// Of returns the kind of err (Internal when it has none).
func Of(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Retryable reports whether err asks the client to retry.
func Retryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retry
}

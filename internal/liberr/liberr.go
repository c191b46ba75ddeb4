// Package liberr is the error type of the library's packages (env,
// mechanism, mab, ope, ...): each declares `type Error = liberr.Error`
// and makes its errors with New, so that an error carries the package
// that made it, the field (parameter or input) it concerns, and its
// message without any package name.
//
// Error() reads as Go's library errors do, "mab: a private policy:
// mechanism: the noise source is nil", while Message() is the same
// error as a user who named the field wants it, "a private policy: the
// noise source is nil": New composes it from the Message of the errors
// it wraps, so nothing is stripped from text.
package liberr

import (
	"errors"
	"fmt"
	"strings"
)

// Error is an error of one of the library's packages.
type Error struct {
	// Pkg is the package that made the error ("env", "mechanism", ...).
	Pkg string
	// Field names the parameter or input at fault ("beta", "policy",
	// "delta"), or is empty when the error concerns no single one.
	Field string
	// Kind, if set, is the class of the error (such as
	// mechanism.ErrInput); errors.Is sees it.
	Kind error

	err  error  // the reason, wrapping the errors it was made from
	text string // the reason, those errors of another package with its name
	msg  string // the reason, from the Message of those errors
}

// ErrInput is the kind of the errors of input refused that Input makes
// (mechanism.ErrInput, documented there).
var ErrInput = errors.New("input refused")

// New returns an *Error of package pkg, its message formatted as
// fmt.Errorf does: %w wraps an error, which errors.Is and errors.As then
// see. Set Field for an error about one parameter.
func New(pkg, format string, a ...any) *Error { return build(pkg, nil, format, a...) }

// Input is New for input refused: the error is of kind ErrInput.
func Input(pkg, format string, a ...any) *Error { return build(pkg, ErrInput, format, a...) }

func build(pkg string, kind error, format string, a ...any) *Error {
	plain := make([]any, len(a))
	text := make([]any, len(a))
	for i, x := range a {
		plain[i], text[i] = x, x
		if err, ok := x.(error); ok {
			plain[i] = Message(err)
			// An error of the same package reads without its name again.
			if e, ok := err.(*Error); ok && e.Pkg == pkg {
				text[i] = e.Message()
			}
		}
	}
	f := strings.ReplaceAll(format, "%w", "%v")
	return &Error{
		Pkg:  pkg,
		Kind: kind,
		err:  fmt.Errorf(format, a...),
		text: fmt.Sprintf(f, text...),
		msg:  fmt.Sprintf(f, plain...),
	}
}

// Errorf is New for a caller above the library (an experiment's
// configuration, a command line) that adds its context to a library
// error: Error() is fmt.Errorf's message, Message() the same composed
// from the Message of the errors it wraps.
func Errorf(format string, a ...any) error { return New("", format, a...) }

// Error is the message after the package's name, as Go's library
// errors read: "pkg: message", the errors it wraps with their own
// packages' names.
// An error of Errorf (no package) is its message as fmt.Errorf writes it.
func (e *Error) Error() string {
	if e.Pkg == "" {
		return e.text
	}
	return e.Pkg + ": " + e.text
}

// Message is the error without package names.
func (e *Error) Message() string { return e.msg }

// Unwrap returns the errors the reason wraps, and the kind.
func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.err}
	}
	return []error{e.err, e.Kind}
}

// Message returns err's message without package names: err.Message()
// if err has that method (as *Error and the library's other typed
// errors do), or else err.Error().
func Message(err error) string {
	if m, ok := err.(interface{ Message() string }); ok {
		return m.Message()
	}
	return err.Error()
}

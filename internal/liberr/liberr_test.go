package liberr

import (
	"errors"
	"testing"
)

// An error wrapping another package's reads with both packages' names
// (Error) and without any (Message), and errors.Is/As see through it.
func TestNewComposesMessages(t *testing.T) {
	inner := New("mechanism", "the noise source is nil")
	outer := Input("mab", "a private policy: %w", inner)
	outer.Field = "beta"
	if got, want := outer.Error(), "mab: a private policy: mechanism: the noise source is nil"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := outer.Message(), "a private policy: the noise source is nil"; got != want {
		t.Errorf("Message() = %q, want %q", got, want)
	}
	if !errors.Is(outer, inner) || !errors.Is(outer, ErrInput) {
		t.Error("errors.Is does not see the wrapped error or the kind")
	}
	var e *Error
	if !errors.As(outer, &e) || e.Field != "beta" || e.Pkg != "mab" {
		t.Errorf("errors.As: %+v, want field beta of package mab", e)
	}
}

// A package's error wrapping one of its own sentinels names the package
// once.
func TestNewSamePackageOnce(t *testing.T) {
	sentinel := New("privacy", "the noise scale is outside float64's range")
	err := New("privacy", "%w: eps 1e-320", sentinel)
	if got, want := err.Error(), "privacy: the noise scale is outside float64's range: eps 1e-320"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, sentinel) {
		t.Error("errors.Is does not see the sentinel")
	}
}

// Errorf adds a caller's context: no package name of its own, and its
// Message drops the wrapped errors'.
func TestErrorfAddsContext(t *testing.T) {
	inner := New("sparse", "needs an (eps, delta) budget")
	err := Errorf("%s %s: %w", "private-lasso", "rho=1", inner)
	if got, want := err.Error(), "private-lasso rho=1: sparse: needs an (eps, delta) budget"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := Message(err), "private-lasso rho=1: needs an (eps, delta) budget"; got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
	if got := Message(errors.New("plain")); got != "plain" {
		t.Errorf("Message of a plain error = %q", got)
	}
}

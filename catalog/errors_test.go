package catalog

import (
	"errors"
	"strings"
	"testing"
)

// A misspelt, repeated, malformed or out-of-range parameter is a
// *catalog.Error naming it (Field), of kind ErrSpec, whose Message has no
// package name; an unknown algorithm is one too.
func TestParseErrorsNameTheField(t *testing.T) {
	for _, c := range []struct{ spec, field string }{
		{"ucb1:bta=4", "bta"},
		{"adac-ucb:bta=4", "bta"},
		{"adac-ucb:beta=-1", "beta"},
		{"adac-ucb:beta=2:beta=3", "beta"},
		{"adac-ucb:beta", "beta"},
	} {
		_, err := Parse(c.spec)
		var e *Error
		if !errors.As(err, &e) || e.Field != c.field || e.Pkg != "catalog" || !errors.Is(err, ErrSpec) {
			t.Errorf("%s: %v (%+v), want a *catalog.Error of ErrSpec naming %s", c.spec, err, e, c.field)
			continue
		}
		if strings.Contains(e.Message(), "catalog") {
			t.Errorf("%s: Message %q names the package", c.spec, e.Message())
		}
	}
	_, err := Parse("ucbx")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrUnknown) {
		t.Errorf("ucbx: %v, want a *catalog.Error of ErrUnknown", err)
	}
}

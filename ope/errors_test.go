package ope

import (
	"errors"
	"strings"
	"testing"
)

// An unknown or malformed target policy is an *OptionError on the field
// policy, whose Message names no package.
func TestParsePolicyErrorNamesTheField(t *testing.T) {
	for _, s := range []string{"nope", "arm:-1"} {
		_, err := ParsePolicy(s)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Field != "policy" {
			t.Errorf("%q: %v, want an *OptionError on policy", s, err)
			continue
		}
		if strings.Contains(oe.Message(), "ope:") {
			t.Errorf("%q: Message %q names the package", s, oe.Message())
		}
	}
}

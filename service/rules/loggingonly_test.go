package rules

import (
	"testing"

	"github.com/dpbandit/dpbandit/service/define"
)

// TestLoggingOnlySince: the operation of the change into logging only
// mode still in force; other changes (no mode, the same mode) keep it.
func TestLoggingOnlySince(t *testing.T) {
	lo, ap, on := define.ModeLoggingOnly, define.ModeApprentice, define.ModeOnline
	for _, c := range []struct {
		modes []string // of the settings at operations 10, 20, ...
		want  int64
	}{
		{nil, 0}, {[]string{lo}, 10}, {[]string{lo, ""}, 10}, {[]string{lo, lo}, 10},
		{[]string{lo, on}, 0}, {[]string{lo, ap, lo}, 30}, {[]string{"", on, lo}, 30},
	} {
		var ss []define.Setting
		for i, m := range c.modes {
			ss = append(ss, define.Setting{From: int64(10 * (i + 1)), Mode: m})
		}
		if got := LoggingOnlySince(ss); got != c.want {
			t.Errorf("%q: %d, want %d", c.modes, got, c.want)
		}
	}
}

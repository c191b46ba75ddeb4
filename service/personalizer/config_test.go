package personalizer

import (
	"net/http"
	"testing"
)

// TestSpans: the durations of the service configuration read in both of
// the specification's forms (a TimeSpan, v1.0's examples; ISO 8601,
// v1.1-preview.3's) and written back in the same form; what is neither
// is refused.
func TestSpans(t *testing.T) {
	for _, c := range []struct {
		in  string
		sec float64
		iso bool
	}{
		{"00:10:00", 600, false}, {"1.02:03:04", 93784, false}, {"00:00:01.5", 1.5, false},
		{"PT10M", 600, true}, {"P1DT2H3M4S", 93784, true}, {"PT1.5S", 1.5, true}, {"P2D", 172800, true},
	} {
		sec, err := parseSpan(c.in)
		if err != nil || sec != c.sec {
			t.Errorf("parseSpan(%q) = %v, %v; want %v", c.in, sec, err, c.sec)
		}
		if got := formatSpan(c.sec, c.iso); got != c.in {
			t.Errorf("formatSpan(%v, iso %v) = %q, want %q", c.sec, c.iso, got, c.in)
		}
	}
	for _, bad := range []string{"", "P", "PT", "10 minutes", "00:10", "-00:10:00", "PT-1M"} {
		if _, err := parseSpan(bad); err == nil {
			t.Errorf("parseSpan(%q) accepted", bad)
		}
	}
}

// TestMinRetentionDays: the least retention is the reward wait plus a
// day, rounded up to whole days.
func TestMinRetentionDays(t *testing.T) {
	for wait, want := range map[float64]int{600: 2, 0: 1, 86400: 2, 86401: 3} {
		if got := minRetentionDays(wait); got != want {
			t.Errorf("minRetentionDays(%v) = %d, want %d", wait, got, want)
		}
	}
}

// TestErrorCodes: the statuses the surface answers carry the codes its
// specification's ErrorCode names, and any other status HTTP's reason
// phrase.
func TestErrorCodes(t *testing.T) {
	for status, want := range map[int]string{400: "BadRequest", 404: "ResourceNotFound", 500: "InternalServerError", 413: "BadRequest", 418: http.StatusText(418)} {
		if got := ErrorOf(status, "m"); got.Error.Code != want || got.Error.Message != "m" {
			t.Errorf("ErrorOf(%d) = %+v, want code %q", status, got, want)
		}
	}
}

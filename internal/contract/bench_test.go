package contract

import (
	"testing"

	"github.com/dpbandit/dpbandit/service/api"
)

// BenchmarkCheck is the cost of checking one exchange.
func BenchmarkCheck(b *testing.B) {
	s, err := Load()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ex   Exchange
	}{
		{"decision", exchange("POST", "/v1/experiments/e/decisions", `{"event_id":"1","unit_id":"u"}`, 200, "", `{"event_id":"1","arm":0,"probability":1,"policy_version":1,"learns":true}`)},
		{"state", exchange("GET", "/v1/experiments/e", "", 200, "", state(""))},
		{"error", exchange("POST", "/v1/experiments/e/decisions", `{"event_id":"1","unit_id":"u"}`, 404, "", `{"error":"no"}`)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := s.Check(c.ex); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParse is the once-per-binary cost of loading, validating and
// compiling the document (Load).
func BenchmarkParse(b *testing.B) {
	raw := api.OpenAPI()
	for b.Loop() {
		if _, err := Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}

package api

import (
	"net/http/httptest"
	"testing"

	"github.com/dpbandit/dpbandit/service/outcome"
)

// The API's per-request JSON: a decision's and a reward's body decoded
// strictly, and their answers encoded, as dpbandit loadtest sends and
// receives them. Allocations per op are the measure of progress.

var (
	benchDecideBody = []byte(`{"event_id":"c17-123456","unit_id":"c17-123456"}`)
	benchRewardBody = []byte(`{"event_id":"c17-123456","reward":1}`)
)

func BenchmarkDecodeDecision(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var q decideReq
		if err := decodeDecide(benchDecideBody, &q); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeReward(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var q rewardReq
		if err := decodeReward(benchRewardBody, &q); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeDecision(b *testing.B) {
	a := &server{}
	d := outcome.Decision{EventID: "c17-123456", Arm: 3, Probability: 1, PolicyVersion: 12, Learns: true}
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		w.Body.Reset()
		a.writeAnswer(w, 200, d)
	}
}

func BenchmarkEncodeReward(b *testing.B) {
	a := &server{}
	r := outcome.RewardResult{EventID: "c17-123456", Status: "learned", Learned: true}
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		w.Body.Reset()
		a.writeAnswer(w, 200, r)
	}
}

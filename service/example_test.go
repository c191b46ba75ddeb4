package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/dpbandit/dpbandit/service"
)

// Example runs the service on a SQLite file: it creates an AdaC-UCB
// experiment, takes a decision for a unit, reports its reward, and shows
// what an out-of-range reward gets.
func Example() {
	dir, _ := os.MkdirTemp("", "dpbandit-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	store, err := service.Open(ctx, filepath.Join(dir, "state.db"))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	srv, err := service.New(ctx, service.Config{Store: store})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	web := httptest.NewServer(srv.Handler())
	defer web.Close()

	post := func(path, body string) map[string]any {
		resp, err := http.Post(web.URL+path, "application/json", bytes.NewBufferString(body))
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		out["http"] = resp.StatusCode
		return out
	}
	e := post("/v1/experiments", `{"id": "checkout", "algorithm": "adac-ucb", "arms": 3,
		"reward_range": [0, 1], "privacy": {"rho": 0.5}, "max_rewards_per_unit": 1}`)
	fmt.Println(e["http"], e["id"], e["nano_rho"])
	d := post("/v1/experiments/checkout/decisions", `{"event_id": "e1", "unit_id": "alice"}`)
	fmt.Println(d["http"], d["arm"], d["learns"])
	r := post("/v1/experiments/checkout/rewards", `{"event_id": "e1", "reward": 1}`)
	fmt.Println(r["http"], r["status"])
	again := post("/v1/experiments/checkout/rewards", `{"event_id": "e1", "reward": 0}`)
	fmt.Println(again["http"], again["status"]) // the first reward counts
	bad := post("/v1/experiments/checkout/rewards", `{"event_id": "e1", "reward": 7}`)
	fmt.Println(bad["http"], bad["error"])
	// Output:
	// 201 checkout 5e+08
	// 200 0 true
	// 200 learned
	// 200 learned
	// 422 reward 7 lies outside the declared reward_range [0, 1]
}

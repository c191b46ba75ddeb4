package service

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
)

// TestPersonalizerConfigReplicas: two replicas on one PostgreSQL; a
// change of the settings sent to either replica reaches the one serving
// the experiment, both answer it, and once that replica is killed the
// other, taking the experiment over from the store, serves the changed
// settings (the learner, the exploration of its rankings).
func TestPersonalizerConfigReplicas(t *testing.T) {
	k, c0, c1 := pzCluster(t)
	pzRound(c0, "a", 5)
	if code, _, b := c1.call("PUT", pzV10, "/configurations/policy", policyContract{"mine", "adac-oful:lambda=10"}); code != 200 {
		t.Fatalf("policy: %d %s", code, b)
	}
	if code, _, b := c0.call("PUT", pzV11, "/configurations/service", apprenticeUpdate("Online", 0.3)); code != 200 {
		t.Fatalf("configuration: %d %s", code, b)
	}
	pzRound(c1, "b", 5)
	var p policyContract
	if err := json.Unmarshal(killHolder(t, k, pzV10, "/configurations/policy"), &p); err != nil {
		t.Fatal(err)
	}
	c := pzClient{t, k.bases()[0], "pz", k.c}
	if p != (policyContract{"mine", "adac-oful:lambda=10"}) {
		t.Fatalf("after the takeover the policy is %+v", p)
	}
	var got serviceConfig
	c.get(pzV11, "/configurations/service", &got)
	if got.ExplorationPercentage != 0.3 {
		t.Fatalf("after the takeover: %+v", got)
	}
	q := define.ExploreProb(0.3)
	for _, r := range pzRound(c, "c", 5) {
		if pr := r.Ranking[0].Probability; pr != 1-q+q/2 && pr != q/2 {
			t.Fatalf("after the takeover a ranking's probability is %v", pr)
		}
	}
}

// pzCluster starts two replicas on one PostgreSQL with the Personalizer
// experiment "pz", and returns a client of each.
func pzCluster(t *testing.T) (*cluster, pzClient, pzClient) {
	k := newCluster(t, 2, calmLease)
	if code, b, _ := k.do("POST", "/v1/experiments", pzSpec("pz")); code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	bs := k.bases()
	return k, pzClient{t, bs[0], "pz", k.c}, pzClient{t, bs[1], "pz", k.c}
}

// killHolder kills the replica serving "pz" and returns the first 200
// answer of GET base+path from the other, once it has taken the
// experiment over (within 30 s).
func killHolder(t *testing.T, k *cluster, base, path string) []byte {
	t.Helper()
	holder := k.holder("pz")
	if holder == nil {
		t.Fatal("no replica serves pz")
	}
	holder.kill()
	k.remove(holder)
	c := pzClient{t, k.bases()[0], "pz", k.c}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _, b := c.call("GET", base, path, nil)
		if code == 200 {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("no takeover: %d %s", code, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

package service

import "testing"

// statistical skips, under the race detector, a test whose purpose is a
// statistical property of what the service learns (thousands of
// sequential decisions, a sign test over runs): it exercises no
// concurrency that the other tests do not, and under -race it runs ten
// times slower (TestPersonalizerWarmStartServesBetter took 210 s of the
// race run's 325 s). It runs, in full, in every run without -race, which
// CI makes first.
func statistical(t *testing.T) {
	t.Helper()
	if race {
		t.Skip("statistical: runs without -race")
	}
}

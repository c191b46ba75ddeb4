//go:build heavy

package service

import (
	"math/rand/v2"
	"testing"
)

// TestPersonalizerWarmStartServesBetterBothStores is
// TestPersonalizerWarmStartServesBetter on SQLite and PostgreSQL.
func TestPersonalizerWarmStartServesBetterBothStores(t *testing.T) {
	eachStore(t, Config{Entropy: rand.NewChaCha8([32]byte{7})}, pzWarm)
}

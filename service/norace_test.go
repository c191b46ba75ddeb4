//go:build !race

package service

// race is unset without the race detector: see race_test.go.
const race = false

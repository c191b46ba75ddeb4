//go:build race

package service

// race is set under the race detector (`go test -race ./service`, which
// CI runs after the whole suite): see statistical.
const race = true

//go:build !heavy

package experiment

// heavy is unset without the build tag heavy: see heavy_test.go.
const heavy = false

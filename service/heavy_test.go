//go:build heavy

package service

// heavy is set by the build tag heavy (`go test -tags heavy`, the
// README's test command, which CI runs): the slowest tests run at full
// scale. Without it, `go test ./...` is the quick suite (README).
const heavy = true

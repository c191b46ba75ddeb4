// Package sqlq rewrites SQL for the service's stores and their tests.
package sqlq

import (
	"strconv"
	"strings"
)

// Dollar rewrites a query's ? placeholders as PostgreSQL's $1, $2, ...
func Dollar(query string) string {
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

package service

import (
	"fmt"
	"testing"
)

// TestSpanExcept: a span of rewards to delete, but those kept.
func TestSpanExcept(t *testing.T) {
	for _, c := range []struct {
		span seqSpan
		keep []int64
		want string
	}{
		{seqSpan{}, []int64{3}, "[]"},
		{seqSpan{1, 10}, nil, "[{1 10}]"},
		{seqSpan{1, 10}, []int64{1}, "[{2 10}]"},
		{seqSpan{1, 10}, []int64{10}, "[{1 9}]"},
		{seqSpan{1, 10}, []int64{4, 5, 8}, "[{1 3} {6 7} {9 10}]"},
		{seqSpan{3, 5}, []int64{1, 3, 4, 5, 9}, "[]"},
		{seqSpan{3, 5}, []int64{1, 9}, "[{3 5}]"},
	} {
		if got := fmt.Sprint(c.span.except(c.keep)); got != c.want {
			t.Errorf("%v except %v: %s, want %s", c.span, c.keep, got, c.want)
		}
	}
}

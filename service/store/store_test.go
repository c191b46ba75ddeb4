package store

import (
	"fmt"
	"testing"
)

// TestSpanExcept: a span of rewards to delete, but those kept.
func TestSpanExcept(t *testing.T) {
	for _, c := range []struct {
		span Span
		keep []int64
		want string
	}{
		{Span{}, []int64{3}, "[]"},
		{Span{Lo: 1, Hi: 10}, nil, "[{1 10}]"},
		{Span{Lo: 1, Hi: 10}, []int64{1}, "[{2 10}]"},
		{Span{Lo: 1, Hi: 10}, []int64{10}, "[{1 9}]"},
		{Span{Lo: 1, Hi: 10}, []int64{4, 5, 8}, "[{1 3} {6 7} {9 10}]"},
		{Span{Lo: 3, Hi: 5}, []int64{1, 3, 4, 5, 9}, "[]"},
		{Span{Lo: 3, Hi: 5}, []int64{1, 9}, "[{3 5}]"},
	} {
		if got := fmt.Sprint(c.span.Except(c.keep)); got != c.want {
			t.Errorf("%v except %v: %s, want %s", c.span, c.keep, got, c.want)
		}
	}
}

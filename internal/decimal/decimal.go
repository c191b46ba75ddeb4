// Package decimal parses the numbers of data files.
package decimal

import (
	"errors"
	"strconv"
	"strings"
)

// ErrSyntax is a field that is not a decimal number.
var ErrSyntax = errors.New("not a decimal number")

// ErrOverflow is a decimal number beyond float64's range (1e309): a
// number, but one no float64 holds.
var ErrOverflow = errors.New("a decimal number beyond float64's range (overflow, above 1.8e308 in magnitude)")

// Parse parses a decimal number as data files write it: an optional
// sign, digits with an optional point, an optional exponent, with the
// surrounding spaces trimmed (a CSV written "1, 2" has them); a number
// beyond float64's range is ErrOverflow; "NaN" and "Inf" parse too, for the caller
// to refuse as not finite. It refuses the rest of Go's syntax that
// strconv.ParseFloat accepts, underscores between digits (1_000.5 would
// be read as 1000.5) and hexadecimal (0x1p-2), which no spreadsheet or
// data frame writes and which a column of identifiers could hold.
func Parse(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, "_xXpP") {
		return 0, ErrSyntax
	}
	x, err := strconv.ParseFloat(s, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, ErrOverflow
	}
	if err != nil {
		return 0, ErrSyntax
	}
	return x, nil
}

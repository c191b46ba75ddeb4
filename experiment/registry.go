package experiment

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// trimFloat formats x in its shortest form.
func trimFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// ParamString formats parameters as "k1=v1,k2=v2", sorted by key.
func ParamString(p map[string]float64) string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		s = append(s, k+"="+trimFloat(p[k]))
	}
	return strings.Join(s, ",")
}

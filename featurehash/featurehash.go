// Package featurehash maps a JSON context (Personalizer's and Vowpal
// Wabbit's features) into a vector of 2^Bits numbers, by the hashing
// trick (Weinberger, Dasgupta, Langford, Smola and Attenberg, "Feature
// Hashing for Large Scale Multitask Learning", ICML 2009, Section 2,
// without their sign hash), so that the offline evaluation of a log and
// a surface that serves the same contexts read them as the same vector.
//
// The scheme, as VW's dsjson documentation describes the features
// (strings, numbers, booleans, arrays of numbers; namespaces as objects):
//
//   - A context is a JSON object. A top-level key whose value is an object
//     (or an array of objects) names a namespace, whose members are its
//     features; any other top-level member is a feature of the default
//     namespace "". An object nested in a namespace is read as part of
//     that namespace, its keys prefixed with its own key and a dot.
//   - A member whose key begins with "_" is not a feature (dsjson's
//     _multi, _slots, _text, _tag and Personalizer's private fields).
//   - A string value s of key k is the indicator feature "k=s" (value 1);
//     a number x is the feature "k" of value x; true is "k" of value 1
//     and false nothing; an array of numbers is the features "k[0]",
//     "k[1]", ... of its values; null is nothing.
//   - A feature named f in namespace ns adds its value to coordinate
//     FNV-1a-64(ns + "\x00" + f) mod 2^Bits (Fowler-Noll-Vo, 64-bit
//     FNV-1a: offset basis 14695981039346656037, prime 1099511628211):
//     features that collide add up.
package featurehash

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

// MaxBits bounds Bits: 2^24 float64 coordinates are 128 MiB a vector.
const MaxBits = 24

// Hasher maps contexts into 2^Bits dimensions.
type Hasher struct {
	Bits int
}

// BitsError is a Bits outside [1, MaxBits].
type BitsError struct{ Bits int }

func (e *BitsError) Error() string {
	return fmt.Sprintf("featurehash: bits must lie in [1, %d], got %d", MaxBits, e.Bits)
}

// New returns a Hasher into 2^bits dimensions.
func New(bits int) (Hasher, error) {
	if bits < 1 || bits > MaxBits {
		return Hasher{}, &BitsError{bits}
	}
	return Hasher{Bits: bits}, nil
}

// Dim is the vectors' dimension, 2^Bits.
func (h Hasher) Dim() int { return 1 << h.Bits }

// ValueError is a context that is not a JSON object of features, or a
// feature whose value the scheme does not read (a number that is not
// finite, a value of another type), named by its path.
type ValueError struct {
	Path, Reason string
}

func (e *ValueError) Error() string { return "featurehash: " + e.Path + ": " + e.Reason }

// Index is the coordinate of feature name in namespace ns.
func (h Hasher) Index(ns, name string) int { return index(h.Bits, ns, name) }

// IndexBytes is Index of a name held in bytes.
func (h Hasher) IndexBytes(ns string, name []byte) int { return index(h.Bits, ns, name) }

// index is FNV-1a-64 of ns, a zero byte and name, modulo 2^bits.
func index[N, M string | []byte](bits int, ns N, name M) int {
	const offset, prime = 14695981039346656037, 1099511628211
	x := uint64(offset)
	for i := 0; i < len(ns); i++ {
		x = (x ^ uint64(ns[i])) * prime
	}
	x = (x ^ 0) * prime
	for i := 0; i < len(name); i++ {
		x = (x ^ uint64(name[i])) * prime
	}
	return int(x & (1<<bits - 1))
}

// AddJSON adds the features of the JSON object ctx into dst (of length
// Dim), or returns ErrNotObject for a text that is not one object.
// Length, number and values are checked as Add checks them; a number
// too large for a float64 (1e999) is a ValueError naming its feature,
// as it is not finite. The context is read in place when it can be (the
// fast path, fast.go), with encoding/json otherwise: the same vector
// either way.
func (h Hasher) AddJSON(dst []float64, ctx json.RawMessage) error {
	return h.Reader().AddJSON(dst, ctx)
}

// addDecoded is AddJSON by encoding/json (numbers as json.Number, so
// that one out of range is the feature's error, not the decoder's).
func (h Hasher) addDecoded(dst []float64, ctx json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(ctx))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return ErrNotObject
	}
	return h.Add(dst, obj)
}

// ErrNotObject is a context that is not one JSON object.
var ErrNotObject = errors.New("featurehash: the context is not a JSON object")

// Add adds the features of a context decoded by encoding/json (numbers
// as float64 or json.Number) into dst (of length Dim).
func (h Hasher) Add(dst []float64, ctx map[string]any) error {
	if len(dst) != h.Dim() {
		return &ValueError{Path: "context", Reason: fmt.Sprintf("a vector of %d dimensions, the hasher's are %d", len(dst), h.Dim())}
	}
	for _, k := range slices.Sorted(maps.Keys(ctx)) { // a fixed order: collisions add up the same way
		if len(k) > 0 && k[0] == '_' {
			continue
		}
		switch v := ctx[k].(type) {
		case map[string]any:
			if err := h.namespace(dst, k, "", v); err != nil {
				return err
			}
		case []any:
			if objects(v) {
				for _, o := range v {
					if err := h.namespace(dst, k, "", o.(map[string]any)); err != nil {
						return err
					}
				}
				continue
			}
			if err := h.feature(dst, "", k, v); err != nil {
				return err
			}
		default:
			if err := h.feature(dst, "", k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// objects reports whether v is a non-empty array of objects.
func objects(v []any) bool {
	for _, x := range v {
		if _, ok := x.(map[string]any); !ok {
			return false
		}
	}
	return len(v) > 0
}

// namespace adds the members of o, in namespace ns, their keys prefixed
// by prefix.
func (h Hasher) namespace(dst []float64, ns, prefix string, o map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(o)) {
		if len(k) > 0 && k[0] == '_' {
			continue
		}
		v := o[k]
		if sub, ok := v.(map[string]any); ok {
			if err := h.namespace(dst, ns, prefix+k+".", sub); err != nil {
				return err
			}
			continue
		}
		if err := h.feature(dst, ns, prefix+k, v); err != nil {
			return err
		}
	}
	return nil
}

// feature adds the feature of key k and value v in namespace ns.
func (h Hasher) feature(dst []float64, ns, k string, v any) error {
	path := k
	if ns != "" {
		path = ns + "." + k
	}
	switch v := v.(type) {
	case nil:
	case bool:
		if v {
			dst[h.Index(ns, k)]++
		}
	case string:
		dst[h.Index(ns, k+"="+v)]++
	case float64, json.Number:
		x, err := number(v)
		if err != nil {
			return &ValueError{Path: path, Reason: err.Error()}
		}
		dst[h.Index(ns, k)] += x
	case []any:
		for i, e := range v {
			x, err := number(e)
			if err != nil {
				return &ValueError{Path: fmt.Sprintf("%s[%d]", path, i), Reason: "an array of features holds numbers only: " + err.Error()}
			}
			dst[h.Index(ns, k+"["+strconv.Itoa(i)+"]")] += x
		}
	default:
		return &ValueError{Path: path, Reason: fmt.Sprintf("a feature is a string, a number, a boolean or an array of numbers, not %T", v)}
	}
	return nil
}

// number reads a feature's number, finite.
func number(v any) (float64, error) {
	var x float64
	switch v := v.(type) {
	case float64:
		x = v
	case json.Number:
		var err error
		if x, err = v.Float64(); err != nil {
			return 0, fmt.Errorf("%s is not a float64", v)
		}
	default:
		return 0, fmt.Errorf("%v is not a number", v)
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("%v is not finite", x)
	}
	return x, nil
}

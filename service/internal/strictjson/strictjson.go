// Package strictjson decodes a request's JSON strictly: exact field
// names, each once, no unknown field, no trailing data, no number beyond
// float64 and no nesting beyond MaxDepth, for the service's two HTTP
// surfaces (service/api and service/personalizer). The syntax is
// json.Valid's; a walk over the valid bytes then reads keys and numbers
// without allocating.
package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dpbandit/dpbandit/service/fault"
)

// Decode decodes data into v strictly: the body must be valid UTF-8;
// field names must match exactly (encoding/json alone matches them
// case-insensitively) and appear once; unknown fields, trailing data,
// numbers beyond float64 and nesting beyond MaxDepth are Invalid faults
// (400).
func (d *Decoder) Decode(data []byte, v any) error {
	if !utf8.Valid(data) {
		return fault.Errorf(fault.Invalid, "invalid JSON: the body is not valid UTF-8")
	}
	if err := d.Check(data, reflect.TypeOf(v)); err != nil {
		return fault.Errorf(fault.Invalid, "invalid JSON: %v", err)
	}
	// checkJSON has refused unknown fields, keys of the wrong case,
	// duplicates and trailing data: what is left is decoding the value.
	if err := json.Unmarshal(data, v); err != nil {
		return fault.Errorf(fault.Invalid, "invalid JSON: %v", err)
	}
	return nil
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// MaxDepth bounds the nesting of a request's JSON (a contextual decision
// set is 2 deep): deeper is a 400, found before any recursion goes
// further.
const MaxDepth = 32

// Check checks that data is one JSON value (json.Valid: no trailing
// data either) and that its objects' keys fit t, the Go type it will be decoded into (nil: any value): no
// key twice (after unescaping), a struct's keys exactly its fields' JSON
// names, no number beyond float64, and no nesting beyond MaxDepth. The
// syntax is json.Valid's; the walk over the valid bytes then reads keys
// and numbers without allocating.
func (d *Decoder) Check(data []byte, t reflect.Type) error {
	if !json.Valid(data) {
		var x any
		if err := json.Unmarshal(data, &x); err != nil {
			return err
		}
		return errors.New("not one JSON value")
	}
	w := walker{d: d, data: data}
	return w.value(t, 0)
}

// walker reads a valid JSON text.
type walker struct {
	d    *Decoder
	data []byte
	i    int
}

func (w *walker) space() {
	for w.i < len(w.data) && (w.data[w.i] == ' ' || w.data[w.i] == '\t' || w.data[w.i] == '\n' || w.data[w.i] == '\r') {
		w.i++
	}
}

// value checks the value at w.i, nested depth deep, against t.
func (w *walker) value(t reflect.Type, depth int) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessage {
		t = nil
	}
	w.space()
	switch c := w.data[w.i]; c {
	case '{', '[':
		if depth >= MaxDepth {
			return fmt.Errorf("nested deeper than %d levels", MaxDepth)
		}
		w.i++
		if c == '{' {
			return w.object(t, depth)
		}
		return w.array(t, depth)
	case '"':
		w.str()
	default: // a number or a literal
		start := w.i
		for w.i < len(w.data) && !strings.ContainsRune(",}] \t\n\r", rune(w.data[w.i])) {
			w.i++
		}
		if c == '-' || c >= '0' && c <= '9' {
			if _, err := strconv.ParseFloat(string(w.data[start:w.i]), 64); err != nil {
				return fmt.Errorf("number %s does not fit a float64", w.data[start:w.i])
			}
		}
	}
	return nil
}

// object checks an object's members, after its '{'.
func (w *walker) object(t reflect.Type, depth int) error {
	var seen keySet
	for w.space(); w.data[w.i] != '}'; w.space() {
		key, err := w.str()
		if err != nil {
			return err
		}
		if !seen.add(key) {
			return fmt.Errorf("field %q appears twice", key)
		}
		ft, err := w.d.fieldType(t, key)
		if err != nil {
			return err
		}
		w.space()
		w.i++ // ':'
		if err := w.item(ft, depth+1); err != nil {
			return err
		}
	}
	w.i++
	return nil
}

// array checks an array's elements, after its '['.
func (w *walker) array(t reflect.Type, depth int) error {
	var et reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		et = t.Elem()
	}
	for w.space(); w.data[w.i] != ']'; w.space() {
		if err := w.item(et, depth+1); err != nil {
			return err
		}
	}
	w.i++
	return nil
}

// item checks a member's value or an array's element and steps over the
// comma after it, if any.
func (w *walker) item(t reflect.Type, depth int) error {
	if err := w.value(t, depth); err != nil {
		return err
	}
	if w.space(); w.data[w.i] == ',' {
		w.i++
	}
	return nil
}

// keySet is the keys of one object: a slice for the few of a request,
// a map past them (a context object may have many).
type keySet struct {
	few  []string
	many map[string]bool
}

// add adds key and reports whether it was new.
func (s *keySet) add(key string) bool {
	if s.many != nil {
		if s.many[key] {
			return false
		}
		s.many[key] = true
		return true
	}
	for _, k := range s.few {
		if k == key {
			return false
		}
	}
	if len(s.few) < 16 {
		s.few = append(s.few, key)
		return true
	}
	s.many = map[string]bool{key: true}
	for _, k := range s.few {
		s.many[k] = true
	}
	return true
}

// str reads the string at w.i (its opening quote) and returns it
// unescaped.
func (w *walker) str() (string, error) {
	start := w.i
	w.i++
	escaped := false
	for w.data[w.i] != '"' {
		if w.data[w.i] == '\\' {
			escaped = true
			w.i++
		}
		w.i++
	}
	w.i++
	if !escaped {
		return string(w.data[start+1 : w.i-1]), nil
	}
	var s string
	err := json.Unmarshal(w.data[start:w.i], &s)
	return s, err
}

// fieldType returns the type of key's value in a JSON object decoded
// into t: a struct's field whose JSON name is exactly key (any other key
// is an error), a map's element, or nil where nothing is checked (t nil
// or of another kind).
func (d *Decoder) fieldType(t reflect.Type, key string) (reflect.Type, error) {
	switch {
	case t == nil:
		return nil, nil
	case t.Kind() == reflect.Map:
		return t.Elem(), nil
	case t.Kind() != reflect.Struct:
		return nil, nil
	}
	fs := d.jsonFields(t)
	if ft, ok := fs[key]; ok {
		return ft, nil
	}
	for name := range fs {
		if strings.EqualFold(name, key) {
			return nil, fmt.Errorf("unknown field %q (field names are case-sensitive: %q)", key, name)
		}
	}
	return nil, fmt.Errorf("unknown field %q", key)
}

// Decoder decodes JSON strictly. Its tables hold the JSON fields of the
// struct types reachable from the types it was made for, computed once
// (reflect.VisibleFields allocates on every call) and never changed; other
// types are read as well, computing their fields on each call. The zero
// Decoder (and a nil one) has no tables.
type Decoder struct {
	fields map[reflect.Type]map[string]reflect.Type
}

// NewDecoder returns a Decoder with tables for ts.
func NewDecoder(ts ...reflect.Type) *Decoder {
	out := map[reflect.Type]map[string]reflect.Type{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if _, ok := out[t]; ok || t.Kind() != reflect.Struct {
			return
		}
		out[t] = fieldsOf(t)
		for _, ft := range out[t] {
			walk(ft)
		}
	}
	for _, t := range ts {
		walk(t)
	}
	return &Decoder{fields: out}
}

// jsonFields returns the types of t's fields by their JSON names.
func (d *Decoder) jsonFields(t reflect.Type) map[string]reflect.Type {
	if d == nil {
		return fieldsOf(t)
	}
	if fs, ok := d.fields[t]; ok {
		return fs
	}
	return fieldsOf(t)
}

// fieldsOf computes jsonFields.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	fs := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		if _, ok := fs[name]; !ok { // the shallower field wins, as in encoding/json
			fs[name] = f.Type
		}
	}
	return fs
}

package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
)

// decode reads one JSON value into v strictly: the body must be valid
// UTF-8; field names must match exactly (encoding/json alone matches
// them case-insensitively) and appear once; unknown fields, trailing data
// and bodies over the reader's limit are errors (400, or 413).
func decode(r io.Reader, v any) error {
	data, err := readRequest(r, 0, nil)
	if err != nil {
		return err
	}
	return decodeBytes(data, v)
}

// readRequest reads a body (size bytes, when known and small: read into
// one buffer of that size, buf when it has room), with decode's errors.
func readRequest(r io.Reader, size int64, buf []byte) ([]byte, error) {
	var data []byte
	var err error
	if size > 0 && size <= 4096 {
		data, err = readSized(r, size, buf)
	} else {
		data, err = io.ReadAll(r)
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, fault.Errorf(fault.Invalid, "reading the body: %v", err)
	}
	return data, nil
}

// readSized is io.ReadAll into a buffer of size+1 bytes (buf when it has
// room), which holds a body of the size it declares without growing (a
// longer one grows it).
func readSized(r io.Reader, size int64, buf []byte) ([]byte, error) {
	b := buf[:0]
	if int64(cap(b)) < size+1 {
		b = make([]byte, 0, size+1)
	}
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// readSmall reads a request's body of at most maxBody bytes, a small one
// into buf, a buffer of the server's (bodies), which putBody gives back
// once the body is decoded (decodeDecide and decodeReward keep nothing
// of it).
func (a *server) readSmall(w http.ResponseWriter, r *http.Request) (data []byte, buf *[]byte, err error) {
	buf, _ = a.bodies.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	data, err = readRequest(http.MaxBytesReader(w, r.Body, maxBody), r.ContentLength, *buf)
	return data, buf, err
}

// putBody gives back buf, which holds data now.
func (a *server) putBody(buf *[]byte, data []byte) {
	if cap(data) <= 4097 {
		*buf = data[:0]
	}
	a.bodies.Put(buf)
}

// decodeDecide decodes a decision's body into q by fastDecide, the
// common shape's one pass, or else by decodeBytes: what fastDecide
// accepts, decodeBytes accepts with the same value. (Plain functions,
// not one generic over the fast path: a call through a function value
// would move q to the heap.)
func decodeDecide(data []byte, q *decideReq) error {
	if fastDecide(data, q) {
		return nil
	}
	var slow decideReq // of its own, so that q stays on the fast path's stack
	err := decodeBytes(data, &slow)
	*q = slow
	return err
}

// decodeReward is decodeDecide for a reward's body.
func decodeReward(data []byte, q *rewardReq) error {
	if fastReward(data, q) {
		return nil
	}
	var slow rewardReq
	err := decodeBytes(data, &slow)
	*q = slow
	return err
}

// decodeBytes is decode on a body already read.
func decodeBytes(data []byte, v any) error {
	if !utf8.Valid(data) {
		return fault.Errorf(fault.Invalid, "invalid JSON: the body is not valid UTF-8")
	}
	if err := checkJSON(data, reflect.TypeOf(v)); err != nil {
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

// checkJSON checks that data is one JSON value (json.Valid: no trailing
// data either) and that its objects' keys fit t, the Go type it will be decoded into (nil: any value): no
// key twice (after unescaping), a struct's keys exactly its fields' JSON
// names, no number beyond float64, and no nesting beyond MaxDepth. The
// syntax is json.Valid's; the walk over the valid bytes then reads keys
// and numbers without allocating.
func checkJSON(data []byte, t reflect.Type) error {
	if !json.Valid(data) {
		var x any
		if err := json.Unmarshal(data, &x); err != nil {
			return err
		}
		return errors.New("not one JSON value")
	}
	w := walker{data: data}
	return w.value(t, 0)
}

// walker reads a valid JSON text.
type walker struct {
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
		ft, err := fieldType(t, key)
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
func fieldType(t reflect.Type, key string) (reflect.Type, error) {
	switch {
	case t == nil:
		return nil, nil
	case t.Kind() == reflect.Map:
		return t.Elem(), nil
	case t.Kind() != reflect.Struct:
		return nil, nil
	}
	fs := jsonFields(t)
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

// requestFields holds jsonFields of the request types and the struct
// types within them, computed once (reflect.VisibleFields allocates on
// every call) and never changed.
var requestFields = fieldTables(reflect.TypeFor[define.Spec](), reflect.TypeFor[decideReq](), reflect.TypeFor[rewardReq]())

// fieldTables returns the JSON fields of the struct types reachable from
// ts, by type.
func fieldTables(ts ...reflect.Type) map[reflect.Type]map[string]reflect.Type {
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
	return out
}

// jsonFields returns the types of t's fields by their JSON names.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if fs, ok := requestFields[t]; ok {
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

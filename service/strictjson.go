package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"
)

// decode reads one JSON value into v strictly: the body must be valid
// UTF-8; field names must match exactly (encoding/json alone matches
// them case-insensitively) and appear once; unknown fields, trailing data
// and bodies over the reader's limit are errors (400, or 413).
func decode(r io.Reader, v any) error {
	data, err := io.ReadAll(r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return errorf(400, "reading the body: %v", err)
	}
	return decodeBytes(data, v)
}

// decodeBytes is decode on a body already read.
func decodeBytes(data []byte, v any) error {
	if !utf8.Valid(data) {
		return errorf(400, "invalid JSON: the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := checkKeys(dec, reflect.TypeOf(v), 0); err != nil {
		return errorf(400, "invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(400, "invalid JSON: data after the value")
	}
	// checkKeys has refused unknown fields, keys of the wrong case and
	// trailing data: what is left is decoding the value.
	if err := json.Unmarshal(data, v); err != nil {
		return errorf(400, "invalid JSON: %v", err)
	}
	return nil
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// maxDepth bounds the nesting of a request's JSON (a contextual decision
// set is 2 deep): deeper is a 400, found before any recursion goes
// further.
const maxDepth = 32

// checkKeys reads one JSON value from dec, nested depth deep, and checks
// its objects' keys against t, the Go type it will be decoded into (nil:
// any value): no key twice, a struct's keys exactly its fields' JSON
// names, and no nesting beyond maxDepth.
func checkKeys(dec *json.Decoder, t reflect.Type, depth int) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessage {
		t = nil
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') && depth >= maxDepth {
		return fmt.Errorf("nested deeper than %d levels", maxDepth)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key := k.(string)
			if seen[key] {
				return fmt.Errorf("field %q appears twice", key)
			}
			seen[key] = true
			var ft reflect.Type
			switch {
			case t == nil:
			case t.Kind() == reflect.Struct:
				if ft, err = fieldType(t, key); err != nil {
					return err
				}
			case t.Kind() == reflect.Map:
				ft = t.Elem()
			}
			if err := checkKeys(dec, ft, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for dec.More() {
			if err := checkKeys(dec, et, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}

// fieldType returns the type of t's field whose JSON name is exactly key.
func fieldType(t reflect.Type, key string) (reflect.Type, error) {
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
var requestFields = fieldTables(reflect.TypeFor[Spec](), reflect.TypeFor[decideReq](), reflect.TypeFor[rewardReq]())

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

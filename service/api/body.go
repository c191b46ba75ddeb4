package api

import (
	"errors"
	"io"
	"net/http"
	"reflect"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/media"
	"github.com/dpbandit/dpbandit/service/internal/strictjson"
)

// requests decodes the native surface's requests strictly.
var requests = strictjson.NewDecoder(reflect.TypeFor[define.Spec](), reflect.TypeFor[decideReq](), reflect.TypeFor[rewardReq]())

// decode reads one JSON value into v strictly: the body must be valid
// UTF-8; field names must match exactly (encoding/json alone matches
// them case-insensitively) and appear once; unknown fields, trailing data
// and bodies over the reader's limit are errors (400, or 413).
func decode(r io.Reader, v any) error {
	data, err := readRequest(r, 0, nil)
	if err != nil {
		return err
	}
	return requests.Decode(data, v)
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

// readSmall reads a request's body of at most media.MaxBody bytes, a small one
// into buf, a buffer of the server's (bodies), which putBody gives back
// once the body is decoded (decodeDecide and decodeReward keep nothing
// of it).
func (a *server) readSmall(w http.ResponseWriter, r *http.Request) (data []byte, buf *[]byte, err error) {
	buf, _ = a.bodies.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	data, err = readRequest(http.MaxBytesReader(w, r.Body, media.MaxBody), r.ContentLength, *buf)
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
// common shape's one pass, or else by requests.Decode: what fastDecide
// accepts, requests.Decode accepts with the same value. (Plain functions,
// not one generic over the fast path: a call through a function value
// would move q to the heap.)
func decodeDecide(data []byte, q *decideReq) error {
	if fastDecide(data, q) {
		return nil
	}
	var slow decideReq // of its own, so that q stays on the fast path's stack
	err := requests.Decode(data, &slow)
	*q = slow
	return err
}

// decodeReward is decodeDecide for a reward's body.
func decodeReward(data []byte, q *rewardReq) error {
	if fastReward(data, q) {
		return nil
	}
	var slow rewardReq
	err := requests.Decode(data, &slow)
	*q = slow
	return err
}

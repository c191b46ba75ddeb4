package define

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/dpbandit/dpbandit/internal/jsonscan"
)

// The fast path of ReadRank: a rank request read in place by jsonscan,
// its feature objects left as the text they are (featurehash reads them
// in place too). It accepts only what encoding/json reads the same way
// into a RankRequest (the fields' names written exactly and each once;
// strings without escapes and in valid UTF-8) and otherwise reports ok =
// false, and ReadRank decodes the request with encoding/json, for the
// same request or the same error.

// The fields of a rank request, as bits of the set of those read.
const (
	rfContext = 1 << iota
	rfActions
	rfExcluded
	rfEvent
	rfDefer
)

// readRankFast reads a rank request on the fast path. The features'
// texts are copied out of raw, which may be reused after.
//
// With a rankCache, the action list is looked up by its text first, and read only when the cache does not know it; where tells
// where it lies in raw, and the list the cache knew.
func readRankFast(raw []byte, rc *rankCache) (req RankRequest, where actionsAt, ok bool) {
	raw = append([]byte(nil), raw...) // one copy, which the features alias
	s := jsonscan.Scanner{B: raw}
	seen := 0
	where.at = -1
	ok = s.Object(func(key []byte) bool {
		var bit int
		switch string(key) {
		case "contextFeatures":
			bit, ok = rfContext, rawList(&s, &req.ContextFeatures)
		case "actions":
			s.WS()
			where.at = s.I
			if rc != nil {
				if where.list = rc.recent(&s); where.list == nil {
					if key, valid := actionsKey(&s); valid {
						where.list = rc.get(key)
					}
				}
			}
			if where.known = where.list != nil; where.known {
				bit, ok, req.Actions = rfActions, true, where.list.actions
			} else {
				s.I = where.at
				bit, ok = rfActions, actionList(&s, &req.Actions)
			}
			where.end = s.I
		case "excludedActions":
			bit, ok = rfExcluded, stringList(&s, &req.ExcludedActions)
		case "eventId":
			bit = rfEvent
			req.EventID, ok = str(&s)
		case "deferActivation":
			bit = rfDefer
			switch {
			case s.Literal("true"):
				req.DeferActivation = true
			case s.Literal("false"), s.Literal("null"):
			default:
				ok = false
			}
		default:
			return false // unknown, or a case encoding/json folds
		}
		if seen&bit != 0 {
			return false // named twice: encoding/json keeps the last
		}
		seen |= bit
		return ok
	})
	s.WS()
	return req, where, ok && s.I == len(raw)
}

// str reads a string in valid UTF-8 (or null: "").
func str(s *jsonscan.Scanner) (string, bool) {
	if s.Literal("null") {
		return "", true
	}
	b, ok := s.Str()
	return string(b), ok && utf8.Valid(b)
}

// rawList reads an array of any values as their texts.
func rawList(s *jsonscan.Scanner, out *[]json.RawMessage) bool {
	*out = []json.RawMessage{} // encoding/json's [] is empty, not nil
	if s.Literal("null") {
		*out = nil
		return true
	}
	return s.Array(func() bool {
		s.WS()
		start := s.I
		if !s.Skip(1) {
			return false
		}
		*out = append(*out, s.B[start:s.I:s.I])
		return true
	})
}

// stringList reads an array of strings.
func stringList(s *jsonscan.Scanner, out *[]string) bool {
	*out = []string{}
	if s.Literal("null") {
		*out = nil
		return true
	}
	return s.Array(func() bool {
		v, ok := str(s)
		*out = append(*out, v)
		return ok
	})
}

// actionList reads the actions: objects of an id and features.
func actionList(s *jsonscan.Scanner, out *[]RankableAction) bool {
	*out = []RankableAction{}
	if s.Literal("null") {
		*out = nil
		return true
	}
	return s.Array(func() bool {
		var a RankableAction
		seen := 0
		ok := s.Object(func(key []byte) bool {
			var bit int
			var ok bool
			switch string(key) {
			case "id":
				bit = 1
				a.ID, ok = str(s)
			case "features":
				bit, ok = 2, rawList(s, &a.Features)
			}
			if seen&bit != 0 || bit == 0 {
				return false
			}
			seen |= bit
			return ok
		})
		*out = append(*out, a)
		return ok
	})
}

// DeferredActivation reports whether a stored rank request (its
// compacted text, a decision's context) asked to defer the activation.
// Its top-level members are walked in place, and decoded by
// encoding/json only when the fast path is not sure.
func DeferredActivation(ctxt string) bool {
	s := jsonscan.Scanner{B: jsonscan.UnsafeBytes(ctxt)}
	deferred, twice := false, false
	seen := false
	ok := s.Object(func(key []byte) bool {
		if string(key) != "deferActivation" {
			// (a case encoding/json folds into the field: let it)
			return !strings.EqualFold(string(key), "deferActivation") && s.Skip(1)
		}
		twice, seen = seen, true
		deferred = s.Literal("true")
		return deferred || s.Literal("false") || s.Literal("null")
	})
	if s.WS(); ok && !twice && s.I == len(s.B) {
		return deferred
	}
	var r struct {
		DeferActivation bool `json:"deferActivation"`
	}
	return json.Unmarshal([]byte(ctxt), &r) == nil && r.DeferActivation
}

package define

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dpbandit/dpbandit/service/fault"
)

// dotSegment reports whether id is "." or "..": as a segment of a URL
// path, clients (curl, Python's urllib3, browsers, Go's ResolveReference)
// remove it before sending the request (RFC 3986, section 5.2.4), so an
// experiment or unit of that id could never be addressed. Every other id,
// escaped as one path segment (url.PathEscape), reaches the server
// unchanged: escaping leaves only unreserved characters unencoded, which
// no normalisation alters.
func dotSegment(id string) bool { return id == "." || id == ".." }

// CheckPathID checks an id that appears as a segment of a URL path (a
// unit's, in its ledger's path): CheckID's rules, and not a dot segment.
func CheckPathID(name, v string) error {
	if err := CheckID(name, v); err != nil {
		return err
	}
	if dotSegment(v) {
		return fault.Errorf(fault.Invalid, "%s %q cannot be addressed in a URL: clients remove the path segments \".\" and \"..\"", name, v)
	}
	return nil
}

// maxID is the longest event or unit id, in bytes: 256 characters of at
// most four bytes, Personalizer's longest eventId.
const maxID = 1024

// CheckID checks an event or unit id at the boundary, alike for every
// store: 1 to maxID bytes of valid UTF-8 without control characters
// (NUL, which PostgreSQL's text cannot hold, among them) or U+FFFD.
func CheckID(name, v string) error {
	if v == "" || len(v) > maxID {
		return fault.Errorf(fault.Invalid, "%s must be a string of 1 to %d bytes, got %d bytes", name, maxID, len(v))
	}
	if !utf8.ValidString(v) || strings.ContainsRune(v, utf8.RuneError) {
		// U+FFFD is also what JSON decoding makes of a lone surrogate
		// (\ud800): two different ids would become one.
		return fault.Errorf(fault.Invalid, "%s is not valid UTF-8, or has a lone surrogate or U+FFFD", name)
	}
	if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
		return fault.Errorf(fault.Invalid, "%s has a control character (%U) at byte %d", name, []rune(v[i:])[0], i)
	}
	return nil
}

// IsName reports whether s is a valid experiment id or tenant name: 1 to
// 64 letters, digits, '.', '_' or '-'.
func IsName(s string) bool { return idPattern.MatchString(s) }

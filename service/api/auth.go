package api

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/media"
)

// Roles of a token.
const (
	// RoleClient may take decisions and report rewards in its tenant's
	// experiments.
	RoleClient = "client"
	// RoleAdmin may also create its tenant's experiments and read their
	// state, logs, ledgers, metrics and the dashboard.
	RoleAdmin = "admin"
	// RoleOperator reads every tenant's metrics and the process metrics,
	// and nothing else: it belongs to no tenant (tenant "*" in the token
	// file).
	RoleOperator = "operator"
	// RolePersonalizer is a Personalizer subscription key
	// (Ocp-Apim-Subscription-Key): it ranks, rewards and activates in
	// one experiment of one tenant (Token.Experiment), on the
	// Personalizer routes only.
	RolePersonalizer = "personalizer"
)

// Token is what a bearer token grants: a role in one tenant (and, for a
// Personalizer key, in one experiment of it).
type Token struct {
	Tenant string
	Role   string
	// Experiment is the one experiment a Personalizer key serves.
	Experiment string
}

// AllTenants is an operator's tenant in the token file.
const AllTenants = "*"

// LoadTokens reads a token file: one token per line, "TOKEN TENANT ROLE"
// separated by spaces, ROLE client, admin or operator (whose TENANT is
// "*"); a Personalizer subscription key is "KEY TENANT personalizer
// EXPERIMENT", bound to one experiment of one tenant (personalizer.go);
// blank lines and lines starting with # are skipped. Tokens must
// have at least 16 characters; tenant names are 1 to 64 letters, digits,
// '.', '_' or '-'.
func LoadTokens(r io.Reader) (map[string]Token, error) {
	out := map[string]Token{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		var exp string
		if len(f) == 4 && f[2] == RolePersonalizer {
			if exp, f = f[3], f[:3]; !define.IsName(exp) {
				return nil, fmt.Errorf("token file line %d: an experiment id is 1 to 64 letters, digits, '.', '_' or '-'", n)
			}
		} else if len(f) != 3 || (f[2] != RoleClient && f[2] != RoleAdmin && f[2] != RoleOperator) {
			return nil, fmt.Errorf("token file line %d: want \"TOKEN TENANT client|admin\", \"TOKEN * operator\" or \"KEY TENANT personalizer EXPERIMENT\"", n)
		}
		switch {
		case f[2] == RoleOperator && f[1] != AllTenants:
			return nil, fmt.Errorf("token file line %d: an operator belongs to no tenant: write \"TOKEN * operator\"", n)
		case f[2] != RoleOperator && !define.IsName(f[1]):
			return nil, fmt.Errorf("token file line %d: a tenant name is 1 to 64 letters, digits, '.', '_' or '-'", n)
		case len(f[0]) < 16:
			return nil, fmt.Errorf("token file line %d: a token needs at least 16 characters", n)
		}
		if _, dup := out[f[0]]; dup {
			return nil, fmt.Errorf("token file line %d: the token is listed twice", n)
		}
		out[f[0]] = Token{Tenant: f[1], Role: f[2], Experiment: exp}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("the token file lists no token")
	}
	return out, nil
}

// openAccess is every request's token without a token file: an admin of
// tenant "default", who also sees the process metrics (the service then
// answers loopback hosts only).
var openAccess = Token{Tenant: "default", Role: RoleAdmin}

// auth returns the request's token when its role is one of roles (none:
// any request). The bearer token is read from the Authorization header;
// a dashboard request (cookie true) may instead carry the session cookie
// set by /login.
func (a *server) auth(r *http.Request, cookie bool, roles ...string) (Token, error) {
	if a.cfg.Tokens == nil || len(roles) == 0 {
		return openAccess, nil
	}
	var found *Token
	if scheme, raw, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") { // schemes ignore case (RFC 7235)
		found = a.lookup(raw)
	} else if c, err := r.Cookie(SessionCookie); cookie && err == nil {
		found = a.session(c.Value)
	}
	if found == nil {
		return Token{}, fault.Errorf(fault.Unauthenticated, "missing or unknown bearer token")
	}
	if !slices.Contains(roles, found.Role) {
		return Token{}, fault.Errorf(fault.Forbidden, "this needs a token of role %s", strings.Join(roles, " or "))
	}
	return *found, nil
}

// lookup finds a token in constant time per token.
func (a *server) lookup(raw string) *Token {
	var found *Token
	for k, t := range a.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(k), []byte(raw)) == 1 {
			found = &t
		}
	}
	return found
}

// The dashboard's session: after a login with an admin token, the
// browser holds a cookie "EXPIRY.TOKENID.SID.MAC", where TOKENID names the
// token (the first 16 hex digits of its SHA-256, never the token
// itself), SID is the session's own random id (128 bits: two logins with
// one token are two sessions) and MAC is an HMAC-SHA256 of the rest
// under a key drawn at start. Sessions end with the process (a restart,
// or another replica, has another key), at their expiry, when their
// token leaves the token file, or at their logout: the SID is then
// revoked until the expiry. The cookie is HttpOnly and SameSite=Strict,
// and is accepted by the dashboard only, never by the API.
const (
	// SessionCookie is the name of the dashboard's session cookie.
	SessionCookie = "dpbandit_session"
	sessionLife   = 12 * time.Hour
	// maxRevoked bounds the sessions logged out before their expiry that
	// a process remembers (85 bytes each on the heap: 5.3 MiB in all).
	maxRevoked = 1 << 16
)

// sessions holds the key of the session MACs and the revoked sessions.
// Revocations are the process's own, as its key is: no other process
// accepts its sessions, so none needs to know them.
type sessions struct {
	mu      sync.Mutex
	key     []byte
	revoked map[string]int64 // SID -> the session's expiry, Unix seconds
}

// newSessions draws the key of the session MACs.
func newSessions() (*sessions, error) {
	ss := &sessions{revoked: map[string]int64{}}
	return ss, ss.rekey()
}

// rekey draws a new key, which ends every session, and forgets the
// revocations, which it makes needless. The caller holds ss.mu or is
// newSessions.
func (ss *sessions) rekey() error {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return err
	}
	ss.key, ss.revoked = k, map[string]int64{}
	return nil
}

// mac returns the MAC of payload; the caller holds ss.mu.
func (ss *sessions) mac(payload string) string {
	m := hmac.New(sha256.New, ss.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func tokenID(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:8])
}

// newSession returns a session cookie's value for a token.
func (a *server) newSession(token string) string {
	p := strconv.FormatInt(a.cfg.Now().Add(sessionLife).Unix(), 10) + "." + tokenID(token) + "." + rand.Text()
	a.sessions.mu.Lock()
	defer a.sessions.mu.Unlock()
	return p + "." + a.sessions.mac(p)
}

// liveSession returns the token id, SID and expiry of a session cookie's
// value whose MAC is right, which has not expired and is not revoked; ok
// is false otherwise. The caller holds a.sessions.mu.
func (a *server) liveSession(v string) (id, sid string, exp int64, ok bool) {
	f := strings.Split(v, ".")
	if len(f) != 4 || !hmac.Equal([]byte(f[3]), []byte(a.sessions.mac(strings.Join(f[:3], ".")))) {
		return "", "", 0, false
	}
	exp, err := strconv.ParseInt(f[0], 10, 64)
	if _, revoked := a.sessions.revoked[f[2]]; err != nil || a.cfg.Now().Unix() >= exp || revoked {
		return "", "", 0, false
	}
	return f[1], f[2], exp, true
}

// session returns the token of a valid session cookie's value.
func (a *server) session(v string) *Token {
	a.sessions.mu.Lock()
	id, _, _, ok := a.liveSession(v)
	a.sessions.mu.Unlock()
	if !ok {
		return nil
	}
	for k, t := range a.cfg.Tokens {
		if tokenID(k) == id && t.Role == RoleAdmin {
			return &t
		}
	}
	return nil
}

// revokeSession ends the session of a cookie's value before its expiry
// (nothing when it is not a live session). Memory stays bounded: past
// maxRevoked revocations, those expired are dropped, and if all are
// still live, a new key ends every session (their users log in again).
func (a *server) revokeSession(v string) error {
	ss := a.sessions
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, sid, exp, ok := a.liveSession(v)
	if !ok {
		return nil
	}
	if len(ss.revoked) >= maxRevoked {
		now := a.cfg.Now().Unix()
		maps.DeleteFunc(ss.revoked, func(_ string, exp int64) bool { return now >= exp })
		if len(ss.revoked) >= maxRevoked {
			return ss.rekey()
		}
	}
	ss.revoked[sid] = exp
	return nil
}

func (a *server) setSession(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// handleLogin takes an admin token from the dashboard's login form and
// sets the session cookie. Any other Content-Type is a 415 (as JSON: no
// browser form sends it), a multipart form among them.
func (a *server) handleLogin(w http.ResponseWriter, r *http.Request) {
	if _, err := media.Check(r, media.Form); err != nil {
		writeJSON(w, 415, errorBody{err.Error()})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	t := a.lookup(r.PostFormValue("token"))
	if a.cfg.Tokens == nil || t == nil || t.Role != RoleAdmin {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(401)
		loginPage.Execute(w, "unknown token, or not an admin token")
		return
	}
	a.setSession(w, r, a.newSession(r.PostFormValue("token")), int(sessionLife/time.Second))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// handleLogout ends the dashboard's session: its cookie is revoked, so
// that a copy of it is refused too, and the browser's is deleted.
func (a *server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		if err := a.revokeSession(c.Value); err != nil {
			writeJSON(w, 500, errorBody{"the session could not be ended: " + err.Error()})
			return
		}
	}
	a.setSession(w, r, "", -1)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// guard refuses, before any route runs, what a browser must not do: a
// state-changing cross-origin request (Sec-Fetch-Site, Origin: see
// http.CrossOriginProtection), and, without a token file, a request for
// another host than a loopback one (DNS rebinding: a page of another
// site whose name resolves to 127.0.0.1 would otherwise read the API).
func (a *server) guard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, 403, "cross-origin request refused: the API takes requests from its own origin or from non-browser clients")
	}))
	return cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.cfg.Tokens == nil && !loopbackHost(r.Host) {
			writeError(w, r, 403, fmt.Sprintf("without a token file the service answers requests for a loopback host only, not %q", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

package service

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
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
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
)

// Token is what a bearer token grants: a role in one tenant.
type Token struct {
	Tenant string
	Role   string
}

// allTenants is an operator's tenant in the token file.
const allTenants = "*"

// LoadTokens reads a token file: one token per line, "TOKEN TENANT ROLE"
// separated by spaces, ROLE client, admin or operator (whose TENANT is
// "*"); blank lines and lines starting with # are skipped. Tokens must
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
		if len(f) != 3 || (f[2] != RoleClient && f[2] != RoleAdmin && f[2] != RoleOperator) {
			return nil, fmt.Errorf("token file line %d: want \"TOKEN TENANT client|admin\" or \"TOKEN * operator\"", n)
		}
		switch {
		case f[2] == RoleOperator && f[1] != allTenants:
			return nil, fmt.Errorf("token file line %d: an operator belongs to no tenant: write \"TOKEN * operator\"", n)
		case f[2] != RoleOperator && !idPattern.MatchString(f[1]):
			return nil, fmt.Errorf("token file line %d: a tenant name is 1 to 64 letters, digits, '.', '_' or '-'", n)
		case len(f[0]) < 16:
			return nil, fmt.Errorf("token file line %d: a token needs at least 16 characters", n)
		}
		if _, dup := out[f[0]]; dup {
			return nil, fmt.Errorf("token file line %d: the token is listed twice", n)
		}
		out[f[0]] = Token{Tenant: f[1], Role: f[2]}
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
func (s *Server) auth(r *http.Request, cookie bool, roles ...string) (Token, error) {
	if s.cfg.Tokens == nil || len(roles) == 0 {
		return openAccess, nil
	}
	var found *Token
	if scheme, raw, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") { // schemes ignore case (RFC 7235)
		found = s.lookup(raw)
	} else if c, err := r.Cookie(sessionCookie); cookie && err == nil {
		found = s.session(c.Value)
	}
	if found == nil {
		return Token{}, errorf(401, "missing or unknown bearer token")
	}
	if !slices.Contains(roles, found.Role) {
		return Token{}, errorf(403, "this needs a token of role %s", strings.Join(roles, " or "))
	}
	return *found, nil
}

// lookup finds a token in constant time per token.
func (s *Server) lookup(raw string) *Token {
	var found *Token
	for k, t := range s.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(k), []byte(raw)) == 1 {
			found = &t
		}
	}
	return found
}

// The dashboard's session: after a login with an admin token, the
// browser holds a cookie "EXPIRY.TOKENID.MAC", where TOKENID names the
// token (the first 16 hex digits of its SHA-256, never the token
// itself) and MAC is an HMAC-SHA256 of both under a key drawn at start:
// sessions end with the process, at their expiry, or when their token
// leaves the token file. The cookie is HttpOnly and SameSite=Strict, and
// is accepted by the dashboard only, never by the API.
const (
	sessionCookie = "dpbandit_session"
	sessionLife   = 12 * time.Hour
)

// newSessionKey draws the key of the session MACs.
func newSessionKey() ([]byte, error) {
	k := make([]byte, 32)
	_, err := rand.Read(k)
	return k, err
}

func tokenID(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:8])
}

func (s *Server) sessionMAC(payload string) string {
	m := hmac.New(sha256.New, s.sessionKey)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// newSession returns a session cookie's value for a token.
func (s *Server) newSession(token string) string {
	p := strconv.FormatInt(s.now().Add(sessionLife).Unix(), 10) + "." + tokenID(token)
	return p + "." + s.sessionMAC(p)
}

// session returns the token of a valid session cookie's value.
func (s *Server) session(v string) *Token {
	i := strings.LastIndexByte(v, '.')
	if i < 0 || !hmac.Equal([]byte(v[i+1:]), []byte(s.sessionMAC(v[:i]))) {
		return nil
	}
	exp, id, _ := strings.Cut(v[:i], ".")
	if t, err := strconv.ParseInt(exp, 10, 64); err != nil || s.now().Unix() >= t {
		return nil
	}
	for k, t := range s.cfg.Tokens {
		if tokenID(k) == id && t.Role == RoleAdmin {
			return &t
		}
	}
	return nil
}

func (s *Server) setSession(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// formType is the one Content-Type /login reads: the dashboard's form.
const formType = "application/x-www-form-urlencoded"

// handleLogin takes an admin token from the dashboard's login form and
// sets the session cookie. Any other Content-Type is a 415 (as JSON: no
// browser form sends it), a multipart form among them.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	if _, err := contentType(r, formType); err != nil {
		writeJSON(w, 415, errorBody{err.Error()})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	t := s.lookup(r.PostFormValue("token"))
	if s.cfg.Tokens == nil || t == nil || t.Role != RoleAdmin {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(401)
		loginPage.Execute(w, "unknown token, or not an admin token")
		return
	}
	s.setSession(w, r, s.newSession(r.PostFormValue("token")), int(sessionLife/time.Second))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// handleLogout ends the dashboard's session.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	s.setSession(w, r, "", -1)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// guard refuses, before any route runs, what a browser must not do: a
// state-changing cross-origin request (Sec-Fetch-Site, Origin: see
// http.CrossOriginProtection), and, without a token file, a request for
// another host than a loopback one (DNS rebinding: a page of another
// site whose name resolves to 127.0.0.1 would otherwise read the API).
func (s *Server) guard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 403, errorBody{"cross-origin request refused: the API takes requests from its own origin or from non-browser clients"})
	}))
	return cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Tokens == nil && !loopbackHost(r.Host) {
			writeJSON(w, 403, errorBody{fmt.Sprintf("without a token file the service answers requests for a loopback host only, not %q", r.Host)})
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

package api

import (
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// TestRevokedSessionsAreBounded: a process remembers at most maxRevoked
// logged-out sessions: past that, the expired ones are dropped (a live
// session stays live), and when all are live a new key ends every
// session, never one revocation less.
func TestRevokedSessionsAreBounded(t *testing.T) {
	t.Parallel()
	c := storetest.NewClock(time.Unix(1_700_000_000, 0))
	const admin = "aaaaaaaaaaaaaaaaadmin"
	ss, err := newSessions()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cfg: Config{Tokens: map[string]Token{admin: {Tenant: "A", Role: RoleAdmin}}, Now: c.Now}, sessions: ss}
	revoked := func() int {
		s.sessions.mu.Lock()
		defer s.sessions.mu.Unlock()
		return len(s.sessions.revoked)
	}
	fill := func() {
		for revoked() < maxRevoked {
			if err := s.revokeSession(s.newSession(admin)); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill()
	c.Add(sessionLife) // every revoked session has expired
	live := s.newSession(admin)
	if err := s.revokeSession(s.newSession(admin)); err != nil {
		t.Fatal(err)
	}
	if n := revoked(); n != 1 || s.session(live) == nil {
		t.Fatalf("past the bound with expired revocations: %d kept (want 1), the live session valid: %v", n, s.session(live) != nil)
	}
	fill()
	last := s.newSession(admin)
	if err := s.revokeSession(last); err != nil {
		t.Fatal(err)
	}
	if n := revoked(); n != 0 || s.session(live) != nil || s.session(last) != nil {
		t.Fatalf("past the bound with live revocations: %d kept (want 0 under a new key), the live session valid: %v, the last revoked: %v",
			n, s.session(live) != nil, s.session(last) != nil)
	}
}

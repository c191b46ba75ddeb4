package service

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/api"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// login posts token to /login with the given Content-Type and returns
// the response, its body, and the session cookie it set (nil: none).
func login(t *testing.T, h *harness, ctype, body string) (*http.Response, []byte, *http.Cookie) {
	t.Helper()
	resp, b := request(t, h, "POST", "/login", map[string]string{"Content-Type": ctype}, body)
	for _, c := range resp.Cookies() {
		if c.Name == api.SessionCookie && c.Value != "" {
			return resp, b, c
		}
	}
	return resp, b, nil
}

// TestLoginTakesOnlyItsForm: /login reads an
// application/x-www-form-urlencoded form (the dashboard's, with or
// without a charset); any other Content-Type, or none, is a 415 as JSON,
// with an admin token in the body as without one, and sets no session.
func TestLoginTakesOnlyItsForm(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{Tokens: tenantTokens})
	const admin = "aaaaaaaaaaaaaaaaadmin"
	form := "token=" + admin
	var mp bytes.Buffer
	mp.WriteString("--XYZ\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\n" + admin + "\r\n--XYZ--\r\n")
	for ctype, body := range map[string]string{
		"text/plain":                          form,
		"multipart/form-data; boundary=XYZ":   mp.String(),
		"application/json":                    `{"token":"` + admin + `"}`,
		"":                                    form,
		"application/x-www-form-urlencoded;;": form,
		"text/html":                           form,
	} {
		for _, b := range []string{body, "token=nothing"} {
			resp, out, c := login(t, h, ctype, b)
			var e struct{ Error string }
			if resp.StatusCode != 415 || c != nil || json.Unmarshal(out, &e) != nil || !strings.Contains(e.Error, "application/x-www-form-urlencoded") {
				t.Errorf("Content-Type %q, body %q: %d, cookie %v: %s", ctype, b, resp.StatusCode, c, out)
			}
		}
	}
	for _, ctype := range []string{"application/x-www-form-urlencoded", "application/x-www-form-urlencoded; charset=utf-8"} {
		if resp, out, c := login(t, h, ctype, form); resp.StatusCode != 303 || c == nil {
			t.Errorf("the form as %q: %d, cookie %v: %s", ctype, resp.StatusCode, c, out)
		}
		if resp, _, c := login(t, h, ctype, "token=nothing"); resp.StatusCode != 401 || c != nil {
			t.Errorf("an unknown token as %q: %d, cookie %v", ctype, resp.StatusCode, c)
		}
	}
}

// dashboard reads / with the session cookie c and returns the status.
func dashboardWith(t *testing.T, h *harness, c *http.Cookie) int {
	t.Helper()
	resp, _ := request(t, h, "GET", "/", map[string]string{"Cookie": api.SessionCookie + "=" + c.Value}, "")
	return resp.StatusCode
}

// TestLogoutRevokesTheSession: after POST /logout, a copy of the session
// cookie is refused (401), while another session of the same token, in
// another browser, goes on; a session is its process's own: another
// process (a replica) and a restart refuse it.
func TestLogoutRevokesTheSession(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{Tokens: tenantTokens})
	const ctype, form = "application/x-www-form-urlencoded", "token=aaaaaaaaaaaaaaaaadmin"
	_, _, first := login(t, h, ctype, form)
	_, _, second := login(t, h, ctype, form)
	if first == nil || second == nil || first.Value == second.Value {
		t.Fatalf("two logins: %v and %v", first, second)
	}
	for _, c := range []*http.Cookie{first, second} {
		if code := dashboardWith(t, h, c); code != 200 {
			t.Fatalf("the dashboard with a session: %d", code)
		}
	}
	resp, b := request(t, h, "POST", "/logout", map[string]string{"Cookie": api.SessionCookie + "=" + first.Value}, "")
	if resp.StatusCode != 303 {
		t.Fatalf("logout: %d %s", resp.StatusCode, b)
	}
	if code := dashboardWith(t, h, first); code != 401 {
		t.Errorf("a copy of the cookie after its logout: %d, want 401", code)
	}
	if code := dashboardWith(t, h, second); code != 200 {
		t.Errorf("another session of the same token after a logout: %d, want 200", code)
	}

	other := start(t, storetest.SQLite(t), Config{Tokens: tenantTokens})
	if code := dashboardWith(t, other, second); code != 401 {
		t.Errorf("another process took the session: %d, want 401", code)
	}
	h.restart()
	if code := dashboardWith(t, h, second); code != 401 {
		t.Errorf("the session after a restart: %d, want 401", code)
	}
}

package service

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// login posts token to /login with the given Content-Type and returns
// the response, its body, and the session cookie it set (nil: none).
func login(t *testing.T, h *harness, ctype, body string) (*http.Response, []byte, *http.Cookie) {
	t.Helper()
	resp, b := request(t, h, "POST", "/login", map[string]string{"Content-Type": ctype}, body)
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie && c.Value != "" {
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
	h := start(t, sqliteDSN(t), Config{Tokens: tenantTokens})
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
			var e errorBody
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

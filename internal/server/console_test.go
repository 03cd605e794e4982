package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/console"
)

func newConsoleServer(t *testing.T, on bool) *httptest.Server {
	t.Helper()
	cfg := config.Defaults()
	cfg.Data = t.TempDir()
	cfg.Argon2Memory, cfg.Argon2Time = 8192, 1
	cfg.Console = on
	s, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	if _, _, err := s.auth.Signups.Signup(context.Background(), "c@example.com", "console password"); err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestConsoleMount(t *testing.T) {
	for _, tc := range []struct {
		name       string
		on         bool
		path       string
		status     int
		ctype, csp string
	}{
		{"on: / is the console", true, "/", 200, "text/html; charset=utf-8", console.CSP},
		{"on: a route is the console", true, "/b/bucket/folder/", 200, "text/html; charset=utf-8", console.CSP},
		{"on: the API is still the API", true, "/api/v1/nope", 404, "application/problem+json", ""},
		{"on: a missing asset is a problem", true, "/assets/nope.js", 404, "application/problem+json", ""},
		{"off: / is 404", false, "/", 404, "application/problem+json", ""},
		{"off: a route is 404", false, "/b/bucket/", 404, "application/problem+json", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newConsoleServer(t, tc.on)
			res, err := http.Get(ts.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if got, want := res.StatusCode, tc.status; got != want {
				t.Errorf("status: got %d, want %d", got, want)
			}
			if got, want := res.Header.Get("Content-Type"), tc.ctype; got != want {
				t.Errorf("Content-Type: got %q, want %q", got, want)
			}
			if got, want := res.Header.Get("Content-Security-Policy"), tc.csp; got != want {
				t.Errorf("CSP: got %q, want %q", got, want)
			}
		})
	}
}

// TestCookieSession covers the browser session of the file API: with
// X-Coffer-Session: cookie the refresh token travels in an HttpOnly,
// SameSite=Strict cookie scoped to /api/v1/auth, and only requests with
// that header can use it.
func TestCookieSession(t *testing.T) {
	ts := newConsoleServer(t, true)
	post := func(path, body string, cookie *http.Cookie, header bool) (*http.Response, map[string]any) {
		t.Helper()
		return postSession(t, ts.URL+path, body, cookie, header)
	}
	refreshCookie := func(res *http.Response) *http.Cookie {
		t.Helper()
		for _, c := range res.Cookies() {
			if c.Name == "coffer_refresh" {
				return c
			}
		}
		t.Fatalf("no coffer_refresh cookie in %q", res.Header.Values("Set-Cookie"))
		return nil
	}
	login := `{"email":"c@example.com","password":"console password"}`

	t.Run("without the header: tokens in the body, no cookie", func(t *testing.T) {
		res, body := post("/api/v1/auth/login", login, nil, false)
		if got, want := res.StatusCode, 200; got != want {
			t.Fatalf("status: got %d, want %d", got, want)
		}
		if got := res.Header.Values("Set-Cookie"); len(got) != 0 {
			t.Errorf("Set-Cookie: got %q, want none", got)
		}
		if body["refresh_token"] == "" {
			t.Errorf("refresh_token missing from the body")
		}
	})

	res, body := post("/api/v1/auth/login", login, nil, true)
	if got, want := res.StatusCode, 200; got != want {
		t.Fatalf("login: got %d, want %d", got, want)
	}
	if got, want := body["refresh_token"], ""; got != want {
		t.Errorf("cookie login: refresh_token in the body %q, want %q", got, want)
	}
	if body["access_token"] == "" {
		t.Errorf("cookie login: no access_token")
	}
	c := refreshCookie(res)
	raw := res.Header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/api/v1/auth", "Max-Age="} {
		if !strings.Contains(raw, want) {
			t.Errorf("Set-Cookie %q lacks %s", raw, want)
		}
	}
	if strings.Contains(raw, "Secure") {
		t.Errorf("Set-Cookie %q is Secure over plain HTTP", raw)
	}

	t.Run("the cookie without the header is ignored", func(t *testing.T) {
		res, _ := post("/api/v1/auth/refresh", `{}`, c, false)
		if res.StatusCode == 200 {
			t.Fatalf("refresh with the cookie but no X-Coffer-Session: got 200")
		}
	})

	res, body = post("/api/v1/auth/refresh", `{}`, c, true)
	if got, want := res.StatusCode, 200; got != want {
		t.Fatalf("cookie refresh: got %d, want %d (%v)", got, want, body)
	}
	c2 := refreshCookie(res)
	if c2.Value == c.Value {
		t.Errorf("refresh did not rotate the cookie")
	}
	if got, want := body["refresh_token"], ""; got != want {
		t.Errorf("cookie refresh: refresh_token in the body %q", got)
	}

	t.Run("a used-up cookie is refused", func(t *testing.T) {
		res, _ := post("/api/v1/auth/refresh", `{}`, c, true)
		if got, want := res.StatusCode, 401; got != want {
			t.Errorf("reuse: got %d, want %d", got, want)
		}
	})

	// Reuse detection revoked the login: a fresh one for the logout.
	res, _ = post("/api/v1/auth/login", login, nil, true)
	c3 := refreshCookie(res)
	res, _ = post("/api/v1/auth/logout", `{}`, c3, true)
	if got, want := res.StatusCode, 204; got != want {
		t.Fatalf("logout: got %d, want %d", got, want)
	}
	if cl := refreshCookie(res); cl.MaxAge >= 0 || cl.Value != "" {
		t.Errorf("logout did not clear the cookie: %q", res.Header.Get("Set-Cookie"))
	}
	res, _ = post("/api/v1/auth/refresh", `{}`, c3, true)
	if got, want := res.StatusCode, 401; got != want {
		t.Errorf("refresh after logout: got %d, want %d", got, want)
	}
}

// postSession POSTs body (JSON) to url with cookie, and with
// X-Coffer-Session: cookie if header; it returns the response (its body
// read) and the body decoded.
func postSession(t *testing.T, url, body string, cookie *http.Cookie, header bool) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if header {
		req.Header.Set("X-Coffer-Session", "cookie")
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(res.Body)
	json.Unmarshal(b, &out)
	return res, out
}

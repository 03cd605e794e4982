package httpapi

import (
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/httpx"
)

// TestCORSRoutes: with --cors-origins, the share-link and direct-upload
// routes answer a preflight from an allowed origin (and refuse another),
// and their answers, errors included, carry the origin and Vary; other
// routes, requests without Origin and a server without the setting stay
// as they were.
func TestCORSRoutes(t *testing.T) {
	const app = "http://app.test"
	f := newFakeServices()
	api := New(Services{Accounts: f, Buckets: f, Files: f}, testConfig(func(c *Config) {
		c.PublicMaxAge, c.CORSOrigins = 90*time.Second, []string{app, "https://other.test"}
	}), nil)
	e := &apiEnv{t: t, f: f, api: api, h: httpx.RequestIDMiddleware(api.Handler())}
	pre := func(e *apiEnv, origin, target, method string) result {
		t.Helper()
		return e.do("OPTIONS", target, "", nil, "Origin", origin, "Access-Control-Request-Method", method,
			"Access-Control-Request-Headers", "authorization,content-type")
	}
	for _, tc := range []struct{ target, method string }{
		{"/api/v1/uploads", "POST"}, {"/api/v1/uploads/u1/complete", "POST"}, {"/api/v1/uploads/u1", "DELETE"},
		{"/s/tok", "GET"}, {"/s/tok/a/b.txt", "GET"}, {"/s/tok/up.txt", "PUT"}, {"/s/tok/unlock", "POST"},
	} {
		r := pre(e, app, tc.target, tc.method)
		h := r.Header()
		if r.Code != 204 || h.Get("Access-Control-Allow-Origin") != app || h.Get("Access-Control-Allow-Methods") != tc.method ||
			h.Get("Access-Control-Allow-Headers") != "authorization,content-type" || h.Get("Access-Control-Max-Age") != corsMaxAge ||
			h.Get("Access-Control-Allow-Credentials") != "" || h.Get("Vary") == "" {
			t.Errorf("preflight %s %s: %d %v", tc.method, tc.target, r.Code, h)
		}
		r = pre(e, "http://evil.test", tc.target, tc.method)
		r.want(t, 403, "permission_denied")
		if v := r.Header().Get("Access-Control-Allow-Origin"); v != "" {
			t.Errorf("preflight from another origin %s %s: Allow-Origin %q", tc.method, tc.target, v)
		}
	}
	// Routes a page of another origin has no use for: the router answers.
	for _, tc := range []struct{ target, method string }{{"/api/v1/buckets", "POST"}, {"/api/v1/me", "GET"}, {"/api/v1/auth/login", "POST"}} {
		r := pre(e, app, tc.target, tc.method)
		if r.Code != 405 || r.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight %s %s (no CORS route): %d %v", tc.method, tc.target, r.Code, r.Header())
		}
	}
	// Actual requests: errors carry the headers too.
	r := e.do("POST", "/api/v1/uploads", "", []byte(`{}`), "Origin", app, "Content-Type", "application/json")
	r.want(t, 401, "unauthenticated")
	if h := r.Header(); h.Get("Access-Control-Allow-Origin") != app || h.Get("Access-Control-Expose-Headers") != corsExpose || h.Get("Vary") != "Origin" {
		t.Errorf("401 of a CORS route: %v", h)
	}
	r = e.do("GET", "/api/v1/uploads/u1", "", nil, "Origin", "http://evil.test")
	if h := r.Header(); h.Get("Access-Control-Allow-Origin") != "" || h.Get("Vary") != "Origin" {
		t.Errorf("a CORS route from another origin: %v", h)
	}
	r = e.do("GET", "/api/v1/buckets", "tok-alice", nil, "Origin", app)
	if h := r.Header(); h.Get("Access-Control-Allow-Origin") != "" || h.Get("Vary") != "" {
		t.Errorf("a route that is no CORS route: %v", h)
	}
	r = e.do("GET", "/api/v1/uploads/u1", "", nil)
	if h := r.Header(); h.Get("Access-Control-Allow-Origin") != "" || h.Get("Vary") != "" {
		t.Errorf("a request without Origin: %v", h)
	}
	// Without --cors-origins nothing answers across origins.
	plain := newAPIEnv(t)
	if r := pre(plain, app, "/api/v1/uploads", "POST"); r.Code != 405 || r.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight without --cors-origins: %d %v", r.Code, r.Header())
	}
	// "*" answers "*".
	star := New(Services{Accounts: f, Buckets: f, Files: f}, testConfig(func(c *Config) { c.CORSOrigins = []string{"*"} }), nil)
	e = &apiEnv{t: t, f: f, api: star, h: httpx.RequestIDMiddleware(star.Handler())}
	if r := pre(e, "http://any.test", "/s/tok", "GET"); r.Code != 204 || r.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("preflight with --cors-origins '*': %d %v", r.Code, r.Header())
	}
}

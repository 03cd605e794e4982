package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object/objectfake"
)

// fakeServices is the object service's in-memory fake (objectfake:
// buckets and objects with the service's ownership rule, write conditions
// and body checks, and a record of every write) plus bearer tokens, for
// the handler tests (handler_test.go). The Accounts it embeds is nil: a
// route that calls a method it does not fake panics.
type fakeServices struct {
	Accounts
	*objectfake.Service
}

var (
	testMod  = time.Date(2026, 11, 20, 8, 30, 0, 0, time.UTC)
	testData = []byte(strings.Repeat("0123456789", 10))
)

const alice, admin = "alice", "root"

// newFakeServices has alice's buckets b (private) and pub (public-read)
// and the administrator's bucket rb.
func newFakeServices() *fakeServices {
	f := &fakeServices{Service: objectfake.New(testMod)}
	for _, b := range []meta.Bucket{
		{Name: "b", OwnerID: alice, Visibility: meta.Private},
		{Name: "pub", OwnerID: alice, Visibility: meta.PublicRead},
		{Name: "rb", OwnerID: admin, Visibility: meta.Private},
	} {
		b.CreatedAt = testMod
		f.Buckets[b.Name] = b
	}
	return f
}

func (f *fakeServices) add(bucket, key, ct string, data []byte) {
	f.Add(meta.Object{Bucket: bucket, Key: key, ContentType: ct}, data)
}

func (f *fakeServices) Authenticate(_ context.Context, token string) (auth.Principal, error) {
	switch token {
	case "tok-alice":
		return auth.Principal{UserID: alice}, nil
	case "tok-admin":
		return auth.Principal{UserID: admin}, nil
	}
	return auth.Principal{}, errcode.New(errcode.Unauthenticated, "invalid or expired access token")
}

func (f *fakeServices) RequireAdmin(_ context.Context, p auth.Principal) error {
	if p.UserID != admin {
		return errcode.New(errcode.PermissionDenied, "administrators only")
	}
	return nil
}

// apiEnv is a file API over fakeServices, behind the request ID
// middleware the server puts in front of it.
type apiEnv struct {
	t   *testing.T
	f   *fakeServices
	api *API
	h   http.Handler
}

func newAPIEnv(t *testing.T) *apiEnv {
	f := newFakeServices()
	api := New(Services{Accounts: f, Buckets: f, Files: f}, testConfig(func(c *Config) { c.PublicMaxAge = 90 * time.Second }), nil)
	return &apiEnv{t: t, f: f, api: api, h: httpx.RequestIDMiddleware(api.Handler())}
}

// result is a response and, for errors, its problem.
type result struct {
	*httptest.ResponseRecorder
	problem Problem
}

// do sends method target with body and header pairs; token "" sends no
// Authorization.
func (e *apiEnv) do(method, target, token string, body []byte, hdr ...string) result {
	e.t.Helper()
	r := httptest.NewRequest(method, "http://coffer.test"+target, bytes.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	res := result{ResponseRecorder: w}
	if w.Code >= 400 && r.Method != http.MethodHead {
		if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
			e.t.Fatalf("%s %s: %d with Content-Type %q", method, target, w.Code, ct)
		}
		if err := json.Unmarshal(w.Body.Bytes(), &res.problem); err != nil {
			e.t.Fatalf("%s %s: %d with a body that is no problem: %v\n%s", method, target, w.Code, err, w.Body)
		}
	}
	return res
}

// want checks the status and, for errors, the problem's code, status,
// type and request ID.
func (r result) want(t *testing.T, status int, code string) {
	t.Helper()
	if r.Code != status {
		t.Errorf("got %d %+v, want %d %s", r.Code, r.problem, status, code)
		return
	}
	if code == "" || r.Body.Len() == 0 {
		return
	}
	p := r.problem
	if p.Code != code || p.Status != status || p.Type != ErrorTypeBase+code && !strings.HasPrefix(p.Type, ErrorTypeBase) || p.RequestID == "" || p.RequestID != r.Header().Get("X-Request-Id") {
		t.Errorf("problem %+v (X-Request-Id %q), want %d %s", p, r.Header().Get("X-Request-Id"), status, code)
	}
}

func (e *apiEnv) noWrites(t *testing.T) {
	t.Helper()
	if len(e.f.Writes) > 0 {
		t.Errorf("a refused request wrote: %v", e.f.Writes)
	}
}

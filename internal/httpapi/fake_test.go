package httpapi

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// fakeServices stands in for the auth and object services behind the file
// API in the handler tests (handler_test.go): bearer tokens, buckets and
// objects in memory, owner-only writes and public-read buckets as the
// object service has them, write conditions through meta.Cond.Check, and
// bodies verified through an integrity.Reader with the digests the handler
// announced. Every write is recorded, so a test proves that a refused
// request changed nothing. The interfaces it embeds are nil: a route that
// calls a method it does not fake panics.
type fakeServices struct {
	Accounts
	Buckets
	Files

	mu      sync.Mutex
	buckets map[string]meta.Bucket
	objects map[string]fakeObject // bucket + "/" + key
	writes  []string
	put     object.PutInput // the last Put's input
}

type fakeObject struct {
	meta.Object
	data []byte
}

var (
	testMod  = time.Date(2026, 11, 20, 8, 30, 0, 0, time.UTC)
	testData = []byte(strings.Repeat("0123456789", 10))
)

const alice, admin = "alice", "root"

func newFakeServices() *fakeServices {
	return &fakeServices{
		buckets: map[string]meta.Bucket{
			"b":   {Name: "b", OwnerID: alice, Visibility: meta.Private, CreatedAt: testMod},
			"pub": {Name: "pub", OwnerID: alice, Visibility: meta.PublicRead, CreatedAt: testMod},
			"rb":  {Name: "rb", OwnerID: admin, Visibility: meta.Private, CreatedAt: testMod},
		},
		objects: map[string]fakeObject{},
	}
}

func (f *fakeServices) add(bucket, key, ct string, data []byte) {
	sum := md5.Sum(data)
	o := meta.Object{Bucket: bucket, Key: key, Size: int64(len(data)), ETag: hex.EncodeToString(sum[:]),
		SHA256: hexSHA256(data), ContentType: ct, ModTime: testMod}
	f.objects[bucket+"/"+key] = fakeObject{o, data}
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

func (f *fakeServices) authorize(a object.Actor, bucket string, write bool) (meta.Bucket, error) {
	b, ok := f.buckets[bucket]
	switch {
	case !ok && a.UserID == "":
		return meta.Bucket{}, errcode.New(errcode.Unauthenticated, "authentication required")
	case !ok:
		return meta.Bucket{}, object.ErrNoBucket(bucket)
	case a.UserID != "" && b.OwnerID == a.UserID:
		return b, nil
	case !write && b.Visibility == meta.PublicRead:
		return b, nil
	case a.UserID == "":
		return meta.Bucket{}, errcode.New(errcode.Unauthenticated, "authentication required")
	}
	return meta.Bucket{}, errcode.New(errcode.PermissionDenied, "access to bucket %q denied", bucket)
}

func (f *fakeServices) GetBucket(_ context.Context, a object.Actor, name string) (meta.Bucket, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.authorize(a, name, true)
}

func (f *fakeServices) CreateBucket(_ context.Context, a object.Actor, name string, v meta.Visibility) (meta.Bucket, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := meta.Bucket{Name: name, OwnerID: a.UserID, Visibility: v, CreatedAt: testMod}
	f.buckets[name] = b
	f.writes = append(f.writes, "CreateBucket "+name)
	return b, nil
}

func (f *fakeServices) Get(_ context.Context, a object.Actor, bucket, key string) (*object.Reader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.authorize(a, bucket, false)
	if err != nil {
		return nil, err
	}
	o, ok := f.objects[bucket+"/"+key]
	if !ok {
		return nil, object.ErrNoObject(key)
	}
	return object.NewReader(o.Object, b, func(_ context.Context, offset, length int64) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(o.data[offset : offset+length])), nil
	}), nil
}

func (f *fakeServices) Put(_ context.Context, a object.Actor, in object.PutInput) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.put = in
	if _, err := f.authorize(a, in.Bucket, true); err != nil {
		return meta.Object{}, err
	}
	cur, exists := f.objects[in.Bucket+"/"+in.Key]
	if err := in.Cond.Check(cur.Object, exists); err != nil {
		return meta.Object{}, err
	}
	r := integrity.NewReader(in.Body, integrity.Options{Size: in.Size, SHA256: in.SHA256, MD5: in.MD5})
	data, err := io.ReadAll(r)
	if err != nil {
		return meta.Object{}, err
	}
	o := meta.Object{Bucket: in.Bucket, Key: in.Key, Size: int64(len(data)), ETag: hex.EncodeToString(r.MD5()),
		SHA256: hex.EncodeToString(r.SHA256()), ContentType: in.ContentType, ModTime: testMod}
	f.objects[in.Bucket+"/"+in.Key] = fakeObject{o, data}
	f.writes = append(f.writes, "Put "+in.Bucket+"/"+in.Key)
	return o, nil
}

func (f *fakeServices) Delete(_ context.Context, a object.Actor, bucket, key string, cond meta.Cond) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.authorize(a, bucket, true); err != nil {
		return meta.Object{}, err
	}
	cur, exists := f.objects[bucket+"/"+key]
	if err := cond.Check(cur.Object, exists); err != nil {
		return meta.Object{}, err
	}
	if !exists {
		return meta.Object{}, object.ErrNoObject(key)
	}
	delete(f.objects, bucket+"/"+key)
	f.writes = append(f.writes, "Delete "+bucket+"/"+key)
	return cur.Object, nil
}

func (f *fakeServices) List(_ context.Context, a object.Actor, bucket string, opts meta.ListOptions) (meta.ListPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.authorize(a, bucket, true); err != nil {
		return meta.ListPage{}, err
	}
	return meta.ListPage{}, nil
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
	api := New(Services{Accounts: f, Buckets: f, Files: f}, Config{PublicMaxAge: 90 * time.Second}, nil)
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
	if len(e.f.writes) > 0 {
		t.Errorf("a refused request wrote: %v", e.f.writes)
	}
}

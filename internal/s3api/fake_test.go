package s3api

import (
	"bytes"
	"context"
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
	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
)

// fakeStore is the object service's in-memory fake (objectfake: buckets,
// objects, uploads, with the service's ownership rule, write conditions and
// body checks, and a record of every write) plus the access keys of
// auth.Keys.LookupKey, for the handler tests (handler_test.go).
type fakeStore struct {
	*objectfake.Service
	keys map[string]fakeKey // by access key ID
}

type fakeKey struct {
	secret, user string
	internal     bool // the user's internal key (auth.Principal.Internal)
}

var _ interface {
	Buckets
	Objects
	Uploads
	Keys
} = (*fakeStore)(nil)

// Fixtures of every handler test.
const (
	alice, aliceKey, aliceSecret = "alice", "CFALICE", "alice-secret"
	bob, bobKey, bobSecret       = "bob", "CFBOB", "bob-secret"
	// aliceInternal is alice's internal key, which presigns her direct
	// uploads' part URLs.
	aliceInternal = "CFALICEINTERNAL"
)

var (
	testNow  = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	testMod  = time.Date(2026, 11, 20, 8, 30, 0, 0, time.UTC) // objects' ModTime
	testData = []byte(strings.Repeat("0123456789", 10))       // 100 bytes
)

// newFakeStore has alice's buckets b (private) and pub (public-read),
// bob's bucket bb, and their keys.
func newFakeStore() *fakeStore {
	f := &fakeStore{Service: objectfake.New(testNow),
		keys: map[string]fakeKey{aliceKey: {secret: aliceSecret, user: alice}, bobKey: {secret: bobSecret, user: bob},
			aliceInternal: {secret: "alice-internal-secret", user: alice, internal: true}}}
	for _, b := range []meta.Bucket{
		{Name: "b", OwnerID: alice, Visibility: meta.Private},
		{Name: "pub", OwnerID: alice, Visibility: meta.PublicRead},
		{Name: "bb", OwnerID: bob, Visibility: meta.Private},
	} {
		b.CreatedAt = testMod
		f.Buckets[b.Name] = b
	}
	return f
}

// add stores a text/plain object of data at bucket/key, modified at
// testMod.
func (f *fakeStore) add(bucket, key string, data []byte, with ...func(*meta.Object)) meta.Object {
	o := meta.Object{Bucket: bucket, Key: key, ContentType: "text/plain", ModTime: testMod}
	for _, w := range with {
		w(&o)
	}
	return f.Add(o, data)
}

func (f *fakeStore) LookupKey(_ context.Context, id string) (string, auth.Principal, error) {
	if err := f.Fail["LookupKey"]; err != nil {
		return "", auth.Principal{}, err
	}
	k, ok := f.keys[id]
	if !ok {
		return "", auth.Principal{}, errcode.New(errcode.NotFound, "access key %q not found", id)
	}
	return k.secret, auth.Principal{UserID: k.user, Internal: k.internal}, nil
}

// ---- requests ----

// presigned is target (path and query) presigned for method with the
// fixtures' key at now, valid for expires: the path and query to send.
func presigned(t *testing.T, method, target, key string, now time.Time, expires time.Duration) string {
	t.Helper()
	u, err := sigv4.Presign(method, "http://s3.test"+target, nil, key, newFakeStore().keys[key].secret, "us-east-1", now, expires)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u, "http://s3.test")
}

// s3Env is an API over a fakeStore, with the request ID middleware the
// server puts in front of it.
type s3Env struct {
	t     *testing.T
	api   *API
	store *fakeStore
	h     http.Handler
}

func newS3Env(t *testing.T) *s3Env {
	t.Helper()
	f := newFakeStore()
	api := New(Services{Buckets: f, Objects: f, Uploads: f, Keys: f}, testConfig(func(c *Config) {
		c.Now, c.MaxXMLBody = func() time.Time { return testNow }, 64<<10
	}), nil)
	return &s3Env{t: t, api: api, store: f, h: httpx.RequestIDMiddleware(api.Handler())}
}

// s3Result is a response, with the fields of an S3 XML error body.
type s3Result struct {
	*httptest.ResponseRecorder
	code, message, key, bucket, requestID string
}

// req is one request for do.
type req struct {
	method, target string // target: "/bucket/key?query"
	body           []byte
	hdr            []string // header pairs
	as             string   // access key ID signing it; "" anonymous
	secret         string   // signing secret; "" the key's
	payload        string   // x-amz-content-sha256; "" the body's SHA-256
	remote         string   // RemoteAddr; "" 127.0.0.1:4321
	length         int64    // Content-Length if not 0 (-1: unknown)
	host           string   // Host; "" s3.test
}

// do sends r through the API.
func (e *s3Env) do(r req) s3Result {
	e.t.Helper()
	host := "s3.test"
	if r.host != "" {
		host = r.host
	}
	hr := httptest.NewRequest(r.method, "http://"+host+r.target, bytes.NewReader(r.body))
	hr.RemoteAddr = "127.0.0.1:4321"
	if r.remote != "" {
		hr.RemoteAddr = r.remote
	}
	for i := 0; i+1 < len(r.hdr); i += 2 {
		hr.Header.Add(r.hdr[i], r.hdr[i+1])
	}
	if r.length != 0 {
		hr.ContentLength = r.length
	}
	if r.as != "" {
		secret := r.secret
		if secret == "" {
			secret = e.store.keys[r.as].secret
		}
		if secret == "" {
			secret = "secret-of-an-unknown-key"
		}
		ph := r.payload
		if ph == "" {
			ph = hexSHA256(r.body)
		}
		if err := sigv4.SignRequest(hr, r.as, secret, "us-east-1", ph, testNow); err != nil {
			e.t.Fatal(err)
		}
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, hr)
	res := s3Result{ResponseRecorder: w}
	if w.Code >= 300 && w.Body.Len() > 0 {
		var body struct {
			Code, Message, Key, BucketName, RequestId string
		}
		if err := xmlUnmarshal(w.Body.Bytes(), &body); err != nil {
			e.t.Fatalf("%s %s: %d with a body that is no S3 error: %v\n%s", r.method, r.target, w.Code, err, w.Body)
		}
		res.code, res.message, res.key, res.bucket, res.requestID = body.Code, body.Message, body.Key, body.BucketName, body.RequestId
	}
	return res
}

// as alice, the owner of buckets b and pub.
func (e *s3Env) alice(method, target string, body []byte, hdr ...string) s3Result {
	e.t.Helper()
	return e.do(req{method: method, target: target, body: body, hdr: hdr, as: aliceKey})
}

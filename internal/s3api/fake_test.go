package s3api

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
)

// fakeStore stands in for the object and auth services behind the S3 API
// in the handler tests (handler_test.go), as tusd's handler tests use a
// fake store: buckets, objects, uploads and access keys in memory, with
// enough of the services' contracts for the handlers' behaviour to show
// (owner-only writes and public-read buckets, write conditions through
// meta.Cond.Check, the body verified through an integrity.Reader with
// what the handler announced, as the service does). Every call that would
// change something is recorded in writes, so a test proves that a refused
// request changed nothing; fail makes a method return an error instead,
// for the error mapping.
type fakeStore struct {
	mu      sync.Mutex
	now     time.Time
	buckets map[string]meta.Bucket
	objects map[string]fakeObject // bucket + "/" + key
	uploads map[string]meta.Upload
	parts   map[string][]meta.Part // by upload ID
	keys    map[string]fakeKey     // by access key ID

	encrypts bool             // EncryptsByDefault
	fail     map[string]error // method name → the error it returns
	writes   []string         // "Put b/k", "CreateBucket b", ...

	// The last input of each write, as the handler built it.
	put    object.PutInput
	copyIn object.CopyInput
	create object.CreateUploadInput
	part   object.PartInput
	cond   meta.Cond // of the last CompleteUpload or Delete
}

type fakeObject struct {
	meta.Object
	data []byte
}

type fakeKey struct{ secret, user string }

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
)

var (
	testNow  = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	testMod  = time.Date(2026, 11, 20, 8, 30, 0, 0, time.UTC) // objects' ModTime
	testData = []byte(strings.Repeat("0123456789", 10))       // 100 bytes
)

func newFakeStore() *fakeStore {
	return &fakeStore{
		now: testNow,
		buckets: map[string]meta.Bucket{
			"b":   {Name: "b", OwnerID: alice, Visibility: meta.Private, CreatedAt: testMod},
			"pub": {Name: "pub", OwnerID: alice, Visibility: meta.PublicRead, CreatedAt: testMod},
			"bb":  {Name: "bb", OwnerID: bob, Visibility: meta.Private, CreatedAt: testMod},
		},
		objects: map[string]fakeObject{},
		uploads: map[string]meta.Upload{},
		parts:   map[string][]meta.Part{},
		keys:    map[string]fakeKey{aliceKey: {aliceSecret, alice}, bobKey: {bobSecret, bob}},
		fail:    map[string]error{},
	}
}

// add stores an object of data at bucket/key (ModTime testMod).
func (f *fakeStore) add(bucket, key string, data []byte, with ...func(*meta.Object)) meta.Object {
	sum := md5.Sum(data)
	o := meta.Object{Bucket: bucket, Key: key, Size: int64(len(data)), ETag: hex.EncodeToString(sum[:]),
		ContentType: "text/plain", ModTime: testMod}
	for _, w := range with {
		w(&o)
	}
	f.objects[bucket+"/"+key] = fakeObject{o, data}
	return o
}

func (f *fakeStore) wrote(what string) { f.writes = append(f.writes, what) }

func (f *fakeStore) failed(method string) error { return f.fail[method] }

// authorize is the object service's rule: owners do anything; anyone may
// read a public-read bucket; anonymous requests are Unauthenticated.
func (f *fakeStore) authorize(a object.Actor, bucket string, write bool) (meta.Bucket, error) {
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

// envelope is the stored envelope of bytes written under sse (nil:
// plaintext), as EncryptionOf and CheckCustomerKey read them.
func envelope(sse object.SSE) ([]byte, error) {
	var e crypt.Envelope
	switch sse.Mode {
	case 0:
		return nil, nil
	case crypt.ModeCustomer:
		var dk []byte
		var err error
		if e, dk, err = crypt.NewCustomerEnvelope(sse.CustomerKey); err != nil {
			return nil, err
		}
		clear(dk)
	default:
		e = crypt.NewEnvelope(sse.Mode)
		e.KEKID, e.WrappedKey = "default", []byte("wrapped")
		if sse.KMSKeyID != "" {
			e.KEKID = sse.KMSKeyID
		}
	}
	return e.Marshal()
}

// store reads body through the checks the service makes and stores it.
func (f *fakeStore) store(bucket, key string, body io.Reader, opts integrity.Options, ct string, md map[string]string, sse object.SSE) (meta.Object, error) {
	opts.ChecksumAlgorithm = strings.ToUpper(opts.ChecksumAlgorithm)
	r := integrity.NewReader(body, opts)
	data, err := io.ReadAll(r)
	if err != nil {
		return meta.Object{}, err
	}
	env, err := envelope(sse)
	if err != nil {
		return meta.Object{}, err
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	o := meta.Object{Bucket: bucket, Key: key, Size: int64(len(data)), ETag: hex.EncodeToString(r.MD5()),
		SHA256: hex.EncodeToString(r.SHA256()), ContentType: ct, Metadata: md, ModTime: f.now, Encryption: env}
	if sum := r.Checksum(); sum != nil {
		o.Checksum = meta.Checksum{Algorithm: opts.ChecksumAlgorithm, Type: "FULL_OBJECT", Value: base64.StdEncoding.EncodeToString(sum)}
	}
	f.objects[bucket+"/"+key] = fakeObject{o, data}
	return o, nil
}

func (f *fakeStore) current(bucket, key string) (meta.Object, bool) {
	o, ok := f.objects[bucket+"/"+key]
	return o.Object, ok
}

// ---- Buckets ----

func (f *fakeStore) ListBuckets(_ context.Context, a object.Actor) ([]meta.Bucket, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failed("ListBuckets"); err != nil {
		return nil, err
	}
	var out []meta.Bucket
	for _, b := range f.buckets {
		if b.OwnerID == a.UserID {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (f *fakeStore) CreateBucket(_ context.Context, a object.Actor, name string, v meta.Visibility) (meta.Bucket, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failed("CreateBucket"); err != nil {
		return meta.Bucket{}, err
	}
	if b, ok := f.buckets[name]; ok {
		if b.OwnerID == a.UserID {
			return meta.Bucket{}, &errcode.Error{Code: errcode.AlreadyExists, Message: "you own it", Detail: map[string]any{"s3_code": "BucketAlreadyOwnedByYou"}}
		}
		return meta.Bucket{}, errcode.New(errcode.AlreadyExists, "bucket %q exists", name)
	}
	b := meta.Bucket{Name: name, OwnerID: a.UserID, Visibility: v, CreatedAt: f.now}
	f.buckets[name] = b
	f.wrote("CreateBucket " + name)
	return b, nil
}

func (f *fakeStore) GetBucket(_ context.Context, a object.Actor, name string) (meta.Bucket, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failed("GetBucket"); err != nil {
		return meta.Bucket{}, err
	}
	return f.authorize(a, name, true)
}

func (f *fakeStore) DeleteBucket(_ context.Context, a object.Actor, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failed("DeleteBucket"); err != nil {
		return err
	}
	if _, err := f.authorize(a, name, true); err != nil {
		return err
	}
	for k := range f.objects {
		if strings.HasPrefix(k, name+"/") {
			return &errcode.Error{Code: errcode.Conflict, Message: "bucket not empty", Detail: map[string]any{"reason": "bucket_not_empty"}}
		}
	}
	delete(f.buckets, name)
	f.wrote("DeleteBucket " + name)
	return nil
}

func (f *fakeStore) SetBucketEncryption(_ context.Context, a object.Actor, name, enc, kmsKey string) (meta.Bucket, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failed("SetBucketEncryption"); err != nil {
		return meta.Bucket{}, err
	}
	b, err := f.authorize(a, name, true)
	if err != nil {
		return meta.Bucket{}, err
	}
	b.Encryption, b.EncryptionKMSKey = enc, kmsKey
	f.buckets[name] = b
	f.wrote("SetBucketEncryption " + name)
	return b, nil
}

func (f *fakeStore) EncryptsByDefault() bool { return f.encrypts }

func (f *fakeStore) List(_ context.Context, a object.Actor, bucket string, opts meta.ListOptions) (meta.ListPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failed("List"); err != nil {
		return meta.ListPage{}, err
	}
	if _, err := f.authorize(a, bucket, true); err != nil {
		return meta.ListPage{}, err
	}
	var keys []string
	for k, o := range f.objects {
		if o.Bucket == bucket && strings.HasPrefix(o.Key, opts.Prefix) && o.Key > opts.StartAfter {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var page meta.ListPage
	for _, k := range keys {
		o := f.objects[k].Object
		if opts.Delimiter != "" {
			if i := strings.Index(o.Key[len(opts.Prefix):], opts.Delimiter); i >= 0 {
				cp := o.Key[:len(opts.Prefix)+i+len(opts.Delimiter)]
				if n := len(page.CommonPrefixes); n == 0 || page.CommonPrefixes[n-1] != cp {
					page.CommonPrefixes = append(page.CommonPrefixes, cp)
				}
				continue
			}
		}
		page.Objects = append(page.Objects, o)
	}
	return page, nil
}

// ---- Objects ----

func (f *fakeStore) Get(_ context.Context, a object.Actor, bucket, key string) (*object.Reader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failed("Get"); err != nil {
		return nil, err
	}
	b, err := f.authorize(a, bucket, false)
	if err != nil {
		return nil, err
	}
	if err := object.ValidKey(key); err != nil {
		return nil, err
	}
	o, ok := f.objects[bucket+"/"+key]
	if !ok {
		return nil, object.ErrNoObject(key)
	}
	return object.NewReader(o.Object, b, func(_ context.Context, offset, length int64) (io.ReadCloser, error) {
		if err := f.failed("Open"); err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(o.data[offset : offset+length])), nil
	}), nil
}

func (f *fakeStore) Put(_ context.Context, a object.Actor, in object.PutInput) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.put = in
	if err := f.failed("Put"); err != nil {
		return meta.Object{}, err
	}
	if _, err := f.authorize(a, in.Bucket, true); err != nil {
		return meta.Object{}, err
	}
	if err := object.ValidKey(in.Key); err != nil {
		return meta.Object{}, err
	}
	if err := in.Cond.Check(f.current(in.Bucket, in.Key)); err != nil {
		return meta.Object{}, err
	}
	o, err := f.store(in.Bucket, in.Key, in.Body, integrity.Options{Size: in.Size, SHA256: in.SHA256, MD5: in.MD5,
		ChecksumAlgorithm: in.ChecksumAlgorithm, ChecksumWant: in.ChecksumWant}, in.ContentType, in.Metadata, in.SSE)
	if err != nil {
		return meta.Object{}, err
	}
	f.wrote("Put " + in.Bucket + "/" + in.Key)
	return o, nil
}

func (f *fakeStore) CopyFrom(ctx context.Context, a object.Actor, src *object.Reader, in object.CopyInput) (meta.Object, error) {
	rc, err := src.Open(ctx, 0, -1)
	if err != nil {
		return meta.Object{}, err
	}
	defer rc.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.copyIn = in
	if err := f.failed("CopyFrom"); err != nil {
		return meta.Object{}, err
	}
	if _, err := f.authorize(a, in.DstBucket, true); err != nil {
		return meta.Object{}, err
	}
	if err := in.Cond.Check(f.current(in.DstBucket, in.DstKey)); err != nil {
		return meta.Object{}, err
	}
	ct, md := src.Object.ContentType, src.Object.Metadata
	if in.ReplaceMetadata {
		ct, md = in.ContentType, in.Metadata
	}
	o, err := f.store(in.DstBucket, in.DstKey, rc, integrity.Options{Size: src.Object.Size}, ct, md, in.SSE)
	if err != nil {
		return meta.Object{}, err
	}
	f.wrote("Copy " + in.DstBucket + "/" + in.DstKey)
	return o, nil
}

func (f *fakeStore) Delete(_ context.Context, a object.Actor, bucket, key string, cond meta.Cond) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cond = cond
	if err := f.failed("Delete"); err != nil {
		return meta.Object{}, err
	}
	if _, err := f.authorize(a, bucket, true); err != nil {
		return meta.Object{}, err
	}
	cur, ok := f.current(bucket, key)
	if err := cond.Check(cur, ok); err != nil {
		return meta.Object{}, err
	}
	if !ok {
		return meta.Object{}, object.ErrNoObject(key)
	}
	delete(f.objects, bucket+"/"+key)
	f.wrote("Delete " + bucket + "/" + key)
	return cur, nil
}

// ---- Uploads ----

func (f *fakeStore) CreateUpload(_ context.Context, a object.Actor, in object.CreateUploadInput) (meta.Upload, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.create = in
	if err := f.failed("CreateUpload"); err != nil {
		return meta.Upload{}, err
	}
	if in.ChecksumAlgorithm != "" {
		if _, err := integrity.NewReader(strings.NewReader(""), integrity.Options{Size: -1, ChecksumAlgorithm: in.ChecksumAlgorithm}).Read(nil); err != nil && err != io.EOF {
			return meta.Upload{}, err
		}
	}
	if _, err := f.authorize(a, in.Bucket, true); err != nil {
		return meta.Upload{}, err
	}
	u := meta.Upload{ID: fmt.Sprintf("up%d", len(f.uploads)+1), Bucket: in.Bucket, Key: in.Key, InitiatorID: a.UserID,
		ContentType: in.ContentType, Metadata: in.Metadata, ChecksumAlgorithm: strings.ToUpper(in.ChecksumAlgorithm),
		ChecksumType: strings.ToUpper(in.ChecksumType), CreatedAt: f.now, EncryptionMode: int(in.SSE.Mode), EncryptionKMSKey: in.SSE.KMSKeyID}
	if in.SSE.Mode == crypt.ModeCustomer {
		check, err := envelope(in.SSE)
		if err != nil {
			return meta.Upload{}, err
		}
		u.CustomerKeyCheck = check
	}
	f.uploads[u.ID] = u
	f.wrote("CreateUpload " + u.ID)
	return u, nil
}

func (f *fakeStore) UploadEncryption(u meta.Upload) object.Encryption {
	return object.Encryption{Mode: crypt.Mode(u.EncryptionMode), KMSKeyID: u.EncryptionKMSKey}
}

func (f *fakeStore) upload(a object.Actor, bucket, key, id string) (meta.Upload, error) {
	u, ok := f.uploads[id]
	if !ok || bucket != "" && (u.Bucket != bucket || u.Key != key) {
		return meta.Upload{}, object.ErrNoUpload(id)
	}
	if _, err := f.authorize(a, u.Bucket, true); err != nil {
		return meta.Upload{}, err
	}
	return u, nil
}

func (f *fakeStore) PutPart(_ context.Context, a object.Actor, in object.PartInput) (meta.Part, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.part = in
	if err := f.failed("PutPart"); err != nil {
		return meta.Part{}, err
	}
	u, err := f.upload(a, in.Bucket, in.Key, in.UploadID)
	if err != nil {
		return meta.Part{}, err
	}
	if err := object.CheckUploadCustomerKey(u, in.CustomerKey); err != nil {
		return meta.Part{}, err
	}
	r := integrity.NewReader(in.Body, integrity.Options{Size: in.Size, SHA256: in.SHA256, MD5: in.MD5,
		ChecksumAlgorithm: u.ChecksumAlgorithm, ChecksumWant: in.ChecksumWant})
	data, err := io.ReadAll(r)
	if err != nil {
		return meta.Part{}, err
	}
	p := meta.Part{UploadID: u.ID, Number: in.Number, Size: int64(len(data)), ETag: hex.EncodeToString(r.MD5()), ModTime: f.now}
	if sum := r.Checksum(); sum != nil {
		p.Checksum = base64.StdEncoding.EncodeToString(sum)
	}
	f.parts[u.ID] = append(f.parts[u.ID], p)
	f.wrote(fmt.Sprintf("PutPart %s %d", u.ID, in.Number))
	return p, nil
}

func (f *fakeStore) CopyPart(ctx context.Context, a object.Actor, in object.PartInput, src *object.Reader, offset, length int64) (meta.Part, error) {
	rc, err := src.Open(ctx, offset, length)
	if err != nil {
		return meta.Part{}, err
	}
	defer rc.Close()
	in.Body, in.Size = rc, length
	return f.PutPart(ctx, a, in)
}

func (f *fakeStore) GetUpload(_ context.Context, a object.Actor, bucket, key, id string) (meta.Upload, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failed("GetUpload"); err != nil {
		return meta.Upload{}, err
	}
	return f.upload(a, bucket, key, id)
}

func (f *fakeStore) CompleteUpload(_ context.Context, a object.Actor, bucket, key, id string, parts []meta.CompletePart, cond meta.Cond) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cond = cond
	if err := f.failed("CompleteUpload"); err != nil {
		return meta.Object{}, err
	}
	u, err := f.upload(a, bucket, key, id)
	if err != nil {
		return meta.Object{}, err
	}
	if err := cond.Check(f.current(bucket, key)); err != nil {
		return meta.Object{}, err
	}
	o := meta.Object{Bucket: bucket, Key: key, ETag: fmt.Sprintf("%x-%d", md5.Sum([]byte(id)), len(parts)), ContentType: u.ContentType, ModTime: f.now}
	if u.ChecksumAlgorithm != "" {
		o.Checksum = meta.Checksum{Algorithm: u.ChecksumAlgorithm, Type: "COMPOSITE", Value: fmt.Sprintf("composite-%d", len(parts))}
	}
	f.objects[bucket+"/"+key] = fakeObject{o, nil}
	delete(f.uploads, id)
	f.wrote("CompleteUpload " + id)
	return o, nil
}

func (f *fakeStore) AbortUpload(_ context.Context, a object.Actor, bucket, key, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failed("AbortUpload"); err != nil {
		return err
	}
	if _, err := f.upload(a, bucket, key, id); err != nil {
		return err
	}
	delete(f.uploads, id)
	f.wrote("AbortUpload " + id)
	return nil
}

func (f *fakeStore) ListParts(_ context.Context, a object.Actor, bucket, key, id string, after, limit int) (meta.Upload, []meta.Part, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failed("ListParts"); err != nil {
		return meta.Upload{}, nil, false, err
	}
	u, err := f.upload(a, bucket, key, id)
	if err != nil {
		return meta.Upload{}, nil, false, err
	}
	var out []meta.Part
	for _, p := range f.parts[id] {
		if p.Number > after {
			out = append(out, p)
		}
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return u, out, more, nil
}

func (f *fakeStore) ListUploads(_ context.Context, a object.Actor, bucket string, opts meta.ListUploadsOptions) ([]meta.Upload, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failed("ListUploads"); err != nil {
		return nil, false, err
	}
	if _, err := f.authorize(a, bucket, true); err != nil {
		return nil, false, err
	}
	var out []meta.Upload
	for _, u := range f.uploads {
		if u.Bucket == bucket && strings.HasPrefix(u.Key, opts.Prefix) {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, false, nil
}

// ---- Keys ----

func (f *fakeStore) LookupKey(_ context.Context, id string) (string, auth.Principal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failed("LookupKey"); err != nil {
		return "", auth.Principal{}, err
	}
	k, ok := f.keys[id]
	if !ok {
		return "", auth.Principal{}, errcode.New(errcode.NotFound, "access key %q not found", id)
	}
	return k.secret, auth.Principal{UserID: k.user}, nil
}

// ---- requests ----

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
	api := New(Services{Buckets: f, Objects: f, Uploads: f, Keys: f}, Config{Now: func() time.Time { return testNow }, MaxXMLBody: 64 << 10}, nil)
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
}

// do sends r through the API.
func (e *s3Env) do(r req) s3Result {
	e.t.Helper()
	hr := httptest.NewRequest(r.method, "http://s3.test"+r.target, bytes.NewReader(r.body))
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

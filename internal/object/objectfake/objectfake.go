// Package objectfake is an in-memory stand-in for the object service, for
// the handler tests of the APIs that call it (internal/s3api,
// internal/httpapi), as tusd's handler tests run over a fake store.
//
// It keeps enough of the service's contracts for the handlers' behaviour
// to show: owners do anything in their buckets, anyone reads a
// public-read bucket, anonymous callers are Unauthenticated; keys are
// checked with object.ValidKey, user metadata with object.ValidMetadata; write conditions go through
// meta.Cond.Check; a body is read through an integrity.Reader with the
// size and digests the handler announced, so a mismatch fails as the
// service's does; objects written with SSE get an envelope that
// object.EncryptionOf and object.CheckCustomerKey read. It does not
// enforce quotas, store bytes durably or encrypt them.
//
// Versioning is modelled for the handlers' sake: in a bucket whose
// Versioning is set, every write keeps a version (Versions, newest
// first), deletes write delete markers, and the version IDs are
// v1…, v2… in 32 hex digits; a bucket never versioned has only Objects.
//
// Every call that would change something is recorded in Writes, so a test
// proves that a refused request changed nothing; Fail makes a method
// return an error instead (the error mapping); the Last* fields hold the
// last input of each write, as the handler built it.
package objectfake

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/policy"
)

// Service is the fake. Set its fields before the first call; New
// returns one that is empty and ready.
type Service struct {
	mu sync.Mutex

	Now      time.Time              // ModTime of what it writes
	Buckets  map[string]meta.Bucket // by name
	Objects  map[string]Object      // by bucket + "/" + key: the latest version, unless a delete marker
	Versions map[string][]Object    // by bucket + "/" + key, newest first (versioned buckets only)
	Uploads  map[string]meta.Upload // by ID
	Parts    map[string][]meta.Part // by upload ID
	// BucketTags are the buckets' tag sets, by name.
	BucketTags map[string][]meta.Tag
	Encrypts   bool             // EncryptsByDefault
	versions   int              // version IDs made so far
	Fail       map[string]error // method name ("Put", "Get", "Open" for a Reader's bytes...) → its error
	Writes     []string         // "Put b/k", "CreateBucket b", ... in order
	CORSReads  int              // calls of BucketCORS

	LastPut    object.PutInput
	LastCopy   object.CopyInput
	LastCreate object.CreateUploadInput
	LastPart   object.PartInput
	LastList   meta.ListOptions // of the last List
	LastCond   meta.Cond        // of the last Delete or CompleteUpload
}

// Object is a stored object and its bytes.
type Object struct {
	meta.Object
	Data []byte
}

// New returns an empty fake whose clock reads now.
func New(now time.Time) *Service {
	return &Service{Now: now, Buckets: map[string]meta.Bucket{}, Objects: map[string]Object{}, Versions: map[string][]Object{},
		Uploads: map[string]meta.Upload{}, Parts: map[string][]meta.Part{}, BucketTags: map[string][]meta.Tag{}, Fail: map[string]error{}}
}

// Add stores o with data, filling in its Size, ETag (MD5), SHA256 and, if
// zero, ModTime (Now), and returns it. It records no write.
func (f *Service) Add(o meta.Object, data []byte) meta.Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	sum := md5.Sum(data)
	o.Size = int64(len(data))
	if o.ETag == "" {
		o.ETag = hex.EncodeToString(sum[:])
	}
	if o.SHA256 == "" {
		s := sha256.Sum256(data)
		o.SHA256 = hex.EncodeToString(s[:])
	}
	if o.ModTime.IsZero() {
		o.ModTime = f.Now
	}
	return f.store(Object{o, data})
}

// store makes o the latest version of its key (a new version, or the
// null one, in a versioned bucket) and returns it as stored.
func (f *Service) store(o Object) meta.Object {
	k := o.Bucket + "/" + o.Key
	b := f.Buckets[o.Bucket]
	o.IsLatest = true
	if b.Versioning == meta.Unversioned {
		if !o.DeleteMarker {
			f.Objects[k] = o
		}
		return o.Object
	}
	o.VersionID = meta.NullVersion
	if b.Versioning == meta.VersioningEnabled {
		f.versions++
		o.VersionID = fmt.Sprintf("%032x", f.versions)
	}
	vs := slices.DeleteFunc(f.Versions[k], func(v Object) bool { return v.VersionID == o.VersionID })
	for i := range vs {
		vs[i].IsLatest = false
	}
	f.Versions[k] = append([]Object{o}, vs...)
	if o.DeleteMarker {
		delete(f.Objects, k)
	} else {
		f.Objects[k] = o
	}
	return o.Object
}

// latest returns the latest version of bucket/key, a delete marker too.
func (f *Service) latest(bucket, key string) (Object, bool) {
	if vs := f.Versions[bucket+"/"+key]; len(vs) > 0 {
		return vs[0], true
	}
	o, ok := f.Objects[bucket+"/"+key]
	return o, ok
}

// Current returns the object at bucket/key.
func (f *Service) Current(bucket, key string) (Object, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.Objects[bucket+"/"+key]
	return o, ok
}

func (f *Service) wrote(what string) { f.Writes = append(f.Writes, what) }

// authorize is the object service's rule: owners do anything; anyone may
// read a public-read bucket; anonymous callers are Unauthenticated.
func (f *Service) authorize(a object.Actor, bucket string, write bool) (meta.Bucket, error) {
	b, ok := f.Buckets[bucket]
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

// Envelope is the stored envelope of bytes written under sse (nil:
// plaintext), as object.EncryptionOf and object.CheckCustomerKey read it.
// SSE-KMS names the key sse names, else "default".
func Envelope(sse object.SSE) ([]byte, error) {
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

// write reads body through the checks the service makes and stores it at
// bucket/key, under the write condition cond.
func (f *Service) write(a object.Actor, bucket, key string, cond meta.Cond, body io.Reader, opts integrity.Options,
	ct string, md map[string]string, tags []meta.Tag, sse object.SSE) (meta.Object, error) {
	if _, err := f.authorize(a, bucket, true); err != nil {
		return meta.Object{}, err
	}
	if err := meta.CheckTags(tags, meta.MaxObjectTags); err != nil {
		return meta.Object{}, err
	}
	if err := object.ValidKey(key); err != nil {
		return meta.Object{}, err
	}
	if err := object.ValidMetadata(md); err != nil {
		return meta.Object{}, err
	}
	cur, exists := f.Objects[bucket+"/"+key]
	if err := cond.Check(cur.Object, exists); err != nil {
		return meta.Object{}, err
	}
	alg, err := integrity.ParseAlgorithm(opts.ChecksumAlgorithm)
	if err != nil {
		return meta.Object{}, err
	}
	r := integrity.NewReader(body, opts)
	data, err := io.ReadAll(r)
	if err != nil {
		return meta.Object{}, err
	}
	env, err := Envelope(sse)
	if err != nil {
		return meta.Object{}, err
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	o := meta.Object{Bucket: bucket, Key: key, Size: int64(len(data)), ETag: hex.EncodeToString(r.MD5()),
		SHA256: hex.EncodeToString(r.SHA256()), ContentType: ct, Metadata: md, Tags: tags, ModTime: f.Now, Encryption: env}
	if sum := r.Checksum(); sum != nil {
		o.Checksum = meta.Checksum{Algorithm: alg.String(), Type: "FULL_OBJECT", Value: alg.Encode(sum)}
	}
	return f.store(Object{o, data}), nil
}

// ---- buckets ----

// ListBuckets lists the buckets a owns, by name.
func (f *Service) ListBuckets(_ context.Context, a object.Actor) ([]meta.Bucket, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["ListBuckets"]; err != nil {
		return nil, err
	}
	var out []meta.Bucket
	for _, b := range f.Buckets {
		if b.OwnerID == a.UserID {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CreateBucket creates a bucket a owns: AlreadyExists if it exists
// (BucketAlreadyOwnedByYou in S3's words if a owns it).
func (f *Service) CreateBucket(_ context.Context, a object.Actor, name string, v meta.Visibility) (meta.Bucket, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["CreateBucket"]; err != nil {
		return meta.Bucket{}, err
	}
	if a.UserID == "" {
		return meta.Bucket{}, errcode.New(errcode.Unauthenticated, "authentication required")
	}
	if b, ok := f.Buckets[name]; ok {
		if b.OwnerID == a.UserID {
			return meta.Bucket{}, &errcode.Error{Code: errcode.AlreadyExists, Message: "you own it", Detail: map[string]any{"s3_code": "BucketAlreadyOwnedByYou"}}
		}
		return meta.Bucket{}, errcode.New(errcode.AlreadyExists, "bucket %q exists", name)
	}
	if v == "" {
		v = meta.Private
	}
	b := meta.Bucket{Name: name, OwnerID: a.UserID, Visibility: v, CreatedAt: f.Now}
	f.Buckets[name] = b
	f.wrote("CreateBucket " + name)
	return b, nil
}

// GetBucket returns a bucket a owns.
func (f *Service) GetBucket(_ context.Context, a object.Actor, name string) (meta.Bucket, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["GetBucket"]; err != nil {
		return meta.Bucket{}, err
	}
	return f.authorize(a, name, true)
}

// DeleteBucket deletes an empty bucket a owns.
func (f *Service) DeleteBucket(_ context.Context, a object.Actor, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["DeleteBucket"]; err != nil {
		return err
	}
	if _, err := f.authorize(a, name, true); err != nil {
		return err
	}
	for k := range f.Objects {
		if strings.HasPrefix(k, name+"/") {
			return &errcode.Error{Code: errcode.Conflict, Message: "bucket not empty", Detail: map[string]any{"reason": "bucket_not_empty"}}
		}
	}
	delete(f.Buckets, name)
	f.wrote("DeleteBucket " + name)
	return nil
}

// SetBucketVisibility changes a bucket a owns.
func (f *Service) SetBucketVisibility(_ context.Context, a object.Actor, name string, v meta.Visibility) (meta.Bucket, error) {
	return f.setBucket(a, name, "SetBucketVisibility", func(b *meta.Bucket) { b.Visibility = v })
}

// SetBucketEncryption changes a bucket a owns.
func (f *Service) SetBucketEncryption(_ context.Context, a object.Actor, name, enc, kmsKey string) (meta.Bucket, error) {
	return f.setBucket(a, name, "SetBucketEncryption", func(b *meta.Bucket) { b.Encryption, b.EncryptionKMSKey = enc, kmsKey })
}

func (f *Service) setBucket(a object.Actor, name, method string, set func(*meta.Bucket)) (meta.Bucket, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail[method]; err != nil {
		return meta.Bucket{}, err
	}
	b, err := f.authorize(a, name, true)
	if err != nil {
		return meta.Bucket{}, err
	}
	set(&b)
	f.Buckets[name] = b
	f.wrote(method + " " + name)
	return b, nil
}

// EncryptsByDefault is Encrypts.
func (f *Service) EncryptsByDefault() bool { return f.Encrypts }

// List lists a bucket a owns, in key order, all in one page (with
// DeleteMarkers, the keys whose latest version is a delete marker, each
// as its marker).
func (f *Service) List(_ context.Context, a object.Actor, bucket string, opts meta.ListOptions) (meta.ListPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.LastList = opts
	if err := f.Fail["List"]; err != nil {
		return meta.ListPage{}, err
	}
	b, err := f.authorize(a, bucket, true)
	if err != nil {
		return meta.ListPage{}, err
	}
	if opts.DeleteMarkers && b.IsGateway() {
		return meta.ListPage{}, errcode.New(errcode.NotImplemented, "a listing of deleted files is not supported in gateway buckets")
	}
	listed := map[string]meta.Object{}
	if opts.DeleteMarkers {
		for _, vs := range f.Versions {
			if len(vs) > 0 && vs[0].Bucket == bucket && vs[0].DeleteMarker {
				listed[vs[0].Key] = vs[0].Object
			}
		}
	} else {
		for _, o := range f.Objects {
			if o.Bucket == bucket {
				listed[o.Key] = o.Object
			}
		}
	}
	var keys []string
	for k := range listed {
		if strings.HasPrefix(k, opts.Prefix) && k > opts.StartAfter {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var page meta.ListPage
	for _, k := range keys {
		if opts.Delimiter != "" {
			if i := strings.Index(k[len(opts.Prefix):], opts.Delimiter); i >= 0 {
				cp := k[:len(opts.Prefix)+i+len(opts.Delimiter)]
				if n := len(page.CommonPrefixes); n == 0 || page.CommonPrefixes[n-1] != cp {
					page.CommonPrefixes = append(page.CommonPrefixes, cp)
				}
				continue
			}
		}
		page.Objects = append(page.Objects, listed[k])
	}
	return page, nil
}

// ---- objects ----

// Get returns a Reader of bucket/key (object.NewReader over its bytes;
// Fail["Open"] fails the opening of the bytes).
func (f *Service) Get(ctx context.Context, a object.Actor, bucket, key string) (*object.Reader, error) {
	return f.GetVersion(ctx, a, bucket, key, "")
}

// GetVersion returns a Reader of version versionID of bucket/key ("": the
// latest), with the service's errors for a missing version and a delete
// marker.
func (f *Service) GetVersion(_ context.Context, a object.Actor, bucket, key, versionID string) (*object.Reader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["Get"]; err != nil {
		return nil, err
	}
	b, err := f.authorize(a, bucket, false)
	if err != nil {
		return nil, err
	}
	if err := object.ValidKey(key); err != nil {
		return nil, err
	}
	o, err := f.find(bucket, key, versionID)
	if err != nil {
		return nil, err
	}
	return object.NewReader(o.Object, b, func(_ context.Context, offset, length int64) (io.ReadCloser, error) {
		f.mu.Lock()
		err := f.Fail["Open"]
		f.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(o.Data[offset : offset+length])), nil
	}), nil
}

// version returns version id of bucket/key.
func (f *Service) version(bucket, key, id string) (Object, bool) {
	if f.Buckets[bucket].Versioning == meta.Unversioned {
		o, ok := f.Objects[bucket+"/"+key]
		return o, ok && id == meta.NullVersion
	}
	for _, v := range f.Versions[bucket+"/"+key] {
		if v.VersionID == id {
			return v, true
		}
	}
	return Object{}, false
}

// Put stores in.Body, checked against what in announces.
func (f *Service) Put(_ context.Context, a object.Actor, in object.PutInput) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.LastPut = in
	if err := f.Fail["Put"]; err != nil {
		return meta.Object{}, err
	}
	if b, ok := f.Buckets[in.Bucket]; ok && in.Lock != (object.Lock{}) && !b.ObjectLock.Enabled {
		return meta.Object{}, meta.ErrLockNotEnabled(in.Bucket)
	}
	grants, err := fakeGrants(in.ACL, f.Buckets[in.Bucket].OwnerID)
	if err != nil {
		return meta.Object{}, err
	}
	o, err := f.write(a, in.Bucket, in.Key, in.Cond, in.Body, integrity.Options{Size: in.Size, SHA256: in.SHA256, MD5: in.MD5,
		ChecksumAlgorithm: in.ChecksumAlgorithm, ChecksumWant: in.ChecksumWant}, in.ContentType, in.Metadata, in.Tags, in.SSE)
	if err != nil {
		return meta.Object{}, err
	}
	f.wrote("Put " + in.Bucket + "/" + in.Key)
	if grants != nil {
		o = f.update(Object{Object: o}, func(o *meta.Object) { o.ACL = grants })
	}
	if in.Lock != (object.Lock{}) {
		o = f.update(Object{Object: o}, func(o *meta.Object) { o.Retention, o.LegalHold = in.Lock.Retention, in.Lock.LegalHold })
	}
	return o, nil
}

// NewBatch is not faked: it returns nil.
func (f *Service) NewBatch(object.Actor) *object.Batch { return nil }

// CopyFrom copies src's bytes to in.DstBucket/in.DstKey.
func (f *Service) CopyFrom(ctx context.Context, a object.Actor, src *object.Reader, in object.CopyInput) (meta.Object, error) {
	rc, err := src.Open(ctx, 0, -1)
	if err != nil {
		return meta.Object{}, err
	}
	defer rc.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.LastCopy = in
	if err := f.Fail["CopyFrom"]; err != nil {
		return meta.Object{}, err
	}
	ct, md, tags := src.Object.ContentType, src.Object.Metadata, src.Object.Tags
	if in.ReplaceMetadata {
		ct, md = in.ContentType, in.Metadata
	}
	opts := integrity.Options{Size: src.Object.Size}
	if c := src.Object.Checksum; c.Algorithm != "" && c.Type == "FULL_OBJECT" {
		// The service's rule: a copy keeps (and verifies) its source's
		// whole-object checksum.
		if want, err := base64.StdEncoding.DecodeString(c.Value); err == nil {
			opts.ChecksumAlgorithm, opts.ChecksumWant = c.Algorithm, want
		}
	}
	if in.ReplaceTags {
		tags = in.Tags
	}
	o, err := f.write(a, in.DstBucket, in.DstKey, in.Cond, rc, opts, ct, md, tags, in.SSE)
	if err != nil {
		return meta.Object{}, err
	}
	f.wrote("Copy " + in.DstBucket + "/" + in.DstKey)
	return o, nil
}

// Copy copies in.SrcBucket/in.SrcKey, which a may read.
func (f *Service) Copy(ctx context.Context, a object.Actor, in object.CopyInput) (meta.Object, error) {
	src, err := f.Get(ctx, a, in.SrcBucket, in.SrcKey)
	if err != nil {
		return meta.Object{}, err
	}
	return f.CopyFrom(ctx, a, src, in)
}

// Move renames an object within or across buckets a owns.
func (f *Service) Move(_ context.Context, a object.Actor, srcBucket, srcKey, dstBucket, dstKey string, cond meta.Cond) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.LastCond = cond
	if err := f.Fail["Move"]; err != nil {
		return meta.Object{}, err
	}
	for _, b := range []string{srcBucket, dstBucket} {
		if _, err := f.authorize(a, b, true); err != nil {
			return meta.Object{}, err
		}
	}
	src, ok := f.Objects[srcBucket+"/"+srcKey]
	if !ok {
		return meta.Object{}, object.ErrNoObject(srcKey)
	}
	cur, exists := f.Objects[dstBucket+"/"+dstKey]
	if err := cond.Check(cur.Object, exists); err != nil {
		return meta.Object{}, err
	}
	delete(f.Objects, srcBucket+"/"+srcKey)
	src.Bucket, src.Key = dstBucket, dstKey
	f.Objects[dstBucket+"/"+dstKey] = src
	f.wrote("Move " + srcBucket + "/" + srcKey + " " + dstBucket + "/" + dstKey)
	return src.Object, nil
}

// Delete deletes bucket/key under cond: NotFound (resource "key") if it
// is missing.
func (f *Service) Delete(_ context.Context, a object.Actor, bucket, key string, cond meta.Cond) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.LastCond = cond
	if err := f.Fail["Delete"]; err != nil {
		return meta.Object{}, err
	}
	if _, err := f.authorize(a, bucket, true); err != nil {
		return meta.Object{}, err
	}
	cur, exists := f.Objects[bucket+"/"+key]
	exists = exists && !cur.DeleteMarker // a delete marker is no object (meta.Objects)
	if err := cond.Check(cur.Object, exists); err != nil {
		return meta.Object{}, err
	}
	if f.Buckets[bucket].Versioning != meta.Unversioned {
		f.wrote("Delete " + bucket + "/" + key)
		return f.store(Object{Object: meta.Object{Bucket: bucket, Key: key, DeleteMarker: true, ModTime: f.Now}}), nil
	}
	if !exists {
		return meta.Object{}, object.ErrNoObject(key)
	}
	delete(f.Objects, bucket+"/"+key)
	f.wrote("Delete " + bucket + "/" + key)
	cur.VersionID = ""
	return cur.Object, nil
}

// DeleteVersion deletes version versionID of bucket/key for good, under
// cond: NotFound (resource "version") if it is missing.
func (f *Service) DeleteVersion(_ context.Context, a object.Actor, bucket, key, versionID string, cond meta.Cond) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.LastCond = cond
	if err := f.Fail["DeleteVersion"]; err != nil {
		return meta.Object{}, err
	}
	if _, err := f.authorize(a, bucket, true); err != nil {
		return meta.Object{}, err
	}
	if !meta.ValidVersionID(versionID) {
		return meta.Object{}, errcode.New(errcode.InvalidArgument, "Invalid version id specified")
	}
	cur, ok := f.version(bucket, key, versionID)
	if !ok {
		return meta.Object{}, object.ErrNoVersion(versionID)
	}
	if err := cond.Check(cur.Object, !cur.DeleteMarker); err != nil {
		return meta.Object{}, err
	}
	if err := meta.CheckUnlocked(cur.Object, cond.BypassGovernance, f.Now); err != nil {
		return meta.Object{}, err
	}
	k := bucket + "/" + key
	delete(f.Objects, k)
	vs := slices.DeleteFunc(f.Versions[k], func(v Object) bool { return v.VersionID == versionID })
	if len(vs) > 0 {
		vs[0].IsLatest = true
		if !vs[0].DeleteMarker {
			f.Objects[k] = vs[0]
		}
	}
	f.Versions[k] = vs
	f.wrote("DeleteVersion " + bucket + "/" + key + " " + versionID)
	return cur.Object, nil
}

// SetBucketVersioning changes a bucket a owns; a gateway bucket's is
// NotImplemented, as the service's.
func (f *Service) SetBucketVersioning(_ context.Context, a object.Actor, name string, v meta.Versioning) (meta.Bucket, error) {
	if err := meta.CheckVersioning(v); err != nil {
		return meta.Bucket{}, err
	}
	f.mu.Lock()
	b := f.Buckets[name]
	f.mu.Unlock()
	if b.IsGateway() {
		return meta.Bucket{}, errcode.New(errcode.NotImplemented, "versioning is not supported in gateway buckets")
	}
	if b.ObjectLock.Enabled && v != meta.VersioningEnabled {
		return meta.Bucket{}, meta.ErrLockedBucketVersioning(name)
	}
	return f.setBucket(a, name, "SetBucketVersioning", func(b *meta.Bucket) { b.Versioning = v })
}

// ListVersions lists the versions of a bucket a owns: a versioned
// bucket's Versions, an unversioned one's objects as their null versions;
// Prefix, Delimiter, KeyMarker (after every version of that key, or with
// VersionIDMarker after that version of it) and Limit (of versions; 0: all)
// are honoured.
func (f *Service) ListVersions(_ context.Context, a object.Actor, bucket string, opts meta.VersionListOptions) (meta.VersionPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["ListVersions"]; err != nil {
		return meta.VersionPage{}, err
	}
	if _, err := f.authorize(a, bucket, true); err != nil {
		return meta.VersionPage{}, err
	}
	byKey := map[string][]Object{}
	for k, o := range f.Objects {
		if o.Bucket == bucket && f.Buckets[bucket].Versioning == meta.Unversioned {
			o.VersionID, o.IsLatest = meta.NullVersion, true
			byKey[o.Key] = []Object{o}
		} else if vs := f.Versions[k]; len(vs) > 0 && vs[0].Bucket == bucket {
			byKey[o.Key] = vs
		}
	}
	for _, vs := range f.Versions {
		if len(vs) > 0 && vs[0].Bucket == bucket {
			byKey[vs[0].Key] = vs
		}
	}
	var page meta.VersionPage
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		vs := byKey[k]
		if opts.VersionIDMarker != "" && k == opts.KeyMarker {
			i := slices.IndexFunc(vs, func(v Object) bool { return v.VersionID == opts.VersionIDMarker })
			vs = vs[i+1:] // i -1 (gone): from the first
		} else if k <= opts.KeyMarker {
			continue
		}
		if !strings.HasPrefix(k, opts.Prefix) {
			continue
		}
		if opts.Delimiter != "" {
			if i := strings.Index(k[len(opts.Prefix):], opts.Delimiter); i >= 0 {
				cp := k[:len(opts.Prefix)+i+len(opts.Delimiter)]
				if n := len(page.CommonPrefixes); n == 0 || page.CommonPrefixes[n-1] != cp {
					page.CommonPrefixes = append(page.CommonPrefixes, cp)
				}
				continue
			}
		}
		for _, v := range vs {
			if opts.Limit > 0 && len(page.Versions) == opts.Limit {
				page.Truncated = true
				return page, nil
			}
			page.Versions = append(page.Versions, v.Object)
			page.NextKeyMarker, page.NextVersionIDMarker = v.Key, v.VersionID
		}
	}
	return page, nil
}

// ---- multipart uploads ----

// CreateUpload starts an upload (IDs up1, up2, ...) with the checksum
// algorithm in.ChecksumAlgorithm names.
func (f *Service) CreateUpload(_ context.Context, a object.Actor, in object.CreateUploadInput) (meta.Upload, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.LastCreate = in
	if err := f.Fail["CreateUpload"]; err != nil {
		return meta.Upload{}, err
	}
	alg, err := integrity.ParseAlgorithm(in.ChecksumAlgorithm)
	if err != nil {
		return meta.Upload{}, err
	}
	typ, err := integrity.ParseChecksumType(in.ChecksumType, alg)
	if err != nil {
		return meta.Upload{}, err
	}
	if in.ChecksumType != "" {
		in.ChecksumType = typ.String()
	}
	if _, err := f.authorize(a, in.Bucket, true); err != nil {
		return meta.Upload{}, err
	}
	if err := object.ValidMetadata(in.Metadata); err != nil {
		return meta.Upload{}, err
	}
	u := meta.Upload{ID: fmt.Sprintf("up%d", len(f.Uploads)+1), Bucket: in.Bucket, Key: in.Key, InitiatorID: a.UserID,
		ContentType: in.ContentType, Metadata: in.Metadata, Tags: in.Tags, ChecksumAlgorithm: alg.String(), ChecksumType: in.ChecksumType,
		CreatedAt: f.Now, EncryptionMode: int(in.SSE.Mode), EncryptionKMSKey: in.SSE.KMSKeyID}
	if in.SSE.Mode == crypt.ModeCustomer {
		if u.CustomerKeyCheck, err = Envelope(in.SSE); err != nil {
			return meta.Upload{}, err
		}
	}
	f.Uploads[u.ID] = u
	f.wrote("CreateUpload " + u.ID)
	return u, nil
}

// UploadEncryption is u's encryption as created.
func (f *Service) UploadEncryption(u meta.Upload) object.Encryption {
	return object.Encryption{Mode: crypt.Mode(u.EncryptionMode), KMSKeyID: u.EncryptionKMSKey}
}

func (f *Service) upload(a object.Actor, bucket, key, id string) (meta.Upload, error) {
	u, ok := f.Uploads[id]
	if !ok || bucket != "" && (u.Bucket != bucket || u.Key != key) {
		return meta.Upload{}, object.ErrNoUpload(id)
	}
	if _, err := f.authorize(a, u.Bucket, true); err != nil {
		return meta.Upload{}, err
	}
	return u, nil
}

// PutPart stores a part, checked against what in announces and the
// upload's customer key (object.CheckUploadCustomerKey).
func (f *Service) PutPart(_ context.Context, a object.Actor, in object.PartInput) (meta.Part, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.LastPart = in
	if err := f.Fail["PutPart"]; err != nil {
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
	p := meta.Part{UploadID: u.ID, Number: in.Number, Size: int64(len(data)), ETag: hex.EncodeToString(r.MD5()), ModTime: f.Now}
	if sum := r.Checksum(); sum != nil {
		p.Checksum = base64.StdEncoding.EncodeToString(sum)
	}
	f.Parts[u.ID] = append(f.Parts[u.ID], p)
	f.wrote(fmt.Sprintf("PutPart %s %d", u.ID, in.Number))
	return p, nil
}

// CopyPart stores [offset, offset+length) of src as a part.
func (f *Service) CopyPart(ctx context.Context, a object.Actor, in object.PartInput, src *object.Reader, offset, length int64) (meta.Part, error) {
	rc, err := src.Open(ctx, offset, length)
	if err != nil {
		return meta.Part{}, err
	}
	defer rc.Close()
	in.Body, in.Size = rc, length
	return f.PutPart(ctx, a, in)
}

// GetUpload returns an upload of a bucket a owns.
func (f *Service) GetUpload(_ context.Context, a object.Actor, bucket, key, id string) (meta.Upload, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["GetUpload"]; err != nil {
		return meta.Upload{}, err
	}
	return f.upload(a, bucket, key, id)
}

// CompleteUpload makes the object of an upload under cond, without its
// bytes; with a checksum algorithm, its checksum is the service's
// (object.MultipartChecksum of the stored parts).
func (f *Service) CompleteUpload(ctx context.Context, a object.Actor, bucket, key, id string, parts []meta.CompletePart, cond meta.Cond) (meta.Object, error) {
	return f.CompleteUploadExpecting(ctx, a, bucket, key, id, parts, cond, object.Expect{Size: -1})
}

// CompleteUploadExpecting is CompleteUpload checking want
// (object.CheckCompletion) before anything changes.
func (f *Service) CompleteUploadExpecting(_ context.Context, a object.Actor, bucket, key, id string, parts []meta.CompletePart, cond meta.Cond, want object.Expect) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.LastCond = cond
	if err := f.Fail["CompleteUpload"]; err != nil {
		return meta.Object{}, err
	}
	u, err := f.upload(a, bucket, key, id)
	if err != nil {
		return meta.Object{}, err
	}
	cur, exists := f.Objects[bucket+"/"+key]
	if err := cond.Check(cur.Object, exists); err != nil {
		return meta.Object{}, err
	}
	o := meta.Object{Bucket: bucket, Key: key, ETag: fmt.Sprintf("%x-%d", md5.Sum([]byte(id)), len(parts)), ContentType: u.ContentType, Metadata: u.Metadata, Tags: u.Tags, ModTime: f.Now}
	stored := map[int]meta.Part{}
	for _, p := range f.Parts[id] {
		stored[p.Number] = p
	}
	if o.Checksum, err = object.CheckCompletion(u, parts, stored, want); err != nil {
		return meta.Object{}, err
	}
	o = f.store(Object{o, nil})
	delete(f.Uploads, id)
	f.wrote("CompleteUpload " + id)
	return o, nil
}

// AbortUpload drops an upload.
func (f *Service) AbortUpload(_ context.Context, a object.Actor, bucket, key, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["AbortUpload"]; err != nil {
		return err
	}
	if _, err := f.upload(a, bucket, key, id); err != nil {
		return err
	}
	delete(f.Uploads, id)
	f.wrote("AbortUpload " + id)
	return nil
}

// ListParts lists an upload's parts after part number after.
func (f *Service) ListParts(_ context.Context, a object.Actor, bucket, key, id string, after, limit int) (meta.Upload, []meta.Part, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["ListParts"]; err != nil {
		return meta.Upload{}, nil, false, err
	}
	u, err := f.upload(a, bucket, key, id)
	if err != nil {
		return meta.Upload{}, nil, false, err
	}
	var out []meta.Part
	for _, p := range f.Parts[id] {
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

// ListUploads lists a bucket's uploads by key, all in one page.
func (f *Service) ListUploads(_ context.Context, a object.Actor, bucket string, opts meta.ListUploadsOptions) ([]meta.Upload, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["ListUploads"]; err != nil {
		return nil, false, err
	}
	if _, err := f.authorize(a, bucket, true); err != nil {
		return nil, false, err
	}
	var out []meta.Upload
	for _, u := range f.Uploads {
		if u.Bucket == bucket && strings.HasPrefix(u.Key, opts.Prefix) {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, false, nil
}

// ---- tags ----

// GetTags returns version versionID of bucket/key ("": the latest) with
// its tags, for the bucket's owner, with GetVersion's errors.
func (f *Service) GetTags(_ context.Context, a object.Actor, bucket, key, versionID string) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["GetTags"]; err != nil {
		return meta.Object{}, err
	}
	o, err := f.tagged(a, bucket, key, versionID)
	if err != nil {
		return meta.Object{}, err
	}
	return o.Object, nil
}

// tagged finds the version a tag operation of a on bucket/key names.
func (f *Service) tagged(a object.Actor, bucket, key, versionID string) (Object, error) {
	if _, err := f.authorize(a, bucket, true); err != nil {
		return Object{}, err
	}
	return f.find(bucket, key, versionID)
}

// find returns version versionID of bucket/key ("": the latest), with
// the service's errors for a missing version and a delete marker.
func (f *Service) find(bucket, key, versionID string) (Object, error) {
	if versionID != "" && !meta.ValidVersionID(versionID) {
		return Object{}, errcode.New(errcode.InvalidArgument, "Invalid version id specified")
	}
	o, ok := f.latest(bucket, key)
	if versionID != "" {
		o, ok = f.version(bucket, key, versionID)
	}
	switch {
	case !ok && versionID != "":
		return Object{}, object.ErrNoVersion(versionID)
	case !ok:
		return Object{}, object.ErrNoObject(key)
	case o.DeleteMarker && versionID != "":
		return Object{}, object.ErrVersionIsDeleteMarker(o.VersionID)
	case o.DeleteMarker:
		return Object{}, object.ErrDeleteMarker(o.VersionID)
	}
	return o, nil
}

// SetTags replaces the tags of version versionID of bucket/key ("": the
// latest).
func (f *Service) SetTags(_ context.Context, a object.Actor, bucket, key, versionID string, tags []meta.Tag) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["SetTags"]; err != nil {
		return meta.Object{}, err
	}
	o, err := f.tagged(a, bucket, key, versionID)
	if err != nil {
		return meta.Object{}, err
	}
	if err := meta.CheckTags(tags, meta.MaxObjectTags); err != nil {
		return meta.Object{}, err
	}
	k := bucket + "/" + key
	if cur, ok := f.Objects[k]; ok && cur.VersionID == o.VersionID {
		cur.Tags = tags
		f.Objects[k] = cur
	}
	for i, v := range f.Versions[k] {
		if v.VersionID == o.VersionID {
			f.Versions[k][i].Tags = tags
		}
	}
	f.wrote("SetTags " + k + " " + versionID)
	o.Tags = tags
	return o.Object, nil
}

// GetBucketTags returns a bucket's tags: NotFound (resource tag_set) if
// it has none.
func (f *Service) GetBucketTags(_ context.Context, a object.Actor, name string) ([]meta.Tag, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.authorize(a, name, true); err != nil {
		return nil, err
	}
	tags := f.BucketTags[name]
	if len(tags) == 0 {
		return nil, meta.ErrNoTagSet(name)
	}
	return tags, nil
}

// SetBucketTags replaces a bucket's tags.
func (f *Service) SetBucketTags(_ context.Context, a object.Actor, name string, tags []meta.Tag) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["SetBucketTags"]; err != nil {
		return err
	}
	if _, err := f.authorize(a, name, true); err != nil {
		return err
	}
	if err := meta.CheckTags(tags, meta.MaxBucketTags); err != nil {
		return err
	}
	f.BucketTags[name] = tags
	f.wrote("SetBucketTags " + name)
	return nil
}

// GetBucketLifecycle returns a bucket's lifecycle configuration (in its
// record): NotFound (resource lifecycle) if it has none.
func (f *Service) GetBucketLifecycle(_ context.Context, a object.Actor, name string) (meta.Lifecycle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.authorize(a, name, true)
	if err != nil {
		return meta.Lifecycle{}, err
	}
	if b.Lifecycle == nil {
		return meta.Lifecycle{}, meta.ErrNoLifecycle(name)
	}
	return *b.Lifecycle, nil
}

// SetBucketLifecycle replaces a bucket's lifecycle configuration (nil:
// none), checked by meta.CheckLifecycle.
func (f *Service) SetBucketLifecycle(_ context.Context, a object.Actor, name string, lc *meta.Lifecycle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["SetBucketLifecycle"]; err != nil {
		return err
	}
	b, err := f.authorize(a, name, true)
	if err != nil {
		return err
	}
	if lc != nil {
		if err := meta.CheckLifecycle(lc); err != nil {
			return err
		}
	}
	b.Lifecycle = lc
	f.Buckets[name] = b
	f.wrote("SetBucketLifecycle " + name)
	return nil
}

// GetBucketCORS returns a bucket's CORS configuration (in its record):
// NotFound (resource cors) if it has none.
func (f *Service) GetBucketCORS(_ context.Context, a object.Actor, name string) (meta.CORS, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.authorize(a, name, true)
	if err != nil {
		return meta.CORS{}, err
	}
	if b.CORS == nil {
		return meta.CORS{}, meta.ErrNoCORS(name)
	}
	return *b.CORS, nil
}

// SetBucketCORS replaces a bucket's CORS configuration (nil: none),
// checked by meta.CheckCORS.
func (f *Service) SetBucketCORS(_ context.Context, a object.Actor, name string, c *meta.CORS) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["SetBucketCORS"]; err != nil {
		return err
	}
	b, err := f.authorize(a, name, true)
	if err != nil {
		return err
	}
	if c != nil {
		if err := meta.CheckCORS(c); err != nil {
			return err
		}
	}
	b.CORS = c
	f.Buckets[name] = b
	f.wrote("SetBucketCORS " + name)
	return nil
}

// BucketCORS returns a bucket's CORS configuration (nil if none), to
// anyone; NotFound if the bucket is missing. CORSReads counts the calls.
func (f *Service) BucketCORS(_ context.Context, name string) (*meta.CORS, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.CORSReads++
	if err := f.Fail["BucketCORS"]; err != nil {
		return nil, err
	}
	b, ok := f.Buckets[name]
	if !ok {
		return nil, object.ErrNoBucket(name)
	}
	return b.CORS, nil
}

// PutBucketPolicy validates doc with policy.Parse and stores it in the
// bucket's record.
func (f *Service) PutBucketPolicy(_ context.Context, a object.Actor, name string, doc []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.authorize(a, name, true)
	if err != nil {
		return err
	}
	p, err := policy.Parse(doc, policy.ParseOptions{Bucket: name})
	if err != nil {
		return err
	}
	if b.PublicAccessBlock != nil && b.PublicAccessBlock.BlockPublicPolicy && p.IsPublic() {
		return errcode.New(errcode.PermissionDenied, "BlockPublicPolicy")
	}
	b.Policy = string(doc)
	f.Buckets[name] = b
	f.wrote("PutBucketPolicy " + name)
	return nil
}

// GetBucketPolicy returns a bucket's policy: NotFound (resource
// bucket_policy) if it has none.
func (f *Service) GetBucketPolicy(_ context.Context, a object.Actor, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.authorize(a, name, true)
	if err != nil {
		return "", err
	}
	if b.Policy == "" {
		return "", meta.ErrNoBucketPolicy(name)
	}
	return b.Policy, nil
}

// DeleteBucketPolicy removes a bucket's policy (none: nothing to do).
func (f *Service) DeleteBucketPolicy(_ context.Context, a object.Actor, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.authorize(a, name, true)
	if err != nil {
		return err
	}
	if b.Policy == "" {
		return nil
	}
	b.Policy = ""
	f.Buckets[name] = b
	f.wrote("DeleteBucketPolicy " + name)
	return nil
}

// GetBucketPolicyStatus reports whether a bucket's policy is public.
func (f *Service) GetBucketPolicyStatus(_ context.Context, a object.Actor, name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.authorize(a, name, true)
	if err != nil {
		return false, err
	}
	if b.Policy == "" {
		return false, meta.ErrNoBucketPolicy(name)
	}
	p, err := policy.Parse([]byte(b.Policy), policy.ParseOptions{Bucket: name})
	if err != nil {
		return false, err
	}
	return p.IsPublic(), nil
}

// GetPublicAccessBlock returns a bucket's Block Public Access settings:
// NotFound (resource public_access_block) if it has none.
func (f *Service) GetPublicAccessBlock(_ context.Context, a object.Actor, name string) (meta.PublicAccessBlock, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.authorize(a, name, true)
	if err != nil {
		return meta.PublicAccessBlock{}, err
	}
	if b.PublicAccessBlock == nil {
		return meta.PublicAccessBlock{}, meta.ErrNoPublicAccessBlock(name)
	}
	return *b.PublicAccessBlock, nil
}

// SetPublicAccessBlock replaces a bucket's Block Public Access settings
// (nil: none).
func (f *Service) SetPublicAccessBlock(_ context.Context, a object.Actor, name string, pab *meta.PublicAccessBlock) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.authorize(a, name, true)
	if err != nil {
		return err
	}
	b.PublicAccessBlock = pab
	f.Buckets[name] = b
	f.wrote("SetPublicAccessBlock " + name)
	return nil
}

package metacache

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// Store caches the bucket and object records of a metadata store (the
// reads of every GET and HEAD: GetBucket, GetObject) and drops such a
// record on every node, before it returns, on every write that changes it.
// Stores returns the store's roles with those it wraps replaced.
//
// # Invalidation
//
// Each write that changes a bucket or object record is wrapped here, and
// only here, so that no caller can forget it: the wrapper names the
// changes (meta.TopicBucket, meta.TopicObject, meta.TopicAll for a
// user's deletion), hands them to the store with meta.WithAnnounce
// (PostgreSQL announces them in the write's transaction, so other nodes
// receive them exactly when it commits), and publishes them on this
// process's Bus after the write. On a store shared by listening nodes it
// first puts them in flux on every node and waits until every node
// acknowledged that (at most StoreOptions.Sync), and ends the flux after
// the write (the argument: the package doc, "Linearizable reads").
// Only the roles holding such writes are wrapped (Buckets, Objects,
// Uploads, Accounts, EncryptionJobs); writeTopics classifies every method
// of every role of meta.Stores, and a test checks that the classification
// is complete and that only wrapped roles change a cached record, so a
// method added to any role must be classified before it builds a passing
// test.
//
// Records handed out are shallow copies whose Metadata, Parts and Tags
// are the caller's own; Inline and Encryption bytes are shared and must not be
// modified.
type Store struct {
	inner   meta.Stores
	bus     *Bus
	sync    time.Duration
	buckets *Map[meta.Bucket]
	objects *Map[meta.Object]
	// loadBucket and loadObject read a record the caches miss: func
	// values made once (a method value or a closure over the bucket and
	// key, made on each lookup, would be allocated every time).
	// loadObject takes the cache key, meta.ObjectChangeKey of a bucket
	// without "/" (every valid name; GetObject makes a closure for any
	// other).
	loadBucket func(ctx context.Context, name string) (meta.Bucket, error)
	loadObject func(ctx context.Context, k string) (meta.Object, error)
	places     places
}

// StoreOptions configure a Store.
type StoreOptions struct {
	// Buckets and Objects bound the two caches (MaxBytes counts an
	// estimate of each record's size, inline bytes included).
	Buckets, Objects Options
	// Sync bounds how long a write waits for the other nodes'
	// acknowledgements. It is at least the bus's SyncBound (the lease and
	// a margin; the default), so that a node that does not answer in time
	// no longer trusts its cache when the write returns.
	Sync time.Duration
}

// NewStore returns caches of m's records subscribed to bus.
func NewStore(m meta.Stores, bus *Bus, o StoreOptions) *Store {
	o.Sync = max(o.Sync, bus.SyncBound())
	s := &Store{
		inner:   m,
		bus:     bus,
		sync:    o.Sync,
		buckets: NewMap(bus, meta.TopicBucket, o.Buckets, bucketSize),
		objects: NewMap(bus, meta.TopicObject, o.Objects, objectSize),
		loadObject: func(ctx context.Context, k string) (meta.Object, error) {
			bucket, key, _ := strings.Cut(k, "/")
			return m.Objects.GetObject(ctx, bucket, key)
		},
	}
	if m.Buckets != nil {
		s.loadBucket = m.Buckets.GetBucket
	}
	return s
}

// Stores returns the store's roles, those whose writes change a cached
// record (and the reads of the cached records) going through the cache;
// the others, and Changes, are the store's own.
func (s *Store) Stores() meta.Stores {
	m := s.inner
	m.Buckets = buckets{m.Buckets, s}
	m.Objects = objects{m.Objects, s}
	m.Uploads = uploads{m.Uploads, s}
	m.Accounts = accounts{m.Accounts, s}
	m.EncryptionJobs = encryptionJobs{m.EncryptionJobs, s}
	m.Lifecycles = lifecycles{m.Lifecycles, s}
	m.CORSConfigs = corsConfigs{m.CORSConfigs, s}
	m.ACLs = acls{m.ACLs, s}
	m.Policies = policies{m.Policies, s}
	return m
}

// Buckets and Objects expose the caches (for metrics and tests).
func (s *Store) Buckets() *Map[meta.Bucket] { return s.buckets }

// Objects: see Buckets.
func (s *Store) Objects() *Map[meta.Object] { return s.objects }

// entryOverhead approximates what an entry costs beyond its strings and
// bytes (the otter node, the struct, map and slice headers).
const entryOverhead = 256

func bucketSize(key string, b meta.Bucket) int {
	n := entryOverhead + len(key) + len(b.Name) + len(b.OwnerID) + len(b.Visibility) + len(b.Encryption) + len(b.EncryptionKMSKey) + len(b.Policy)
	if b.Lifecycle != nil {
		for _, r := range b.Lifecycle.Rules {
			n += 256 + len(r.ID)
		}
	}
	if b.CORS != nil {
		for _, r := range b.CORS.Rules {
			n += 256 + len(r.ID)
			for _, l := range [][]string{r.AllowedOrigins, r.AllowedMethods, r.AllowedHeaders, r.ExposeHeaders} {
				for _, v := range l {
					n += 16 + len(v)
				}
			}
		}
	}
	if b.ACL != nil {
		n += 32 + 64*len(b.ACL.Grants)
	}
	return n
}

func objectSize(key string, o meta.Object) int {
	n := entryOverhead + len(key) + len(o.Bucket) + len(o.Key) + len(o.ETag) + len(o.SHA256) + len(o.ContentType) +
		len(o.BlobKey) + len(o.Checksum.Algorithm) + len(o.Checksum.Value) + len(o.Inline) + len(o.Encryption) + len(o.EncryptionKEK)
	for k, v := range o.Metadata {
		n += len(k) + len(v) + 32
	}
	for _, t := range o.Tags {
		n += len(t.Key) + len(t.Value) + 32
	}
	n += len(o.Owner) + 64*len(o.ACL)
	for _, p := range o.Parts {
		n += 64 + len(p.BlobKey) + len(p.ETag) + len(p.Checksum) + len(p.Encryption) + len(p.EncryptionKEK)
	}
	return n
}

// write runs fn, a write of the changes cs, as the type's doc says: on a
// shared store, the entries go into flux on every node before the write
// (BeginFlux), the write must commit within the bus's CommitWithin of
// that announcement, and the flux ends after it.
func (s *Store) write(ctx context.Context, cs []meta.Change, fn func(ctx context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := s.writeOnce(ctx, cs, fn)
		// A fenced write rolled back (a listener started listening since
		// the announcement, which it missed): announce again.
		if !errors.Is(err, meta.ErrFenced) || attempt >= 3 || ctx.Err() != nil {
			return err
		}
	}
}

func (s *Store) writeOnce(ctx context.Context, cs []meta.Change, fn func(ctx context.Context) error) error {
	wctx := ctx
	if s.inner.Changes != nil {
		fctx, over, err := s.inner.Changes.BeginFlux(ctx, cs, s.sync, s.bus.CommitWithin())
		defer over()
		if err != nil {
			// Not announced: a write that committed now could leave
			// another node serving the old record until the commit's
			// announcement reached it.
			return err
		}
		wctx = fctx
	}
	err := fn(meta.WithAnnounce(wctx, cs))
	// Published even when the write failed: it may have committed
	// (a result checked after COMMIT), and dropping an entry is harmless.
	for _, c := range cs {
		s.bus.Publish(c)
	}
	return err
}

func bucketChange(name string) meta.Change { return meta.Change{Topic: meta.TopicBucket, Key: name} }

func objectChange(bucket, key string) meta.Change {
	return meta.Change{Topic: meta.TopicObject, Key: meta.ObjectChangeKey(bucket, key)}
}

// buckets is meta.Buckets through the cache.
type buckets struct {
	meta.Buckets
	c *Store
}

// GetBucket implements meta.Buckets from the cache.
func (b buckets) GetBucket(ctx context.Context, name string) (meta.Bucket, error) {
	return b.c.buckets.Get(ctx, name, b.c.loadBucket)
}

// SetBucketVisibility implements meta.Buckets, invalidating the bucket.
func (b buckets) SetBucketVisibility(ctx context.Context, name string, v meta.Visibility) error {
	return b.c.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return b.Buckets.SetBucketVisibility(ctx, name, v)
	})
}

// SetBucketEncryption implements meta.Buckets, invalidating the bucket.
func (b buckets) SetBucketEncryption(ctx context.Context, name, enc, kmsKey string) error {
	return b.c.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return b.Buckets.SetBucketEncryption(ctx, name, enc, kmsKey)
	})
}

// lifecycles wraps meta.Lifecycles: a configuration is part of the
// bucket record.
type lifecycles struct {
	meta.Lifecycles
	c *Store
}

// SetBucketLifecycle implements meta.Lifecycles, invalidating the bucket
// (the object service reads the configuration from the record for
// x-amz-expiration).
func (l lifecycles) SetBucketLifecycle(ctx context.Context, name string, lc *meta.Lifecycle) error {
	return l.c.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return l.Lifecycles.SetBucketLifecycle(ctx, name, lc)
	})
}

// corsConfigs wraps meta.CORSConfigs: a configuration is part of the
// bucket record (the S3 API answers requests carrying Origin from it).
type corsConfigs struct {
	meta.CORSConfigs
	c *Store
}

// SetBucketCORS implements meta.CORSConfigs, invalidating the bucket.
func (cc corsConfigs) SetBucketCORS(ctx context.Context, name string, c *meta.CORS) error {
	return cc.c.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return cc.CORSConfigs.SetBucketCORS(ctx, name, c)
	})
}

// acls wraps meta.ACLs: a bucket's grants and ownership setting are part
// of its record, a version's grants of the cached latest version.
type acls struct {
	meta.ACLs
	c *Store
}

// SetBucketACL implements meta.ACLs, invalidating the bucket.
func (a acls) SetBucketACL(ctx context.Context, name string, grants []meta.Grant) error {
	return a.c.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return a.ACLs.SetBucketACL(ctx, name, grants)
	})
}

// SetBucketOwnership implements meta.ACLs, invalidating the bucket.
func (a acls) SetBucketOwnership(ctx context.Context, name string, o meta.ObjectOwnership) error {
	return a.c.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return a.ACLs.SetBucketOwnership(ctx, name, o)
	})
}

// SetObjectACL implements meta.ACLs, invalidating the key (as
// SetObjectTags).
func (a acls) SetObjectACL(ctx context.Context, bucket, key, versionID string, grants []meta.Grant) (meta.Object, error) {
	var obj meta.Object
	err := a.c.write(ctx, []meta.Change{objectChange(bucket, key)}, func(ctx context.Context) (err error) {
		obj, err = a.ACLs.SetObjectACL(ctx, bucket, key, versionID, grants)
		return err
	})
	return obj, err
}

// policies wraps meta.Policies: a bucket policy is part of the bucket
// record.
type policies struct {
	meta.Policies
	c *Store
}

// SetBucketPolicy implements meta.Policies, invalidating the bucket (the
// object service decides every request on the record's policy).
func (p policies) SetBucketPolicy(ctx context.Context, name, doc string) error {
	return p.c.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return p.Policies.SetBucketPolicy(ctx, name, doc)
	})
}

// SetBucketPublicAccessBlock implements meta.Policies, invalidating the
// bucket (its settings are in the record).
func (p policies) SetBucketPublicAccessBlock(ctx context.Context, name string, pab *meta.PublicAccessBlock) error {
	return p.c.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return p.Policies.SetBucketPublicAccessBlock(ctx, name, pab)
	})
}

// SetBucketVersioning implements meta.Buckets, invalidating the bucket
// (a cached record must not keep a suspended or unversioned state: the
// object service reads it to answer and to decide).
func (b buckets) SetBucketVersioning(ctx context.Context, name string, v meta.Versioning) error {
	return b.c.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return b.Buckets.SetBucketVersioning(ctx, name, v)
	})
}

// SetBucketObjectLock implements meta.Buckets, invalidating the bucket:
// its record carries the default retention new versions get.
func (b buckets) SetBucketObjectLock(ctx context.Context, name string, d meta.DefaultRetention) error {
	return b.c.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return b.Buckets.SetBucketObjectLock(ctx, name, d)
	})
}

// DeleteBucket implements meta.Buckets, invalidating the bucket (it holds
// no object: deleting each invalidated it).
func (b buckets) DeleteBucket(ctx context.Context, name string) error {
	return b.c.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return b.Buckets.DeleteBucket(ctx, name)
	})
}

// PutGatewayBucket implements meta.Buckets, invalidating the bucket (a
// gateway's record changes its backend URL, owner or visibility).
func (b buckets) PutGatewayBucket(ctx context.Context, bk meta.Bucket) error {
	return b.c.write(ctx, []meta.Change{bucketChange(bk.Name)}, func(ctx context.Context) error {
		return b.Buckets.PutGatewayBucket(ctx, bk)
	})
}

// objects is meta.Objects through the cache.
type objects struct {
	meta.Objects
	c *Store
}

// GetObject implements meta.Objects from the cache.
func (o objects) GetObject(ctx context.Context, bucket, key string) (meta.Object, error) {
	load := o.c.loadObject
	if strings.Contains(bucket, "/") {
		load = func(ctx context.Context, _ string) (meta.Object, error) {
			return o.Objects.GetObject(ctx, bucket, key)
		}
	}
	obj, err := o.c.objects.Get(ctx, meta.ObjectChangeKey(bucket, key), load)
	if err != nil {
		return meta.Object{}, err
	}
	obj.Metadata = maps.Clone(obj.Metadata)
	obj.Parts = slices.Clone(obj.Parts)
	obj.Tags = slices.Clone(obj.Tags)
	obj.ACL = slices.Clone(obj.ACL)
	return obj, nil
}

// PutObjects implements meta.Objects, invalidating every key written.
func (o objects) PutObjects(ctx context.Context, puts []meta.Put) ([]meta.PutResult, error) {
	cs := make([]meta.Change, 0, len(puts))
	for _, p := range puts {
		c := objectChange(p.Object.Bucket, p.Object.Key)
		if !slices.Contains(cs, c) {
			cs = append(cs, c)
		}
	}
	var out []meta.PutResult
	err := o.c.write(ctx, cs, func(ctx context.Context) (err error) {
		out, err = o.Objects.PutObjects(ctx, puts)
		return err
	})
	return out, err
}

// DeleteObject implements meta.Objects, invalidating the key.
func (o objects) DeleteObject(ctx context.Context, bucket, key string, cond meta.Cond) (meta.Object, error) {
	var obj meta.Object
	err := o.c.write(ctx, []meta.Change{objectChange(bucket, key)}, func(ctx context.Context) (err error) {
		obj, err = o.Objects.DeleteObject(ctx, bucket, key, cond)
		return err
	})
	return obj, err
}

// DeleteVersion implements meta.Objects, invalidating the key (the
// version may be its latest). Versions other than the latest are never
// cached (GetObjectVersion goes to the store).
func (o objects) DeleteVersion(ctx context.Context, bucket, key, versionID string, cond meta.Cond) (meta.Object, error) {
	var obj meta.Object
	err := o.c.write(ctx, []meta.Change{objectChange(bucket, key)}, func(ctx context.Context) (err error) {
		obj, err = o.Objects.DeleteVersion(ctx, bucket, key, versionID, cond)
		return err
	})
	return obj, err
}

// SetObjectTags implements meta.Objects, invalidating the key: the
// cached latest version carries its tags (x-amz-tagging-count on GET and
// HEAD). A version other than the latest is never cached, so naming one
// invalidates the latest needlessly, and harmlessly.
func (o objects) SetObjectTags(ctx context.Context, bucket, key, versionID string, tags []meta.Tag) (meta.Object, error) {
	var obj meta.Object
	err := o.c.write(ctx, []meta.Change{objectChange(bucket, key)}, func(ctx context.Context) (err error) {
		obj, err = o.Objects.SetObjectTags(ctx, bucket, key, versionID, tags)
		return err
	})
	return obj, err
}

// SetObjectRetention implements meta.Objects, invalidating the key: the
// cached latest version carries its lock (GET and HEAD answer it), as
// SetObjectTags.
func (o objects) SetObjectRetention(ctx context.Context, bucket, key, versionID string, r meta.Retention, bypass bool) (meta.Object, error) {
	var obj meta.Object
	err := o.c.write(ctx, []meta.Change{objectChange(bucket, key)}, func(ctx context.Context) (err error) {
		obj, err = o.Objects.SetObjectRetention(ctx, bucket, key, versionID, r, bypass)
		return err
	})
	return obj, err
}

// SetObjectLegalHold implements meta.Objects, invalidating the key, as
// SetObjectRetention.
func (o objects) SetObjectLegalHold(ctx context.Context, bucket, key, versionID string, on bool) (meta.Object, error) {
	var obj meta.Object
	err := o.c.write(ctx, []meta.Change{objectChange(bucket, key)}, func(ctx context.Context) (err error) {
		obj, err = o.Objects.SetObjectLegalHold(ctx, bucket, key, versionID, on)
		return err
	})
	return obj, err
}

// MoveObject implements meta.Objects, invalidating both keys.
func (o objects) MoveObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, dstCond meta.Cond) (meta.Object, error) {
	var obj meta.Object
	cs := []meta.Change{objectChange(srcBucket, srcKey), objectChange(dstBucket, dstKey)}
	err := o.c.write(ctx, cs, func(ctx context.Context) (err error) {
		obj, err = o.Objects.MoveObject(ctx, srcBucket, srcKey, dstBucket, dstKey, dstCond)
		return err
	})
	return obj, err
}

// uploads is meta.Uploads through the cache: completing an upload writes
// an object.
type uploads struct {
	meta.Uploads
	c *Store
}

// GetUpload implements meta.Uploads, remembering where the upload goes
// for its completion (places).
func (u uploads) GetUpload(ctx context.Context, id string) (meta.Upload, error) {
	up, err := u.Uploads.GetUpload(ctx, id)
	if err == nil {
		u.c.places.put(id, up.Bucket, up.Key)
	}
	return up, err
}

// changes names the key upload id completes to (an upload's bucket and
// key never change): as a GetUpload read it a moment before (the object
// service reads the upload to authorise its completion), else read now.
// An upload that is gone completes to nothing.
func (u uploads) changes(ctx context.Context, id string) ([]meta.Change, error) {
	if p, ok := u.c.places.take(id); ok {
		return []meta.Change{objectChange(p.bucket, p.key)}, nil
	}
	up, err := u.Uploads.GetUpload(ctx, id)
	if err != nil {
		return nil, err
	}
	return []meta.Change{objectChange(up.Bucket, up.Key)}, nil
}

// places remembers where uploads go, as GetUpload read them, until their
// completion takes it: an upload's bucket and key never change and its ID
// is never reused, so an entry is never stale, on any node. It saves each
// completion a read of the upload (issue 23, fifth pass: one of the
// direct flow's statements). At most maxPlaces entries; when full it
// starts over (uploads never completed, aborted ones, are forgotten so).
type places struct {
	mu sync.Mutex
	m  map[string]place
}

type place struct{ bucket, key string }

const maxPlaces = 4096

func (p *places) put(id, bucket, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil || len(p.m) >= maxPlaces {
		p.m = make(map[string]place)
	}
	p.m[id] = place{bucket, key}
}

func (p *places) take(id string) (place, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[id]
	delete(p.m, id)
	if len(p.m) == 0 {
		p.m = nil // an idle node keeps no map (maps do not shrink)
	}
	return v, ok
}

// CompleteUpload implements meta.Uploads, invalidating the upload's key.
func (u uploads) CompleteUpload(ctx context.Context, id string, obj meta.Object, parts []meta.CompletePart, minPartSize int64, cond meta.Cond) (meta.Object, error) {
	cs, err := u.changes(ctx, id)
	if err != nil {
		return meta.Object{}, err
	}
	var o meta.Object
	err = u.c.write(ctx, cs, func(ctx context.Context) (err error) {
		o, err = u.Uploads.CompleteUpload(ctx, id, obj, parts, minPartSize, cond)
		return err
	})
	return o, err
}

// CompleteBackendUpload implements meta.Uploads, invalidating the
// upload's key.
func (u uploads) CompleteBackendUpload(ctx context.Context, id string, obj meta.Object, cond meta.Cond) (meta.Object, error) {
	cs, err := u.changes(ctx, id)
	if err != nil {
		return meta.Object{}, err
	}
	var o meta.Object
	err = u.c.write(ctx, cs, func(ctx context.Context) (err error) {
		o, err = u.Uploads.CompleteBackendUpload(ctx, id, obj, cond)
		return err
	})
	return o, err
}

// accounts is meta.Accounts through the cache: deleting a user deletes
// its buckets.
type accounts struct {
	meta.Accounts
	c *Store
}

// DeleteUser implements meta.Accounts: its buckets (and, with purge,
// their objects) go too, so every cache is flushed (a rare operation).
func (a accounts) DeleteUser(ctx context.Context, userID string, purge bool) (meta.DeleteUserResult, error) {
	var r meta.DeleteUserResult
	err := a.c.write(ctx, []meta.Change{{Topic: meta.TopicAll}}, func(ctx context.Context) (err error) {
		r, err = a.Accounts.DeleteUser(ctx, userID, purge)
		return err
	})
	return r, err
}

// encryptionJobs is meta.EncryptionJobs through the cache: a re-wrap job
// changes the envelopes of object records.
type encryptionJobs struct {
	meta.EncryptionJobs
	c *Store
}

// SwapEnvelope implements meta.EncryptionJobs, invalidating what holds
// the envelope: an object's row, or, for a part of a multipart object
// (known only by its parts id), every cached object — a re-wrap job's
// rare write; a cached row must never keep a data key wrapped under a KEK
// that is about to be retired. Upload parts are not cached.
func (e encryptionJobs) SwapEnvelope(ctx context.Context, ref meta.EnvelopeRef, old, env []byte, kek string) (bool, error) {
	var cs []meta.Change
	switch ref.Table {
	case meta.EnvelopeObjects:
		cs = []meta.Change{objectChange(ref.Bucket, ref.Key)}
	case meta.EnvelopeObjectParts:
		cs = []meta.Change{{Topic: meta.TopicAll}}
	default:
		return e.EncryptionJobs.SwapEnvelope(ctx, ref, old, env, kek)
	}
	var ok bool
	err := e.c.write(ctx, cs, func(ctx context.Context) (err error) {
		ok, err = e.EncryptionJobs.SwapEnvelope(ctx, ref, old, env, kek)
		return err
	})
	return ok, err
}

// writeTopics classifies every method of every role of meta.Stores by
// what it changes of the records this package caches
// (TestStoreClassifiesEveryMethod keeps it complete): "" for none (reads,
// and writes of records no cache here holds, or creations: nothing absent
// is cached), else the topics the wrapper above announces. A role with a
// method that changes a cached record must be wrapped by Stores (the test
// checks that too); the others are handed out as they are.
var writeTopics = map[string]map[string]string{
	// Wrapped above.
	"Buckets": {
		"GetBucket": "", "CreateBucket": "", "ListBuckets": "", "ListGatewayBuckets": "",
		"SetBucketVisibility": meta.TopicBucket, "SetBucketEncryption": meta.TopicBucket, "DeleteBucket": meta.TopicBucket,
		"PutGatewayBucket": meta.TopicBucket, "SetBucketVersioning": meta.TopicBucket, "SetBucketObjectLock": meta.TopicBucket,
		// A bucket's tags are not in its record (GetBucket does not read
		// them), and GetBucketTags is not cached.
		"GetBucketTags": "", "SetBucketTags": "",
	},
	"Objects": {
		"GetObject": "", "GetObjectVersion": "", "ListObjects": "", "ListObjectVersions": "",
		"PutObjects": meta.TopicObject, "DeleteObject": meta.TopicObject, "DeleteVersion": meta.TopicObject, "MoveObject": meta.TopicObject,
		"SetObjectTags": meta.TopicObject, "SetObjectRetention": meta.TopicObject, "SetObjectLegalHold": meta.TopicObject,
	},
	"Uploads": {
		"CreateUpload": "", "GetUpload": "", "PutPart": "", "ListParts": "", "ListUploads": "", "ListExpiredUploads": "", "AbortUpload": "",
		"CompleteUpload": meta.TopicObject, "CompleteBackendUpload": meta.TopicObject,
	},
	// The account caches of package auth invalidate user and access-key
	// changes themselves.
	"Accounts": {
		"CreateUser": "", "CreateInvitedUser": "", "GetUser": "", "GetUserByEmail": "",
		"SetQuota": "", "UpdateUser": "", "ListUsers": "", "Counts": "",
		"DeleteUser": meta.TopicAll,
	},
	// The encryption jobs' own rows; ListPlaintextObjects feeds the encrypt
	// job, whose swap is a PutObjects (wrapped above).
	"EncryptionJobs": {
		"StartJob": "", "GetJob": "", "ListJobs": "", "AcquireJob": "", "SaveJob": "",
		"ListEnvelopes": "", "KEKUsage": "", "ListPlaintextObjects": "",
		"SwapEnvelope": meta.TopicObject, // (object parts: everything)
	},
	// A bucket's lifecycle configuration is in its record; the worker's
	// run row is no cached record, and its deletes go through Objects and
	// Uploads (wrapped above).
	"Lifecycles": {
		"GetBucketLifecycle": "", "ListLifecycleBuckets": "", "AcquireLifecycleRun": "", "SaveLifecycleRun": "",
		"SetBucketLifecycle": meta.TopicBucket,
	},
	// A bucket's CORS configuration is in its record.
	"CORSConfigs": {"SetBucketCORS": meta.TopicBucket},
	"ACLs": {
		"SetBucketACL": meta.TopicBucket, "SetBucketOwnership": meta.TopicBucket, "SetObjectACL": meta.TopicObject,
	},
	// A bucket policy is in its record.
	"Policies": {"SetBucketPolicy": meta.TopicBucket, "SetBucketPublicAccessBlock": meta.TopicBucket},

	// Not wrapped: they change no cached record.
	"Sessions":   {"CreateRefreshToken": "", "RotateRefreshToken": "", "RevokeRefreshFamily": "", "DeleteExpiredRefreshTokens": ""},
	"Invites":    {"CreateInvite": "", "GetInviteByHash": "", "ListInvites": "", "RevokeInvite": ""},
	"AccessKeys": {"CreateAccessKey": "", "GetAccessKey": "", "ListAccessKeys": "", "DeleteAccessKey": "", "TouchAccessKey": ""},
	"Limits":     {"SetUserLimits": "", "GetUserLimits": "", "ReserveRate": "", "UpdateThrottles": ""},
	"Stagings":   {"Stage": "", "GrowStaging": "", "RenewStaging": "", "Unstage": "", "DeleteExpiredStaging": ""},
	"Reclamation": {
		"ListGarbage": "", "ClaimGarbage": "", "DeleteGarbage": "", "ReferencedBlobs": "",
		"AcquireBackupLease": "", "RenewBackupLease": "", "ReleaseBackupLease": "", "FinishBackup": "", "LastBackup": "",
	},
	"Shares": {
		"CreateShare": "", "GetShare": "", "GetShareByHash": "", "ListShares": "", "SetShareExpiry": "", "RevokeShare": "",
		"UseShare": "", "StartShareDownload": "", "ResumeShareDownload": "", "DeleteShare": "", "DeleteSpentGrants": "",
		"DeleteExpiredShares": "",
	},
	"Tus": {
		"CreateTus": "", "GetTus": "", "SetTusLength": "", "SetTusHash": "", "TryLockTus": "", "RenewTusLock": "", "UnlockTus": "", "UnlockTusHash": "",
	},
	"KeyGrants": {"AllowKMSKey": "", "DisallowKMSKey": "", "KMSKeyAllowed": "", "ListKMSKeyGrants": ""},
	"Cluster":   {"ClaimKeyFingerprint": "", "Ping": ""},
	// The scrub's own rows.
	"Scrubs": {
		"AcquireScrubRun": "", "SaveScrubRun": "", "GetScrubRun": "", "RecordScrubFinding": "", "ListScrubFindings": "", "DeleteScrubFinding": "",
		"ListScrubVersions": "",
	},
}

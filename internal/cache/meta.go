package cache

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// Store is a meta.Store whose bucket and object records are cached (the
// reads of every GET and HEAD: GetBucket, GetObject) and whose every write
// that changes such a record drops it on every node before it returns.
//
// # Invalidation
//
// Each write method of meta.Store that changes a bucket or object record
// is wrapped here, and only here, so that no caller can forget it: the
// wrapper names the changes (meta.TopicBucket, meta.TopicObject,
// meta.TopicAll for a user's deletion), hands them to the store with
// meta.WithAnnounce (PostgreSQL announces them in the write's transaction,
// so other nodes receive them exactly when it commits), publishes them on
// this process's Bus after the write, and then, on a store shared by
// listening nodes, waits until every node acknowledged them (at most
// StoreOptions.Sync). writeTopics classifies every method of meta.Store
// and a test checks that the classification is complete, so a method
// added to meta.Store must be classified before it builds a passing test.
//
// Records handed out are shallow copies whose Metadata and Parts are the
// caller's own; Inline and Encryption bytes are shared and must not be
// modified.
type Store struct {
	meta.Store
	bus     *Bus
	sync    time.Duration
	buckets *Map[meta.Bucket]
	objects *Map[meta.Object]
}

// StoreOptions configure a Store.
type StoreOptions struct {
	// Buckets and Objects bound the two caches (MaxBytes counts an
	// estimate of each record's size, inline bytes included).
	Buckets, Objects Options
	// Sync bounds how long a write waits for the other nodes'
	// acknowledgements (default 250ms): a node that does not answer in
	// time still drops the entry within the TTL.
	Sync time.Duration
}

var (
	_ meta.Store          = (*Store)(nil)
	_ meta.ChangeListener = (*Store)(nil)
)

// NewStore returns m with caches subscribed to bus.
func NewStore(m meta.Store, bus *Bus, o StoreOptions) *Store {
	if o.Sync <= 0 {
		o.Sync = 250 * time.Millisecond
	}
	return &Store{
		Store:   m,
		bus:     bus,
		sync:    o.Sync,
		buckets: NewMap(bus, meta.TopicBucket, o.Buckets, bucketSize),
		objects: NewMap(bus, meta.TopicObject, o.Objects, objectSize),
	}
}

// Buckets and Objects expose the caches (for metrics and tests).
func (s *Store) Buckets() *Map[meta.Bucket] { return s.buckets }

// Objects: see Buckets.
func (s *Store) Objects() *Map[meta.Object] { return s.objects }

// entryOverhead approximates what an entry costs beyond its strings and
// bytes (the otter node, the struct, map and slice headers).
const entryOverhead = 256

func bucketSize(key string, b meta.Bucket) int {
	return entryOverhead + len(key) + len(b.Name) + len(b.OwnerID) + len(b.Visibility) + len(b.Encryption) + len(b.EncryptionKMSKey)
}

func objectSize(key string, o meta.Object) int {
	n := entryOverhead + len(key) + len(o.Bucket) + len(o.Key) + len(o.ETag) + len(o.SHA256) + len(o.ContentType) +
		len(o.BlobKey) + len(o.Checksum.Algorithm) + len(o.Checksum.Value) + len(o.Inline) + len(o.Encryption) + len(o.EncryptionKEK)
	for k, v := range o.Metadata {
		n += len(k) + len(v) + 32
	}
	for _, p := range o.Parts {
		n += 64 + len(p.BlobKey) + len(p.ETag) + len(p.Checksum) + len(p.Encryption) + len(p.EncryptionKEK)
	}
	return n
}

// GetBucket implements meta.Store from the cache.
func (s *Store) GetBucket(ctx context.Context, name string) (meta.Bucket, error) {
	return s.buckets.Get(ctx, name, s.Store.GetBucket)
}

// GetObject implements meta.Store from the cache.
func (s *Store) GetObject(ctx context.Context, bucket, key string) (meta.Object, error) {
	o, err := s.objects.Get(ctx, meta.ObjectChangeKey(bucket, key), func(ctx context.Context, _ string) (meta.Object, error) {
		return s.Store.GetObject(ctx, bucket, key)
	})
	if err != nil {
		return meta.Object{}, err
	}
	o.Metadata = maps.Clone(o.Metadata)
	o.Parts = slices.Clone(o.Parts)
	return o, nil
}

// write runs fn, a write of the changes cs, as the type's doc says.
func (s *Store) write(ctx context.Context, cs []meta.Change, fn func(ctx context.Context) error) error {
	wait, cancel := s.ExpectChange(cs...)
	err := fn(meta.WithAnnounce(ctx, cs))
	// Published even when the write failed: it may have committed
	// (a result checked after COMMIT), and dropping an entry is harmless.
	for _, c := range cs {
		s.bus.Publish(c)
	}
	if err != nil {
		cancel()
		return err
	}
	if _, shared := s.Store.(meta.ChangeListener); shared && !s.bus.Listening() {
		// This node's own listening connection is down, so it cannot
		// collect the other nodes' acknowledgements (its ExpectChange
		// waits for nothing); they still receive the announcement (it
		// went with the commit). Give them the whole bound to drop the
		// entry: writes are slower only while the connection is down.
		t := time.NewTimer(s.sync)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return nil
	}
	wait(ctx, s.sync)
	return nil
}

func bucketChange(name string) meta.Change { return meta.Change{Topic: meta.TopicBucket, Key: name} }

func objectChange(bucket, key string) meta.Change {
	return meta.Change{Topic: meta.TopicObject, Key: meta.ObjectChangeKey(bucket, key)}
}

// SetBucketVisibility implements meta.Store, invalidating the bucket.
func (s *Store) SetBucketVisibility(ctx context.Context, name string, v meta.Visibility) error {
	return s.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return s.Store.SetBucketVisibility(ctx, name, v)
	})
}

// SetBucketEncryption implements meta.Store, invalidating the bucket.
func (s *Store) SetBucketEncryption(ctx context.Context, name, enc, kmsKey string) error {
	return s.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return s.Store.SetBucketEncryption(ctx, name, enc, kmsKey)
	})
}

// DeleteBucket implements meta.Store, invalidating the bucket (it holds no
// object: deleting each invalidated it).
func (s *Store) DeleteBucket(ctx context.Context, name string) error {
	return s.write(ctx, []meta.Change{bucketChange(name)}, func(ctx context.Context) error {
		return s.Store.DeleteBucket(ctx, name)
	})
}

// DeleteUser implements meta.Store: its buckets (and, with purge, their
// objects) go too, so every cache is flushed (a rare operation).
func (s *Store) DeleteUser(ctx context.Context, userID string, purge bool) (meta.DeleteUserResult, error) {
	var r meta.DeleteUserResult
	err := s.write(ctx, []meta.Change{{Topic: meta.TopicAll}}, func(ctx context.Context) (err error) {
		r, err = s.Store.DeleteUser(ctx, userID, purge)
		return err
	})
	return r, err
}

// PutObjects implements meta.Store, invalidating every key written.
func (s *Store) PutObjects(ctx context.Context, puts []meta.Put) ([]meta.Object, error) {
	cs := make([]meta.Change, 0, len(puts))
	for _, p := range puts {
		c := objectChange(p.Object.Bucket, p.Object.Key)
		if !slices.Contains(cs, c) {
			cs = append(cs, c)
		}
	}
	var out []meta.Object
	err := s.write(ctx, cs, func(ctx context.Context) (err error) {
		out, err = s.Store.PutObjects(ctx, puts)
		return err
	})
	return out, err
}

// DeleteObject implements meta.Store, invalidating the key.
func (s *Store) DeleteObject(ctx context.Context, bucket, key string, cond meta.Cond) (meta.Object, error) {
	var o meta.Object
	err := s.write(ctx, []meta.Change{objectChange(bucket, key)}, func(ctx context.Context) (err error) {
		o, err = s.Store.DeleteObject(ctx, bucket, key, cond)
		return err
	})
	return o, err
}

// MoveObject implements meta.Store, invalidating both keys.
func (s *Store) MoveObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, dstCond meta.Cond) (meta.Object, error) {
	var o meta.Object
	cs := []meta.Change{objectChange(srcBucket, srcKey), objectChange(dstBucket, dstKey)}
	err := s.write(ctx, cs, func(ctx context.Context) (err error) {
		o, err = s.Store.MoveObject(ctx, srcBucket, srcKey, dstBucket, dstKey, dstCond)
		return err
	})
	return o, err
}

// PutGatewayBucket implements meta.Store, invalidating the bucket (a
// gateway's record changes its backend URL, owner or visibility).
func (s *Store) PutGatewayBucket(ctx context.Context, b meta.Bucket) error {
	return s.write(ctx, []meta.Change{bucketChange(b.Name)}, func(ctx context.Context) error {
		return s.Store.PutGatewayBucket(ctx, b)
	})
}

// SwapEnvelope implements meta.Store, invalidating what holds the
// envelope: an object's row, or, for a part of a multipart object (known
// only by its parts id), every cached object — a re-wrap job's rare write;
// a cached row must never keep a data key wrapped under a KEK that is
// about to be retired. Upload parts are not cached.
func (s *Store) SwapEnvelope(ctx context.Context, ref meta.EnvelopeRef, old, env []byte, kek string) (bool, error) {
	var cs []meta.Change
	switch ref.Table {
	case meta.EnvelopeObjects:
		cs = []meta.Change{objectChange(ref.Bucket, ref.Key)}
	case meta.EnvelopeObjectParts:
		cs = []meta.Change{{Topic: meta.TopicAll}}
	default:
		return s.Store.SwapEnvelope(ctx, ref, old, env, kek)
	}
	var ok bool
	err := s.write(ctx, cs, func(ctx context.Context) (err error) {
		ok, err = s.Store.SwapEnvelope(ctx, ref, old, env, kek)
		return err
	})
	return ok, err
}

// uploadChanges names the key an upload completes to (an upload's bucket
// and key never change). An upload that is gone completes to nothing.
func (s *Store) uploadChanges(ctx context.Context, id string) ([]meta.Change, error) {
	u, err := s.Store.GetUpload(ctx, id)
	if err != nil {
		return nil, err
	}
	return []meta.Change{objectChange(u.Bucket, u.Key)}, nil
}

// CompleteUpload implements meta.Store, invalidating the upload's key.
func (s *Store) CompleteUpload(ctx context.Context, id string, obj meta.Object, parts []meta.CompletePart, minPartSize int64, cond meta.Cond) (meta.Object, error) {
	cs, err := s.uploadChanges(ctx, id)
	if err != nil {
		return meta.Object{}, err
	}
	var o meta.Object
	err = s.write(ctx, cs, func(ctx context.Context) (err error) {
		o, err = s.Store.CompleteUpload(ctx, id, obj, parts, minPartSize, cond)
		return err
	})
	return o, err
}

// CompleteBackendUpload implements meta.Store, invalidating the upload's
// key.
func (s *Store) CompleteBackendUpload(ctx context.Context, id string, obj meta.Object, cond meta.Cond) (meta.Object, error) {
	cs, err := s.uploadChanges(ctx, id)
	if err != nil {
		return meta.Object{}, err
	}
	var o meta.Object
	err = s.write(ctx, cs, func(ctx context.Context) (err error) {
		o, err = s.Store.CompleteBackendUpload(ctx, id, obj, cond)
		return err
	})
	return o, err
}

// ListenChanges implements meta.ChangeListener by the wrapped store's,
// if it has one; else it waits for ctx.
func (s *Store) ListenChanges(ctx context.Context, h meta.ChangeHandler) error {
	if l, ok := s.Store.(meta.ChangeListener); ok {
		return l.ListenChanges(ctx, h)
	}
	<-ctx.Done()
	return ctx.Err()
}

// ExpectChange implements meta.ChangeListener by the wrapped store's, if
// it has one; else no-ops.
func (s *Store) ExpectChange(cs ...meta.Change) (wait func(ctx context.Context, max time.Duration), cancel func()) {
	if l, ok := s.Store.(meta.ChangeListener); ok {
		return l.ExpectChange(cs...)
	}
	return func(context.Context, time.Duration) {}, func() {}
}

// writeTopics classifies every method of meta.Store by what it changes of
// the records this package caches (TestStoreClassifiesEveryMethod keeps
// it complete): "" for none (reads, and writes of records no cache here
// holds, or creations: nothing absent is cached), else the topics the
// wrapper above announces.
var writeTopics = map[string]string{
	// Wrapped above.
	"GetBucket": "", "GetObject": "",
	"SetBucketVisibility": meta.TopicBucket, "SetBucketEncryption": meta.TopicBucket, "DeleteBucket": meta.TopicBucket,
	"DeleteUser": meta.TopicAll,
	"PutObjects": meta.TopicObject, "DeleteObject": meta.TopicObject, "MoveObject": meta.TopicObject,
	"CompleteUpload": meta.TopicObject, "CompleteBackendUpload": meta.TopicObject,
	// Change no cached record (the account caches of package auth
	// invalidate user and access-key changes themselves).
	"CreateUser": "", "CreateInvitedUser": "", "CreateBucket": "", "GetUser": "", "GetUserByEmail": "",
	"SetQuota": "", "UpdateUser": "", "ListUsers": "", "Counts": "",
	"CreateRefreshToken": "", "RotateRefreshToken": "", "RevokeRefreshFamily": "", "DeleteExpiredRefreshTokens": "",
	"CreateInvite": "", "GetInviteByHash": "", "ListInvites": "", "RevokeInvite": "",
	"CreateShare": "", "GetShare": "", "GetShareByHash": "", "ListShares": "", "SetShareExpiry": "", "RevokeShare": "", "UseShare": "",
	"StartShareDownload": "", "ResumeShareDownload": "",
	"DeleteShare": "", "DeleteSpentGrants": "",
	"ListBuckets": "", "ListObjects": "",
	"CreateAccessKey": "", "GetAccessKey": "", "ListAccessKeys": "", "DeleteAccessKey": "", "TouchAccessKey": "",
	"CreateUpload": "", "GetUpload": "", "PutPart": "", "ListParts": "", "ListUploads": "", "ListExpiredUploads": "", "AbortUpload": "",
	"ListGarbage": "", "ClaimGarbage": "", "DeleteGarbage": "", "ReferencedBlobs": "", "ClaimKeyFingerprint": "",
	"Stage": "", "GrowStaging": "", "RenewStaging": "", "Unstage": "", "DeleteExpiredStaging": "",
	"Ping": "", "Close": "",
	"CreateTus": "", "GetTus": "", "SetTusLength": "", "SetTusHash": "", "TryLockTus": "", "RenewTusLock": "", "UnlockTus": "",
	"SetUserLimits": "", "GetUserLimits": "", "ReserveRate": "",
	"AllowKMSKey": "", "DisallowKMSKey": "", "KMSKeyAllowed": "", "ListKMSKeyGrants": "",
	"PutGatewayBucket": meta.TopicBucket, "ListGatewayBuckets": "",
	"SwapEnvelope": meta.TopicObject, // (object parts: everything)
	// The encryption jobs' own rows; ListPlaintextObjects feeds the encrypt
	// job, whose swap is a PutObjects (wrapped above).
	"StartKMSJob": "", "GetKMSJob": "", "ListKMSJobs": "", "AcquireKMSJob": "", "SaveKMSJob": "",
	"ListEnvelopes": "", "KEKUsage": "", "ListPlaintextObjects": "",
}

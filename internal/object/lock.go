package object

import (
	"context"
	"github.com/coffer-storage/coffer/internal/audit"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Object lock (S3's WORM; meta/lock.go decides): a bucket created with
// object lock (CreateLockedBucket) keeps every version its retention or
// legal hold protects. The service checks the requests, authorises them
// (only the bucket's owner reads or changes a lock; only the owner, never
// a share link, bypasses GOVERNANCE retention) and passes them to the
// metadata store, which decides inside its transactions. Gateway buckets
// have no object lock: their backend keeps its own (NotImplemented).

// Lock is the lock a write gives the version it makes: a retention (the
// zero one: the bucket's default, if it has one) and a legal hold.
type Lock struct {
	Retention meta.Retention
	LegalHold bool
}

// set reports whether l asks for anything.
func (l Lock) set() bool { return l.Retention.Mode != "" || !l.Retention.Until.IsZero() || l.LegalHold }

// ErrRetentionPast is the refusal of a retention whose date is not in the
// future: InvalidArgument with Detail["reason"] = "retain_until_past".
func ErrRetentionPast() error {
	return &errcode.Error{Code: errcode.InvalidArgument, Message: "The retain until date must be in the future!",
		Detail: map[string]any{"reason": "retain_until_past"}}
}

// checkLock checks the lock a write asks for at now: a valid retention
// (meta.CheckRetention) whose date is in the future.
func checkLock(l Lock, now time.Time) error {
	if err := meta.CheckRetention(l.Retention); err != nil {
		return err
	}
	if l.Retention.Mode != "" && !l.Retention.Until.After(now) {
		return ErrRetentionPast()
	}
	return nil
}

// checkBypass authorises a bypass of GOVERNANCE retention by a, who may
// write b: the bucket's owner, never through a share link.
func checkBypass(a Actor, b bucket, bypass bool) error {
	if bypass && (a.Share || a.UserID != b.OwnerID) {
		return &errcode.Error{Code: errcode.PermissionDenied, Message: "only the bucket's owner may bypass governance retention",
			Detail: map[string]any{"reason": "bypass_denied"}}
	}
	return nil
}

// CreateLockedBucket creates a bucket owned by a with object lock: its
// versioning is Enabled and never suspended; it has no default retention
// until SetObjectLock gives it one.
func (s *Service) CreateLockedBucket(ctx context.Context, a Actor, name string, v meta.Visibility) (meta.Bucket, error) {
	return s.CreateBucketWith(ctx, a, CreateBucketInput{Name: name, Visibility: v, ObjectLock: true})
}

// GetObjectLock returns the object lock state of a bucket a owns
// (Enabled false: it has none).
func (s *Service) GetObjectLock(ctx context.Context, a Actor, name string) (meta.ObjectLock, error) {
	b, err := s.authorize(ctx, a, name, "s3:GetBucketObjectLockConfiguration", "")
	if err != nil {
		return meta.ObjectLock{}, err
	}
	return b.objectLock()
}

// SetObjectLock sets the default retention of a bucket a owns, which must
// have object lock (meta.ErrLockNotEnabled), and returns the bucket.
func (s *Service) SetObjectLock(ctx context.Context, a Actor, name string, d meta.DefaultRetention) (_ meta.Bucket, err error) {
	defer func() { s.audit(ctx, a, audit.BucketLock, audit.Target{Bucket: name}, err) }()
	b, err := s.authorize(ctx, a, name, "s3:PutBucketObjectLockConfiguration", "")
	if err != nil {
		return meta.Bucket{}, err
	}
	if err := meta.CheckDefaultRetention(d); err != nil {
		return meta.Bucket{}, err
	}
	if err := b.setObjectLock(ctx, d); err != nil {
		return meta.Bucket{}, err
	}
	b.ObjectLock.Default = d
	return b.Bucket, nil
}

// GetLock returns version versionID ("": the latest) of bucket/key with
// its lock (Retention, LegalHold), for the bucket's owner:
// meta.ErrLockNotEnabled in a bucket without object lock; a delete marker
// is ErrVersionIsDeleteMarker.
func (s *Service) GetLock(ctx context.Context, a Actor, bucket, key, versionID string) (meta.Object, error) {
	b, err := s.tagged(ctx, a, bucket, key, versionID, a.opOr("s3:GetObjectRetention"))
	if err != nil {
		return meta.Object{}, err
	}
	o, err := b.lockedVersion(ctx, key, versionID)
	if err != nil {
		return meta.Object{}, notFound(err, key, versionID)
	}
	if o.DeleteMarker {
		return meta.Object{}, ErrVersionIsDeleteMarker(o.VersionID)
	}
	return reported(b.Bucket, o), nil
}

// SetRetention sets the retention of version versionID ("": the latest)
// of bucket/key and returns the version: a retention with a mode must be
// in the future (ErrRetentionPast); shortening or removing one is
// meta.CheckRetentionChange's to decide, with bypass granted only to the
// bucket's owner.
func (s *Service) SetRetention(ctx context.Context, a Actor, bucket, key, versionID string, r meta.Retention, bypass bool) (_ meta.Object, err error) {
	defer func() { s.auditDelete(ctx, a, audit.ObjectRetention, bucket, key, versionID, bypass, err) }()
	b, err := s.tagged(ctx, a, bucket, key, versionID, "s3:PutObjectRetention")
	if err != nil {
		return meta.Object{}, err
	}
	if err := checkLock(Lock{Retention: r}, s.now()); err != nil {
		return meta.Object{}, err
	}
	if err := checkBypass(a, b, bypass); err != nil {
		return meta.Object{}, err
	}
	o, err := b.setRetention(ctx, key, versionID, r, bypass)
	if err != nil {
		return meta.Object{}, notFound(err, key, versionID)
	}
	return reported(b.Bucket, o), nil
}

// SetLegalHold sets or clears the legal hold of version versionID ("":
// the latest) of bucket/key and returns the version.
func (s *Service) SetLegalHold(ctx context.Context, a Actor, bucket, key, versionID string, on bool) (_ meta.Object, err error) {
	defer func() {
		s.audit(ctx, a, audit.ObjectHold, audit.Target{Bucket: bucket, Key: key, VersionID: versionID}, err)
	}()
	b, err := s.tagged(ctx, a, bucket, key, versionID, "s3:PutObjectLegalHold")
	if err != nil {
		return meta.Object{}, err
	}
	o, err := b.setLegalHold(ctx, key, versionID, on)
	if err != nil {
		return meta.Object{}, notFound(err, key, versionID)
	}
	return reported(b.Bucket, o), nil
}

func (n *native) objectLock() (meta.ObjectLock, error) { return n.bucket.ObjectLock, nil }

func (n *native) setObjectLock(ctx context.Context, d meta.DefaultRetention) error {
	return n.s.meta.SetBucketObjectLock(ctx, n.bucket.Name, d)
}

func (n *native) lockedVersion(ctx context.Context, key, versionID string) (meta.Object, error) {
	if !n.bucket.ObjectLock.Enabled {
		return meta.Object{}, meta.ErrLockNotEnabled(n.bucket.Name)
	}
	return n.objectTags(ctx, key, versionID)
}

func (n *native) setRetention(ctx context.Context, key, versionID string, r meta.Retention, bypass bool) (meta.Object, error) {
	return n.s.meta.SetObjectRetention(ctx, n.bucket.Name, key, versionID, r, bypass)
}

func (n *native) setLegalHold(ctx context.Context, key, versionID string, on bool) (meta.Object, error) {
	return n.s.meta.SetObjectLegalHold(ctx, n.bucket.Name, key, versionID, on)
}

func (unsupported) objectLock() (meta.ObjectLock, error) {
	return meta.ObjectLock{}, errGatewayUnsupported("object lock")
}

func (u unsupported) setObjectLock(ctx context.Context, _ meta.DefaultRetention) error {
	if err := u.writable(ctx); err != nil {
		return err
	}
	return errGatewayUnsupported("object lock")
}

func (unsupported) lockedVersion(context.Context, string, string) (meta.Object, error) {
	return meta.Object{}, errGatewayUnsupported("object lock")
}

func (u unsupported) setRetention(ctx context.Context, _, _ string, _ meta.Retention, _ bool) (meta.Object, error) {
	if err := u.writable(ctx); err != nil {
		return meta.Object{}, err
	}
	return meta.Object{}, errGatewayUnsupported("object lock")
}

func (u unsupported) setLegalHold(ctx context.Context, _, _ string, _ bool) (meta.Object, error) {
	if err := u.writable(ctx); err != nil {
		return meta.Object{}, err
	}
	return meta.Object{}, errGatewayUnsupported("object lock")
}

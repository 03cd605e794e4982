package object

import (
	"context"
	"github.com/coffer-storage/coffer/internal/audit"
	"io"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Reads
//
// A read is planned, then opened: Get authorises it and looks the object
// up in its bucket's backend (one version: its size, ETag, envelope, where
// its bytes are); the API evaluates ranges and conditions on that, then
// Reader.Open asks the backend for the bytes, decrypting them when the
// version has an envelope (encrypt.go, opener). The APIs send them
// (httpx.SendSpan).

// Reader is an authorised handle on one object version: its metadata, and
// a way to open its bytes.
type Reader struct {
	Object meta.Object
	Bucket meta.Bucket
	// CustomerKey is the key an object stored with a customer key (S3
	// SSE-C) is read with; see CheckCustomerKey.
	CustomerKey []byte
	s           *core
	backend     backend // where Object's bytes are
	// open, set by NewReader, opens the bytes instead of a backend.
	open func(ctx context.Context, offset, length int64) (io.ReadCloser, error)
}

// NewReader returns a Reader of o, in bucket b, whose bytes come from open
// (called by Open with a range within o: offset ≤ o.Size, length ≥ 0):
// what a fake of the service hands the APIs in their handler tests.
func NewReader(o meta.Object, b meta.Bucket, open func(ctx context.Context, offset, length int64) (io.ReadCloser, error)) *Reader {
	return &Reader{Object: o, Bucket: b, open: open}
}

// Get authorises a read of bucket/key (its latest version) and returns a
// handle; no bytes are read until Open. A key whose latest version is a
// delete marker is ErrDeleteMarker.
func (s *Service) Get(ctx context.Context, a Actor, bucket, key string) (*Reader, error) {
	return s.GetVersion(ctx, a, bucket, key, "")
}

// GetVersion is Get of version versionID of the key ("": the latest):
// ErrNoVersion if there is none, ErrVersionIsDeleteMarker if it is a
// delete marker, InvalidArgument for a malformed version ID.
func (s *Service) GetVersion(ctx context.Context, a Actor, bucket, key, versionID string) (*Reader, error) {
	b, o, err := s.aclTarget(ctx, a, bucket, key, versionID, VersionedAction("s3:GetObject", versionID))
	if err != nil {
		return nil, err
	}
	return &Reader{Object: o, Bucket: b.Bucket, s: s.core, backend: b.backend}, nil
}

// load looks up version versionID ("": the latest) of key.
func (b bucket) load(ctx context.Context, key, versionID string) (meta.Object, error) {
	if versionID == "" {
		return b.lookup(ctx, key)
	}
	return b.lookupVersion(ctx, key, versionID)
}

// validVersion checks a version ID a client named ("": none).
func validVersion(id string) error {
	if id != "" && !meta.ValidVersionID(id) {
		return &errcode.Error{Code: errcode.InvalidArgument, Message: "Invalid version id specified", Detail: map[string]any{"reason": "invalid_version_id"}}
	}
	return nil
}

// reported is o as the service reports a write of it into bucket b: with
// no VersionID in a bucket never versioned (where S3 names no version).
func reported(b meta.Bucket, o meta.Object) meta.Object {
	if b.Versioning == meta.Unversioned && o.VersionID == meta.NullVersion {
		o.VersionID = ""
	}
	return o
}

// Open returns the bytes [offset, offset+length) of the object version;
// length -1 means to the end. Multipart objects are read part after part.
func (r *Reader) Open(ctx context.Context, offset, length int64) (io.ReadCloser, error) {
	o := r.Object
	if offset < 0 || offset > o.Size {
		return nil, errcode.New(errcode.RangeNotSatisfiable, "offset %d outside the object's %d bytes", offset, o.Size)
	}
	if length < 0 || offset+length > o.Size {
		length = o.Size - offset
	}
	if r.open != nil {
		return r.open(ctx, offset, length)
	}
	keys := r.blobKeys()
	if len(keys) == 0 {
		return r.backend.open(ctx, r, offset, length)
	}
	// Pinned before the first blob opens, until Close: the janitor's
	// prompt reclaim leaves them alone (pressure.go).
	unpin := r.s.reading.pin(keys)
	rc, err := r.backend.open(ctx, r, offset, length)
	if err != nil {
		unpin()
		return nil, err
	}
	return &pinnedReader{ReadCloser: rc, unpin: unpin}, nil
}

// opener opens bytes of the object version with envelope env (nil:
// plaintext) bound to identity.
func (r *Reader) opener(env []byte, identity string, size int64, fetch func(off, n int64) (io.ReadCloser, error)) opener {
	return opener{s: r.s, bucket: r.Object.Bucket, key: r.Object.Key, envelope: env, identity: identity, size: size,
		customerKey: r.CustomerKey, fetch: fetch, plainOpenerErr: r.gone}
}

// blobOpener opens the blob blobKey of plaintext size bytes.
func (r *Reader) blobOpener(ctx context.Context, blobKey string, size int64, env []byte) opener {
	return r.opener(env, blobKey, size, func(off, n int64) (io.ReadCloser, error) {
		rc, err := r.s.blobs.Get(ctx, blobKey, off, n)
		if err != nil {
			if errcode.Is(err, errcode.RangeNotSatisfiable) {
				// The range lies within the recorded size: the blob is
				// shorter than it (torn).
				err = errCorrupt(blobKey, err)
			}
			if !errcode.Is(err, errcode.NotFound) {
				r.s.readFailed(ctx, r.Object, blobKey, err)
			}
			return nil, err
		}
		if env != nil {
			return rc, nil // crypt authenticates every segment
		}
		return &exactReader{ReadCloser: rc, ctx: ctx, c: r.s, o: r.Object, key: blobKey, n: n}, nil
	})
}

// gone maps a missing blob to a missing object: the version was replaced
// and reclaimed between lookup and open (after the grace period).
func (r *Reader) gone(err error) error {
	if errcode.Is(err, errcode.NotFound) {
		return ErrNoObject(r.Object.Key)
	}
	return err
}

// Delete removes bucket/key: in a bucket never versioned, the object
// (returned; NotFound if missing); in a versioned bucket, it writes a
// delete marker as the key's latest version and returns it (DeleteMarker,
// VersionID), whether or not an object was there.
func (s *Service) Delete(ctx context.Context, a Actor, bucket, key string, cond meta.Cond) (o meta.Object, err error) {
	defer func() {
		var why audit.Reason
		if o.DeleteMarker {
			why = audit.ReasonDeleteMarker
		}
		s.auditReason(ctx, a, audit.ObjectDelete, audit.Target{Bucket: bucket, Key: key, VersionID: o.VersionID}, why, err)
	}()
	b, err := s.authorize(ctx, a, bucket, "s3:DeleteObject", key)
	if err != nil {
		return meta.Object{}, err
	}
	if err := ValidKey(key); err != nil {
		return meta.Object{}, err
	}
	o, err = b.delete(ctx, key, cond)
	return reported(b.Bucket, o), err
}

// DeleteVersion removes version versionID of bucket/key for good (a
// delete marker too: the key's next newest version is then the latest)
// and returns it; ErrNoVersion if there is none; meta.ErrLocked if the
// version is locked (cond.BypassGovernance, granted to the bucket's
// owner only, lets GOVERNANCE retention yield).
func (s *Service) DeleteVersion(ctx context.Context, a Actor, bucket, key, versionID string, cond meta.Cond) (_ meta.Object, err error) {
	defer func() { s.auditDelete(ctx, a, audit.VersionDelete, bucket, key, versionID, cond.BypassGovernance, err) }()
	b, err := s.authorize(ctx, a, bucket, VersionedAction("s3:DeleteObject", versionID), key)
	if err != nil {
		return meta.Object{}, err
	}
	if err := ValidKey(key); err != nil {
		return meta.Object{}, err
	}
	if versionID == "" {
		return meta.Object{}, validVersion("-")
	}
	if err := validVersion(versionID); err != nil {
		return meta.Object{}, err
	}
	if err := checkBypass(a, b, cond.BypassGovernance); err != nil {
		return meta.Object{}, err
	}
	return b.deleteVersion(ctx, key, versionID, cond)
}

// Move renames srcBucket/srcKey to dstBucket/dstKey (a must be allowed to
// read and delete the source and to write the destination). A
// move that involves a versioned bucket is a copy of the latest version
// and a delete (a delete marker in a versioned source): a rename would
// take a version out of its key's history.
func (s *Service) Move(ctx context.Context, a Actor, srcBucket, srcKey, dstBucket, dstKey string, cond meta.Cond) (meta.Object, error) {
	sb, err := s.authorize(ctx, a, srcBucket, "s3:DeleteObject", srcKey)
	if err != nil {
		return meta.Object{}, err
	}
	// A move reads the source too.
	if err := s.decide(ctx, sb.Bucket, a, "s3:GetObject", srcKey); err != nil {
		return meta.Object{}, err
	}
	db, err := s.authorize(ctx, a, dstBucket, "s3:PutObject", dstKey)
	if err != nil {
		return meta.Object{}, err
	}
	o, err := sb.moveOut(ctx, srcKey, db.backend, dstKey, cond)
	if meta.IsMoveVersioned(err) {
		return s.moveByCopy(ctx, a, srcBucket, srcKey, dstBucket, dstKey, cond)
	}
	return o, err
}

// moveByCopy moves by copying the latest version and deleting the source
// if it is still the version copied.
func (s *Service) moveByCopy(ctx context.Context, a Actor, srcBucket, srcKey, dstBucket, dstKey string, cond meta.Cond) (meta.Object, error) {
	src, err := s.Get(ctx, a, srcBucket, srcKey)
	if err != nil {
		return meta.Object{}, err
	}
	o, err := s.CopyFrom(ctx, a, src, CopyInput{DstBucket: dstBucket, DstKey: dstKey, Cond: cond})
	if err != nil {
		return meta.Object{}, err
	}
	if _, err := s.Delete(ctx, a, srcBucket, srcKey, meta.Cond{IfMatch: src.Object.ETag}); err != nil {
		return meta.Object{}, err
	}
	return o, nil
}

// List lists a bucket a owns.
func (s *Service) List(ctx context.Context, a Actor, bucket string, opts meta.ListOptions) (meta.ListPage, error) {
	b, err := s.authorize(ctx, a.listing(opts.Prefix), bucket, "s3:ListBucket", "")
	if err != nil {
		return meta.ListPage{}, err
	}
	page, err := b.list(ctx, opts)
	listedOwners(b.Bucket, page.Objects)
	return page, err
}

// listedOwners sets the Owner of listed objects, which listings do not
// read: the bucket's owner (an object another account wrote is listed
// under the bucket's owner too; its GetObjectAcl names its writer).
func listedOwners(b meta.Bucket, os []meta.Object) {
	for i := range os {
		if os[i].Owner == "" {
			os[i].Owner = b.OwnerID
		}
	}
}

// ListVersions lists the versions and delete markers of a bucket a owns.
func (s *Service) ListVersions(ctx context.Context, a Actor, bucket string, opts meta.VersionListOptions) (meta.VersionPage, error) {
	b, err := s.authorize(ctx, a.listing(opts.Prefix), bucket, "s3:ListBucketVersions", "")
	if err != nil {
		return meta.VersionPage{}, err
	}
	page, err := b.listVersions(ctx, opts)
	listedOwners(b.Bucket, page.Versions)
	return page, err
}

// auditDelete records a delete of a version (or a retention change) and,
// when it asked to bypass governance retention, the bypass: granted (the
// action's outcome) or refused.
func (s *core) auditDelete(ctx context.Context, a Actor, action audit.Action, bucket, key, versionID string, bypass bool, err error) {
	t := audit.Target{Bucket: bucket, Key: key, VersionID: versionID}
	var why audit.Reason
	if bypass {
		why = audit.ReasonBypass
	}
	s.auditReason(ctx, a, action, t, why, err)
	if bypass {
		s.auditReason(ctx, a, audit.GovernanceBypass, t, "", err)
	}
}

package meta

import (
	"context"
)

// Objects keeps the object records, each a version of its key (see
// versions.go): reads, writes (which move usage and enqueue removed blobs
// in the same transaction, see the package doc) and listings. Usage counts
// every stored version; delete markers have no size.
type Objects interface {
	// GetObject returns the key's latest version: NotFound if the bucket
	// or key is missing, ErrDeleteMarker if the latest version is a delete
	// marker.
	GetObject(ctx context.Context, bucket, key string) (Object, error)
	// GetObjectVersion returns one version of the key, a delete marker
	// included (DeleteMarker set): NotFound if the bucket is missing,
	// ErrNoVersion if the key has no such version.
	GetObjectVersion(ctx context.Context, bucket, key, versionID string) (Object, error)
	// PutObjects writes all puts in one transaction, all or nothing, each
	// a new latest version of its key as the bucket's versioning says at
	// commit time (PlanVersion: in a bucket not Enabled the key's null
	// version is replaced; in an Enabled one every version stays), or with
	// InPlace the rewrite of one version. For each put: NotFound if the
	// bucket is missing; PreconditionFailed if its Cond fails on the key's
	// latest version (a delete marker is no object); QuotaExceeded if the
	// bucket owner's usage would pass its quota (growth only: a put that
	// shrinks usage always passes); ErrLockNotEnabled if it carries a
	// retention or a legal hold and the bucket has no object lock, and a
	// new version without a retention of its own gets the bucket's
	// default (LockVersion, at commit time; an InPlace rewrite keeps the
	// version's lock, as its tags). Returns, per put, the version as
	// stored and the one it replaced (blobs enqueued as garbage).
	PutObjects(ctx context.Context, puts []Put) ([]PutResult, error)
	// DeleteObject is a delete without a version ID, if cond holds for
	// the key's latest version. In a bucket never versioned it removes
	// the object, returns it and enqueues its blob: NotFound if missing.
	// In a versioned bucket it writes a delete marker as the key's latest
	// version (in a suspended bucket the null one, replacing the null
	// version), whether or not an object is there, and returns it.
	DeleteObject(ctx context.Context, bucket, key string, cond Cond) (Object, error)
	// DeleteVersion removes one version of the key for good (a delete
	// marker too), if cond holds for it (a marker is no object), enqueues
	// its blobs and returns it; if it was the latest, the key's next
	// newest version becomes the latest. NotFound if the bucket is
	// missing, ErrNoVersion if there is no such version; ErrLocked if
	// the version is locked (CheckUnlocked with cond.BypassGovernance, at
	// the store's time, in the removal's transaction).
	DeleteVersion(ctx context.Context, bucket, key, versionID string, cond Cond) (Object, error)
	// MoveObject renames src to dst (buckets may differ), keeping the blob.
	// dstCond applies to the object currently at dst, which is replaced
	// (and its blob enqueued). Usage moves between owners with a quota check
	// on the destination owner. Moving a key onto itself is a no-op. Returns
	// the object at its new place. ErrMoveVersioned if either bucket is
	// not Unversioned.
	MoveObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, dstCond Cond) (Object, error)
	// SetObjectTags replaces the tag set of version versionID ("": the
	// latest) of the key with tags (nil: none), in place (no new version),
	// and returns the version as it is now: InvalidArgument unless
	// CheckTags(tags, MaxObjectTags); NotFound if the bucket is missing,
	// ErrNoObject, ErrDeleteMarker (the latest is a marker) or ErrNoVersion
	// as GetObject and GetObjectVersion; MethodNotAllowed (Detail
	// "reason" = "delete_marker") for a named delete marker, which has no
	// tags.
	SetObjectTags(ctx context.Context, bucket, key, versionID string, tags []Tag) (Object, error)
	// SetObjectRetention sets the retention of version versionID ("":
	// the latest) of the key, in place, and returns the version as it is
	// now: ErrLockNotEnabled if the bucket has no object lock; NotFound
	// as SetObjectTags (a delete marker is MethodNotAllowed);
	// InvalidArgument or ErrLocked unless CheckRetentionChange (with
	// bypass, at the store's time, in the write's transaction).
	SetObjectRetention(ctx context.Context, bucket, key, versionID string, r Retention, bypass bool) (Object, error)
	// SetObjectLegalHold sets or clears the legal hold of version
	// versionID ("": the latest) of the key, in place, and returns the
	// version as it is now: ErrLockNotEnabled if the bucket has no object
	// lock; NotFound and MethodNotAllowed as SetObjectRetention.
	SetObjectLegalHold(ctx context.Context, bucket, key, versionID string, on bool) (Object, error)
	// ListObjects returns one page of the latest versions that are not
	// delete markers (IsLatest set, VersionID left empty:
	// ListObjectVersions names versions); with opts.DeleteMarkers, of the
	// latest versions that are. NotFound if the bucket is missing.
	ListObjects(ctx context.Context, bucket string, opts ListOptions) (ListPage, error)
	// ListObjectVersions returns one page of every version and delete
	// marker (ListVersions' semantics). NotFound if the bucket is missing;
	// InvalidArgument unless CheckVersionListOptions.
	ListObjectVersions(ctx context.Context, bucket string, opts VersionListOptions) (VersionPage, error)
}

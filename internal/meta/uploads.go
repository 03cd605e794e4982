package meta

import (
	"context"
	"time"
)

// Uploads keeps the multipart uploads in progress and their parts, and
// turns an upload into an object.
type Uploads interface {
	// CreateUpload starts a multipart upload. NotFound if the bucket is
	// missing; AlreadyExists if the ID is taken. A declared Size is
	// reserved against the bucket owner's quota until the upload is
	// completed, aborted or expires (a Declared staging keyed
	// DeclaredStagingKey(u.ID), expiring at u.ExpiresAt): QuotaExceeded,
	// and nothing is created, if it does not fit.
	CreateUpload(ctx context.Context, u Upload) error
	// GetUpload returns an upload in progress; NotFound if it does not
	// exist (never created, aborted or completed).
	GetUpload(ctx context.Context, id string) (Upload, error)
	// PutPart records a part, replacing (and enqueueing the blob of) any
	// earlier part with the same number, and returns the replaced part
	// (zero if none). The part's size counts toward the bucket owner's
	// usage from now on (the replaced part's size no longer does), with the
	// same quota check as PutObjects; the upload's declared size still due
	// shrinks accordingly. NotFound if the upload is gone (the caller then
	// deletes the part's blob). p.Staged as Put.Staged.
	PutPart(ctx context.Context, p Part) (Part, error)
	// ListParts returns up to limit parts of an upload with Number >
	// after, ascending, and whether more exist. NotFound if the upload is
	// gone. limit 0 means 1000.
	ListParts(ctx context.Context, uploadID string, after, limit int) ([]Part, bool, error)
	// ListUploads returns a page of the bucket's uploads in progress and
	// whether more exist. NotFound if the bucket is missing.
	ListUploads(ctx context.Context, bucket string, opts ListUploadsOptions) ([]Upload, bool, error)
	// ListExpiredUploads returns up to limit uploads whose ExpiresAt is
	// before t, oldest first.
	ListExpiredUploads(ctx context.Context, before time.Time, limit int) ([]Upload, error)
	// AbortUpload deletes an upload and its parts, enqueueing their blobs
	// and releasing their usage. NotFound if the upload is gone.
	AbortUpload(ctx context.Context, id string) error
	// CompleteUpload atomically turns an upload into the object obj at the
	// upload's bucket and key: obj.Parts is set by the store from parts (in
	// the given order), obj.Size is their sum, obj.Bucket/Key come from the
	// upload; the caller sets ETag, Checksum, ContentType, Metadata,
	// ModTime. Checks, inside the transaction:
	//   - parts non-empty and strictly ascending, else InvalidArgument with
	//     Detail["reason"] = "invalid_part_order";
	//   - every listed part exists with the given ETag (quotes ignored),
	//     else InvalidArgument with Detail["reason"] = "invalid_part" and
	//     Detail["part_number"];
	//   - every listed part but the last is at least minPartSize bytes, else
	//     InvalidArgument with Detail["reason"] = "entity_too_small" and
	//     Detail["part_number"];
	//   - cond on the object currently at the key (PreconditionFailed).
	// Then: the object replaces any current one (whose blobs are
	// enqueued), parts not listed are discarded (blobs enqueued, usage
	// released), the replaced object's usage is released, and the upload
	// disappears. NotFound if the upload is gone. Returns the new object.
	CompleteUpload(ctx context.Context, id string, obj Object, parts []CompletePart, minPartSize int64, cond Cond) (Object, error)
	// CompleteBackendUpload atomically turns an upload with a BlobKey,
	// whose bytes the blob backend assembled, into the single-blob object
	// obj at the upload's bucket and key. obj.BlobKey must be the upload's
	// BlobKey (else InvalidArgument); obj.Size is the assembled size and
	// counts toward the bucket owner's usage from now on, with the quota
	// check of PutObjects (QuotaExceeded changes nothing). cond applies to
	// the object currently at the key, which is replaced (blobs enqueued,
	// usage released); parts recorded with PutPart, if any, are discarded.
	// NotFound if the upload is gone: of two concurrent completions,
	// exactly one succeeds.
	CompleteBackendUpload(ctx context.Context, id string, obj Object, cond Cond) (Object, error)
}

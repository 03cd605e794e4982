package meta

import (
	"context"
	"time"
)

// Reclamation is the queue of blobs to reclaim (enqueued by the writes
// that unlink them) and the check that finds orphans.
type Reclamation interface {
	// ListGarbage returns up to limit queued blobs enqueued before t, oldest first.
	ListGarbage(ctx context.Context, before time.Time, limit int) ([]Garbage, error)
	// ClaimGarbage is ListGarbage for reclamation: it re-checks, when
	// called, that no row points at each listed blob (an object, a part, an
	// upload, a staging) and returns only those no row points at. A
	// queued blob that a row points at again is dropped from the queue (it
	// is enqueued again when its last row goes).
	ClaimGarbage(ctx context.Context, before time.Time, limit int) ([]Garbage, error)
	// DeleteGarbage removes queue entries (after their blobs are deleted).
	DeleteGarbage(ctx context.Context, ids []int64) error
	// ReferencedBlobs returns which of keys a row still points at (an
	// object, a part of a multipart object, a part of an upload in
	// progress, the BlobKey of an upload in progress, a staging, or the
	// garbage queue), for orphan collection. A staging counts until it is
	// deleted, expired or not: liveness is judged by the clocks of the
	// nodes, so a node whose clock runs ahead must not take a blob whose
	// writer still holds its lease (see DeleteExpiredStaging).
	ReferencedBlobs(ctx context.Context, keys []string) (map[string]bool, error)
}

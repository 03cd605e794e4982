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
	// is enqueued again when its last row goes). A blob held by a backup
	// lease live at now (one of its queue entries was queued at or after
	// the lease's since) is neither claimed nor dropped: see
	// AcquireBackupLease.
	ClaimGarbage(ctx context.Context, before, now time.Time, limit int) ([]Garbage, error)
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

	// AcquireBackupLease starts the backup lease id (coffer backup,
	// internal/backup): until it ends (ReleaseBackupLease, FinishBackup)
	// or lapses (its until passes), ClaimGarbage claims no blob queued at
	// or after since. A backup takes it, committed, before it reads its
	// metadata snapshot, so every blob the snapshot points at and a write
	// unlinks afterwards stays until the backup has copied it. Conflict if
	// id is taken.
	AcquireBackupLease(ctx context.Context, id string, since, until time.Time) error
	// RenewBackupLease extends lease id to until if it is still live at
	// now; else ErrJobLeaseLost("backup") (it lapsed, or ended), and the
	// janitor may have reclaimed what it held.
	RenewBackupLease(ctx context.Context, id string, until, now time.Time) error
	// ReleaseBackupLease ends lease id (none: no error).
	ReleaseBackupLease(ctx context.Context, id string) error
	// FinishBackup ends lease id and records at as the time the last
	// backup finished, in one transaction.
	FinishBackup(ctx context.Context, id string, at time.Time) error
	// LastBackup returns when the last backup finished (the zero time if
	// none did).
	LastBackup(ctx context.Context) (time.Time, error)
}

// BackupLeaseName names the backup lease in ErrJobLeaseLost.
const BackupLeaseName = "backup"

package meta

import (
	"context"
	"time"
)

// Scrubs keeps the state of the scrub (coffer fsck and the background
// scrub, object/scrub.go): its one run (a lease, so one node scrubs at a
// time, and the cursor it resumes from) and its findings, the blobs found
// missing, damaged or unreadable, by the scrub or by a read.
type Scrubs interface {
	// AcquireScrubRun leases the scrub's run to owner until until, if its
	// lease is free, expired at now, or owner's already, and returns it;
	// ok false if another holds it.
	AcquireScrubRun(ctx context.Context, owner string, until, now time.Time) (r ScrubRun, ok bool, err error)
	// SaveScrubRun records r (Cursor, StartedAt, FinishedAt, Progress,
	// Last) and extends the lease to until if owner still holds it at now;
	// else ErrJobLeaseLost("scrub") and nothing changes.
	SaveScrubRun(ctx context.Context, r ScrubRun, owner string, until, now time.Time) error
	// GetScrubRun returns the run as it is (the zero ScrubRun if none
	// ever started).
	GetScrubRun(ctx context.Context) (ScrubRun, error)
	// RecordScrubFinding records f (replacing the finding of the same
	// BlobKey): InvalidArgument if BlobKey or Problem is empty.
	RecordScrubFinding(ctx context.Context, f ScrubFinding) error
	// ListScrubFindings returns up to limit findings, by blob key, after
	// the blob key after.
	ListScrubFindings(ctx context.Context, after string, limit int) ([]ScrubFinding, error)
	// DeleteScrubFinding forgets the finding of blobKey (none: no error).
	DeleteScrubFinding(ctx context.Context, blobKey string) error
	// ListScrubVersions returns up to limit object versions of every
	// bucket after the version after (nil: from the start), in (bucket,
	// key, version ID) order; delete markers left out.
	ListScrubVersions(ctx context.Context, after *VersionRef, limit int) ([]VersionRef, error)
}

// VersionRef names an object version.
type VersionRef struct {
	Bucket    string `json:"b"`
	Key       string `json:"k"`
	VersionID string `json:"v"`
}

// ScrubRun is the state of the scrub (one per store).
type ScrubRun struct {
	// Cursor is where the current run is (the scrub's own encoding; "" =
	// no run in progress); Progress the current run's counts and Last the
	// last finished run's summary (the scrub's own encodings).
	Cursor, Progress, Last string
	// StartedAt is when the current run began, FinishedAt when the last
	// one ended (zero: never).
	StartedAt, FinishedAt time.Time
	LeaseOwner            string
	LeaseUntil            time.Time
}

// ScrubRunName names the lease of the scrub.
const ScrubRunName = "scrub"

// The problems of a ScrubFinding.
const (
	ScrubMissing    = "missing"    // the blob of a live version is gone
	ScrubCorrupt    = "corrupt"    // its size or digest differs from the record
	ScrubUnreadable = "unreadable" // the blob store failed to read it
)

// ScrubFinding is a blob found damaged: the object version it holds the
// bytes of, what is wrong (Problem, one of the Scrub* constants; Detail,
// the error), and when it was found.
type ScrubFinding struct {
	BlobKey   string    `json:"blob_key"`
	Bucket    string    `json:"bucket"`
	Key       string    `json:"key"`
	VersionID string    `json:"version_id"`
	Problem   string    `json:"problem"`
	Detail    string    `json:"detail"`
	FoundAt   time.Time `json:"found_at"`
}

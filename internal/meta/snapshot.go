package meta

import "context"

// Snapshotter is a metadata store that copies itself, consistently, while
// it serves: SQLite's (VACUUM INTO), for coffer backup. PostgreSQL's is
// not one: the scale-out shape is backed up with PostgreSQL's own tools.
type Snapshotter interface {
	// SnapshotTo writes a copy of every row committed when it began to
	// the new file path, durably.
	SnapshotTo(ctx context.Context, path string) error
	// SnapshotBlobs calls fn with every blob key the rows of the
	// snapshot at path point at, once each (staged: only a staging does,
	// the blob of a write not acknowledged when the snapshot was read),
	// and returns how many object versions the snapshot holds (delete
	// markers left out).
	SnapshotBlobs(ctx context.Context, path string, fn func(key string, staged bool) error) (objects int64, err error)
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// SnapshotTo implements meta.Snapshotter: VACUUM INTO path, on a
// connection of its own, which reads the database in one read
// transaction (WAL: beside the writer, of this process or another) and
// writes a compact, self-contained copy (no -wal file) of everything
// committed when that transaction began. path must not exist. The copy is
// fsynced before SnapshotTo returns.
func (s *Store) SnapshotTo(ctx context.Context, path string) error {
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return errcode.New(errcode.Conflict, "sqlite: snapshot %s exists already", path)
	}
	db, err := sql.Open("sqlite", dsn(s.path, "busy_timeout(10000)", "query_only(0)"))
	if err != nil {
		return errcode.Wrap(errcode.Unavailable, err, "sqlite: open %s", s.path)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?1", path); err != nil {
		return classify(err, "sqlite: snapshot into %s", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return errcode.Wrap(errcode.Unavailable, err, "sqlite: open snapshot %s", path)
	}
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return errcode.Wrap(errcode.Unavailable, err, "sqlite: snapshot %s", path)
	}
	if err := f.Sync(); err != nil {
		return errcode.Wrap(errcode.Unavailable, err, "sqlite: sync snapshot %s", path)
	}
	return nil
}

// snapshotBlobsQuery lists every blob a snapshot's rows point at, once
// each, with whether a staging is its only reference: an object's, a part
// of a multipart object's, a part of an upload in progress's, an upload's
// that the backend assembles, a staging's (see metasql.Referenced).
const snapshotBlobsQuery = `SELECT k, MIN(staged) FROM (
	SELECT blob_key AS k, 0 AS staged FROM objects WHERE blob_key <> ''
	UNION ALL SELECT blob_key, 0 FROM object_parts
	UNION ALL SELECT blob_key, 0 FROM upload_parts
	UNION ALL SELECT blob_key, 0 FROM uploads WHERE blob_key <> ''
	UNION ALL SELECT blob_key, 1 FROM staging
) GROUP BY k ORDER BY k`

// SnapshotBlobs implements meta.Snapshotter: it opens the snapshot at path
// read-only and calls fn with every blob key its rows point at (once
// each; staged: a staging is its only reference, the blob of a write not
// acknowledged when the snapshot was read, which may be gone since), then
// returns how many object versions (delete markers left out) it holds.
func (s *Store) SnapshotBlobs(ctx context.Context, path string, fn func(key string, staged bool) error) (int64, error) {
	db, err := sql.Open("sqlite", dsn(path, "query_only(1)")+"&mode=ro")
	if err != nil {
		return 0, errcode.Wrap(errcode.Unavailable, err, "sqlite: open snapshot %s", path)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, snapshotBlobsQuery)
	if err != nil {
		return 0, classify(err, "sqlite: read snapshot %s", path)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var staged int64
		if err := rows.Scan(&k, &staged); err != nil {
			return 0, classify(err, "sqlite: read snapshot %s", path)
		}
		if err := fn(k, staged != 0); err != nil {
			return 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, classify(err, "sqlite: read snapshot %s", path)
	}
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM objects WHERE delete_marker = 0").Scan(&n); err != nil {
		return 0, classify(err, "sqlite: read snapshot %s", path)
	}
	return n, nil
}

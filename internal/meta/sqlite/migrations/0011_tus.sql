-- 0011: tus resumable uploads.
--
-- A tus upload is a multipart upload (uploads row) plus this row: the
-- declared length (-1 while deferred), the tus state as JSON (metadata,
-- partial/final), and the running MD5 and SHA-256 of the bytes received so
-- far (hash_state, valid for the first hash_offset bytes), so that the
-- finished object gets a whole-object ETag and SHA-256 without reading it
-- back. The row goes with its upload (completed, aborted, expired).
--
-- lock_holder/lock_until are the cross-node lock of the upload (a lease
-- renewed by its holder); release_requested asks the holder to let go
-- (another request for the same upload is waiting).
CREATE TABLE tus_uploads (
	upload_id         TEXT    NOT NULL PRIMARY KEY REFERENCES uploads (id) ON DELETE CASCADE,
	length            INTEGER NOT NULL CHECK (length >= -1),
	info              TEXT    NOT NULL,
	hash_offset       INTEGER NOT NULL DEFAULT 0,
	hash_state        BLOB    NOT NULL DEFAULT x'',
	lock_holder       TEXT    NOT NULL DEFAULT '',
	lock_until        INTEGER NOT NULL DEFAULT 0,
	release_requested INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

-- Per-user rate limit overrides set by administrators
-- (PUT /api/v1/admin/users/{id}/limits): requests and body bytes per
-- window_ms; 0 = the server's default for that part. No row: defaults.
CREATE TABLE user_limits (
	user_id   TEXT    NOT NULL PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
	requests  INTEGER NOT NULL CHECK (requests >= 0),
	bytes     INTEGER NOT NULL CHECK (bytes >= 0),
	window_ms INTEGER NOT NULL CHECK (window_ms > 0)
) STRICT, WITHOUT ROWID;

-- Cluster-wide rate limits: requests granted per (dimension, key, fixed
-- window). Each node reserves blocks of tokens (used grows by the block,
-- never past the limit by more than one block) and spends them locally.
-- Rows of past windows are deleted by ReserveRate itself.
CREATE TABLE rate_leases (
	dim          TEXT    NOT NULL,
	key          TEXT    NOT NULL,
	window_start INTEGER NOT NULL,
	used         INTEGER NOT NULL,
	PRIMARY KEY (dim, key, window_start)
) STRICT, WITHOUT ROWID;

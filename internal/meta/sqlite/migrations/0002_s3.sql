-- 0002: S3 — access keys, multipart uploads, multipart objects, additional
-- checksums.
--
-- Same conventions as 0001: times are INTEGER unix nanoseconds UTC (0 for
-- the zero time), keys are TEXT in the BINARY collation, booleans are 0/1.

-- An S3 checksum of the object (x-amz-checksum-*); '' when there is none.
ALTER TABLE objects ADD COLUMN checksum_algorithm TEXT NOT NULL DEFAULT '';
ALTER TABLE objects ADD COLUMN checksum_type      TEXT NOT NULL DEFAULT '';
ALTER TABLE objects ADD COLUMN checksum_value     TEXT NOT NULL DEFAULT '';
-- A multipart object's bytes are the object_parts rows of its parts_id, in
-- idx order; part_count says how many there are, so that reading a
-- single-blob object (parts_id NULL, part_count 0, blob_key set) stays one
-- query. The parts live under an id of their own, not under (bucket, key),
-- so that moving an object rewrites one row whatever its number of parts.
ALTER TABLE objects ADD COLUMN parts_id   INTEGER;
ALTER TABLE objects ADD COLUMN part_count INTEGER NOT NULL DEFAULT 0 CHECK (part_count >= 0);

-- Allocates parts_id values. They are never reused, so a set of parts never
-- changes once written: a reader that read an object row and then its parts
-- outside a transaction either finds exactly part_count parts, which are that
-- row's, or fewer because the object was replaced meanwhile.
CREATE TABLE counters (
	name  TEXT    NOT NULL PRIMARY KEY,
	value INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

INSERT INTO counters (name, value) VALUES ('parts_id', 0);

CREATE TABLE object_parts (
	parts_id INTEGER NOT NULL,
	idx      INTEGER NOT NULL, -- position in the object
	blob_key TEXT    NOT NULL,
	size     INTEGER NOT NULL CHECK (size >= 0),
	etag     TEXT    NOT NULL,
	checksum TEXT    NOT NULL,
	PRIMARY KEY (parts_id, idx)
) STRICT, WITHOUT ROWID;

CREATE INDEX object_parts_blob_key ON object_parts (blob_key);

CREATE TABLE access_keys (
	id         TEXT    NOT NULL PRIMARY KEY,
	user_id    TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	secret_enc BLOB    NOT NULL,
	name       TEXT    NOT NULL,
	internal   INTEGER NOT NULL DEFAULT 0,
	created_at INTEGER NOT NULL,
	last_used  INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

CREATE INDEX access_keys_user_id ON access_keys (user_id, created_at, id);

CREATE TABLE uploads (
	id                 TEXT    NOT NULL PRIMARY KEY,
	bucket             TEXT    NOT NULL REFERENCES buckets (name),
	key                TEXT    NOT NULL COLLATE BINARY,
	initiator_id       TEXT    NOT NULL,
	content_type       TEXT    NOT NULL,
	metadata           TEXT,   -- JSON object of user metadata; NULL when empty
	checksum_algorithm TEXT    NOT NULL,
	checksum_type      TEXT    NOT NULL,
	size               INTEGER NOT NULL CHECK (size >= 0),
	part_size          INTEGER NOT NULL CHECK (part_size >= 0),
	created_at         INTEGER NOT NULL,
	expires_at         INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- ListUploads' order, and DeleteBucket's lookup of a bucket's uploads.
CREATE INDEX uploads_bucket_key ON uploads (bucket, key, created_at, id);
CREATE INDEX uploads_expires_at ON uploads (expires_at, id);

CREATE TABLE upload_parts (
	upload_id TEXT    NOT NULL REFERENCES uploads (id),
	number    INTEGER NOT NULL CHECK (number >= 1),
	size      INTEGER NOT NULL CHECK (size >= 0),
	etag      TEXT    NOT NULL,
	checksum  TEXT    NOT NULL,
	blob_key  TEXT    NOT NULL,
	mod_time  INTEGER NOT NULL,
	PRIMARY KEY (upload_id, number)
) STRICT, WITHOUT ROWID;

CREATE INDEX upload_parts_blob_key ON upload_parts (blob_key);

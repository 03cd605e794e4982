-- 0022: a key's versions in the primary key's order (issue 20, "Must be
-- measured"; meta/versions.go, docs/PERFORMANCE.md).
--
-- The primary key becomes (bucket, key, seq): a key's versions newest
-- first, so its latest version is its first row, one seek, and the
-- partial index objects_latest of 0017 (a second B-tree insert for every
-- version written into a versioned bucket) goes. A version that is not
-- null is found by its seq, which is its version ID; the null version by
-- a scan of its key's versions (one row in a bucket never versioned). At
-- most one null version per key is the store's rule (a write that moves
-- it deletes the old row), not an index's: a bucket never versioned pays
-- for no index it did not have.
--
-- SQLite cannot change a primary key in place, so the table is rebuilt
-- with every column 0017, 0018 and 0019 left it, and its indexes and the
-- bucket statistics' triggers (0017's, the same) are made again.

CREATE TABLE objects_s (
	bucket             TEXT    NOT NULL REFERENCES buckets (name),
	key                TEXT    NOT NULL COLLATE BINARY,
	version_id         TEXT    NOT NULL,
	seq                TEXT    NOT NULL,
	is_latest          INTEGER NOT NULL,
	delete_marker      INTEGER NOT NULL DEFAULT 0,
	size               INTEGER NOT NULL CHECK (size >= 0),
	etag               TEXT    NOT NULL,
	sha256             TEXT    NOT NULL,
	content_type       TEXT    NOT NULL,
	metadata           TEXT,   -- JSON object of user metadata; NULL when empty
	blob_key           TEXT    NOT NULL,
	mod_time           INTEGER NOT NULL,
	checksum_algorithm TEXT    NOT NULL DEFAULT '',
	checksum_type      TEXT    NOT NULL DEFAULT '',
	checksum_value     TEXT    NOT NULL DEFAULT '',
	parts_id           INTEGER,
	part_count         INTEGER NOT NULL DEFAULT 0 CHECK (part_count >= 0),
	inline_id          INTEGER,
	sse                BLOB,
	sse_kek            TEXT    NOT NULL DEFAULT '',
	tags               TEXT,
	lock_mode          TEXT    NOT NULL DEFAULT '' CHECK (lock_mode IN ('', 'GOVERNANCE', 'COMPLIANCE')),
	lock_until         INTEGER NOT NULL DEFAULT 0,
	legal_hold         INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (bucket, key, seq)
) STRICT, WITHOUT ROWID;

INSERT INTO objects_s (bucket, key, version_id, seq, is_latest, delete_marker, size, etag, sha256, content_type, metadata,
		blob_key, mod_time, checksum_algorithm, checksum_type, checksum_value, parts_id, part_count, inline_id, sse, sse_kek,
		tags, lock_mode, lock_until, legal_hold)
	SELECT bucket, key, version_id, seq, is_latest, delete_marker, size, etag, sha256, content_type, metadata,
		blob_key, mod_time, checksum_algorithm, checksum_type, checksum_value, parts_id, part_count, inline_id, sse, sse_kek,
		tags, lock_mode, lock_until, legal_hold
	FROM objects;

DROP TABLE objects;
ALTER TABLE objects_s RENAME TO objects;

CREATE INDEX objects_blob_key ON objects (blob_key);
CREATE INDEX objects_sse_kek ON objects (sse_kek) WHERE sse_kek <> '';
CREATE INDEX objects_deleted ON objects (bucket, key) WHERE is_latest AND delete_marker;

CREATE TRIGGER objects_count_insert AFTER INSERT ON objects BEGIN
	UPDATE buckets SET object_count = object_count + 1 - NEW.delete_marker, byte_count = byte_count + NEW.size WHERE name = NEW.bucket;
END;

CREATE TRIGGER objects_count_delete AFTER DELETE ON objects BEGIN
	UPDATE buckets SET object_count = object_count - 1 + OLD.delete_marker, byte_count = byte_count - OLD.size WHERE name = OLD.bucket;
END;

CREATE TRIGGER objects_count_update AFTER UPDATE OF bucket, size, delete_marker ON objects
	WHEN OLD.bucket IS NOT NEW.bucket OR OLD.size IS NOT NEW.size OR OLD.delete_marker IS NOT NEW.delete_marker BEGIN
	UPDATE buckets SET object_count = object_count - 1 + OLD.delete_marker, byte_count = byte_count - OLD.size WHERE name = OLD.bucket;
	UPDATE buckets SET object_count = object_count + 1 - NEW.delete_marker, byte_count = byte_count + NEW.size WHERE name = NEW.bucket;
END;

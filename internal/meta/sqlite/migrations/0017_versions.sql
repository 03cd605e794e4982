-- 0017: S3 versioning (issue 20; meta/versions.go).
--
-- buckets.versioning: '' (never versioned), 'Enabled' or 'Suspended'.
--
-- Every objects row becomes a version of its key: version_id ('null' for
-- a write into a bucket that is not versioned, else a version ID the
-- store made), seq (its place among the key's versions: ascending is
-- newest first; a non-null version's seq is its version_id), is_latest
-- (the key's current version: one per key) and delete_marker (a version without bytes,
-- size 0). SQLite cannot change a primary key in place, so the table is
-- rebuilt; every existing row becomes its key's null version, latest,
-- with the sequence of a version made at the Unix epoch (older than any
-- version written from now on). The bucket statistics' triggers go with
-- the old table and are made again, leaving delete markers out of the
-- count.

ALTER TABLE buckets ADD COLUMN versioning TEXT NOT NULL DEFAULT '' CHECK (versioning IN ('', 'Enabled', 'Suspended'));

CREATE TABLE objects_v (
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
	PRIMARY KEY (bucket, key, version_id)
) STRICT, WITHOUT ROWID;

INSERT INTO objects_v (bucket, key, version_id, seq, is_latest, delete_marker, size, etag, sha256, content_type, metadata,
		blob_key, mod_time, checksum_algorithm, checksum_type, checksum_value, parts_id, part_count, inline_id, sse, sse_kek)
	SELECT bucket, key, 'null', '7fffffffffffffff0000000000000000', 1, 0, size, etag, sha256, content_type, metadata,
		blob_key, mod_time, checksum_algorithm, checksum_type, checksum_value, parts_id, part_count, inline_id, sse, sse_kek
	FROM objects;

DROP TABLE objects;
ALTER TABLE objects_v RENAME TO objects;

-- The latest version of a key, when it is not the null version (a key's
-- latest is its null version when this finds none): at most one per key.
-- Null versions stay out, so that a bucket never versioned pays for no
-- index it did not have before: its reads and writes are one seek of the
-- primary key (bucket, key, 'null'), as before versions. A key's versions
-- are in primary-key order; ListObjectVersions sorts each key's by seq
-- as it reads them.
CREATE UNIQUE INDEX objects_latest ON objects (bucket, key) WHERE is_latest AND version_id <> 'null';
CREATE INDEX objects_blob_key ON objects (blob_key);
CREATE INDEX objects_sse_kek ON objects (sse_kek) WHERE sse_kek <> '';

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

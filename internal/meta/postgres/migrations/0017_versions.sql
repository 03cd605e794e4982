-- 0017: S3 versioning (issue 20; meta/versions.go). The numbering follows
-- the SQLite backend's.
--
-- buckets.versioning: '' (never versioned), 'Enabled' or 'Suspended'.
--
-- Every objects row becomes a version of its key: version_id ('null' for
-- a write into a bucket that is not versioned, else a version ID the
-- store made), seq (its place among the key's versions: ascending is
-- newest first; a non-null version's seq is its version_id), is_latest
-- (the key's current version: one per key) and delete_marker (a version without bytes,
-- size 0). Every existing row becomes its key's null version, latest,
-- with the sequence of a version made at the Unix epoch (older than any
-- version written from now on). The bucket statistics leave delete
-- markers out of the count.

ALTER TABLE buckets ADD COLUMN versioning text NOT NULL DEFAULT '' CHECK (versioning IN ('', 'Enabled', 'Suspended'));

ALTER TABLE objects ADD COLUMN version_id    text    COLLATE "C" NOT NULL DEFAULT 'null';
ALTER TABLE objects ADD COLUMN seq           text    COLLATE "C" NOT NULL DEFAULT '7fffffffffffffff0000000000000000';
ALTER TABLE objects ADD COLUMN is_latest     boolean NOT NULL DEFAULT true;
ALTER TABLE objects ADD COLUMN delete_marker boolean NOT NULL DEFAULT false;
ALTER TABLE objects ALTER COLUMN version_id DROP DEFAULT, ALTER COLUMN seq DROP DEFAULT, ALTER COLUMN is_latest DROP DEFAULT;

ALTER TABLE objects DROP CONSTRAINT objects_pkey;
ALTER TABLE objects ADD PRIMARY KEY (bucket, key, version_id);

-- The latest version of a key, when it is not the null version (a key's
-- latest is its null version when this finds none): at most one per key.
-- Null versions stay out, so that a bucket never versioned pays for no
-- index it did not have before: its reads and writes are one seek of the
-- primary key (bucket, key, 'null'), as before versions. A key's versions
-- are in primary-key order; ListObjectVersions sorts each key's by seq
-- as it reads them.
CREATE UNIQUE INDEX objects_latest ON objects (bucket, key) WHERE is_latest AND version_id <> 'null';

CREATE OR REPLACE FUNCTION objects_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		UPDATE buckets SET object_count = object_count - CASE WHEN OLD.delete_marker THEN 0 ELSE 1 END,
			byte_count = byte_count - OLD.size WHERE name = OLD.bucket;
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		UPDATE buckets SET object_count = object_count + CASE WHEN NEW.delete_marker THEN 0 ELSE 1 END,
			byte_count = byte_count + NEW.size WHERE name = NEW.bucket;
	END IF;
	RETURN NULL;
END
$$;

DROP TRIGGER objects_count_update ON objects;
CREATE TRIGGER objects_count_update AFTER UPDATE OF bucket, size, delete_marker ON objects FOR EACH ROW
	WHEN (OLD.bucket IS DISTINCT FROM NEW.bucket OR OLD.size IS DISTINCT FROM NEW.size OR OLD.delete_marker IS DISTINCT FROM NEW.delete_marker)
	EXECUTE FUNCTION objects_count();

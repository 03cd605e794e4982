-- 0002: S3 — access keys, multipart uploads, multipart objects, additional
-- checksums.
--
-- Same conventions as 0001: times are bigint unix nanoseconds UTC (0 for
-- the zero time), object and upload keys are bytea, names are text
-- COLLATE "C".

-- An S3 checksum of the object (x-amz-checksum-*); '' when there is none.
ALTER TABLE objects ADD COLUMN checksum_algorithm text NOT NULL DEFAULT '';
ALTER TABLE objects ADD COLUMN checksum_type      text NOT NULL DEFAULT '';
ALTER TABLE objects ADD COLUMN checksum_value     text NOT NULL DEFAULT '';
-- A multipart object's bytes are the object_parts rows of its parts_id, in
-- idx order; part_count says how many there are. The parts live under an id
-- of their own, not under (bucket, key), so that moving an object rewrites
-- one row whatever its number of parts.
ALTER TABLE objects ADD COLUMN parts_id   bigint;
ALTER TABLE objects ADD COLUMN part_count integer NOT NULL DEFAULT 0 CHECK (part_count >= 0);

-- Allocates parts_id values. They are never reused, so a set of parts never
-- changes once written.
CREATE SEQUENCE parts_id_seq AS bigint;

CREATE TABLE object_parts (
	parts_id bigint  NOT NULL,
	idx      integer NOT NULL, -- position in the object
	blob_key text    COLLATE "C" NOT NULL,
	size     bigint  NOT NULL CHECK (size >= 0),
	etag     text    NOT NULL,
	checksum text    NOT NULL,
	PRIMARY KEY (parts_id, idx)
);

CREATE INDEX object_parts_blob_key ON object_parts (blob_key);

CREATE TABLE access_keys (
	id         text    COLLATE "C" NOT NULL PRIMARY KEY,
	user_id    text    COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	secret_enc bytea   NOT NULL,
	name       text    NOT NULL,
	internal   boolean NOT NULL DEFAULT false,
	created_at bigint  NOT NULL,
	last_used  bigint  NOT NULL DEFAULT 0
);

CREATE INDEX access_keys_user_id ON access_keys (user_id, created_at, id);

CREATE TABLE uploads (
	id                 text   COLLATE "C" NOT NULL PRIMARY KEY,
	bucket             text   COLLATE "C" NOT NULL REFERENCES buckets (name),
	key                bytea  NOT NULL,
	initiator_id       text   NOT NULL,
	content_type       text   NOT NULL,
	metadata           text,  -- JSON object of user metadata; NULL when empty
	checksum_algorithm text   NOT NULL,
	checksum_type      text   NOT NULL,
	size               bigint NOT NULL CHECK (size >= 0),
	part_size          bigint NOT NULL CHECK (part_size >= 0),
	created_at         bigint NOT NULL,
	expires_at         bigint NOT NULL
);

-- ListUploads' order, and DeleteBucket's lookup of a bucket's uploads.
CREATE INDEX uploads_bucket_key ON uploads (bucket, key, created_at, id);
CREATE INDEX uploads_expires_at ON uploads (expires_at, id);

CREATE TABLE upload_parts (
	upload_id text    COLLATE "C" NOT NULL REFERENCES uploads (id),
	number    integer NOT NULL CHECK (number >= 1),
	size      bigint  NOT NULL CHECK (size >= 0),
	etag      text    NOT NULL,
	checksum  text    NOT NULL,
	blob_key  text    COLLATE "C" NOT NULL,
	mod_time  bigint  NOT NULL,
	PRIMARY KEY (upload_id, number)
);

CREATE INDEX upload_parts_blob_key ON upload_parts (blob_key);

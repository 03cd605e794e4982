-- 0001: the initial schema. The numbering follows the SQLite backend's.
--
-- Times are bigint unix nanoseconds UTC (0 for the zero time). Object keys
-- are bytea: they hold any bytes (NUL included) and compare as raw bytes
-- (memcmp order), as the meta contract requires. Names and identifiers are
-- text COLLATE "C", so they too sort bytewise whatever the database's
-- default collation.

CREATE TABLE users (
	id            text    COLLATE "C" NOT NULL PRIMARY KEY,
	email         text    COLLATE "C" NOT NULL UNIQUE,
	password_hash text    NOT NULL,
	quota_bytes   bigint  NOT NULL DEFAULT 0 CHECK (quota_bytes >= 0),
	usage_bytes   bigint  NOT NULL DEFAULT 0 CHECK (usage_bytes >= 0),
	disabled      boolean NOT NULL DEFAULT false,
	created_at    bigint  NOT NULL
);

CREATE TABLE refresh_tokens (
	hash       text    COLLATE "C" NOT NULL PRIMARY KEY,
	user_id    text    COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	family     text    COLLATE "C" NOT NULL,
	created_at bigint  NOT NULL,
	expires_at bigint  NOT NULL,
	used       boolean NOT NULL DEFAULT false,
	revoked    boolean NOT NULL DEFAULT false
);

CREATE INDEX refresh_tokens_family ON refresh_tokens (family);
CREATE INDEX refresh_tokens_user_id ON refresh_tokens (user_id);
CREATE INDEX refresh_tokens_expires_at ON refresh_tokens (expires_at);

CREATE TABLE buckets (
	name       text   COLLATE "C" NOT NULL PRIMARY KEY,
	owner_id   text   COLLATE "C" NOT NULL REFERENCES users (id),
	visibility text   NOT NULL CHECK (visibility IN ('private', 'public-read')),
	created_at bigint NOT NULL
);

CREATE INDEX buckets_owner_id ON buckets (owner_id, name);

CREATE TABLE objects (
	bucket       text   COLLATE "C" NOT NULL REFERENCES buckets (name),
	key          bytea  NOT NULL,
	size         bigint NOT NULL CHECK (size >= 0),
	etag         text   NOT NULL,
	sha256       text   NOT NULL,
	content_type text   NOT NULL,
	metadata     text,  -- JSON object of user metadata; NULL when empty
	blob_key     text   COLLATE "C" NOT NULL,
	mod_time     bigint NOT NULL,
	PRIMARY KEY (bucket, key)
);

CREATE INDEX objects_blob_key ON objects (blob_key);

CREATE TABLE garbage (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	blob_key   text   COLLATE "C" NOT NULL,
	created_at bigint NOT NULL
);

CREATE INDEX garbage_created_at ON garbage (created_at, id);
CREATE INDEX garbage_blob_key ON garbage (blob_key);

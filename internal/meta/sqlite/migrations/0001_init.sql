-- 0001: the initial schema.
--
-- Times are INTEGER unix nanoseconds UTC (0 for the zero time). Keys and
-- names are TEXT in the BINARY collation, so they compare as raw bytes
-- (memcmp order), as the meta contract requires. Booleans are 0/1.

CREATE TABLE users (
	id            TEXT    NOT NULL PRIMARY KEY,
	email         TEXT    NOT NULL UNIQUE,
	password_hash TEXT    NOT NULL,
	quota_bytes   INTEGER NOT NULL DEFAULT 0 CHECK (quota_bytes >= 0),
	usage_bytes   INTEGER NOT NULL DEFAULT 0 CHECK (usage_bytes >= 0),
	disabled      INTEGER NOT NULL DEFAULT 0,
	created_at    INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE refresh_tokens (
	hash       TEXT    NOT NULL PRIMARY KEY,
	user_id    TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	family     TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	used       INTEGER NOT NULL DEFAULT 0,
	revoked    INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

CREATE INDEX refresh_tokens_family ON refresh_tokens (family);
CREATE INDEX refresh_tokens_user_id ON refresh_tokens (user_id);
CREATE INDEX refresh_tokens_expires_at ON refresh_tokens (expires_at);

CREATE TABLE buckets (
	name       TEXT    NOT NULL PRIMARY KEY,
	owner_id   TEXT    NOT NULL REFERENCES users (id),
	visibility TEXT    NOT NULL CHECK (visibility IN ('private', 'public-read')),
	created_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX buckets_owner_id ON buckets (owner_id, name);

CREATE TABLE objects (
	bucket       TEXT    NOT NULL REFERENCES buckets (name),
	key          TEXT    NOT NULL COLLATE BINARY,
	size         INTEGER NOT NULL CHECK (size >= 0),
	etag         TEXT    NOT NULL,
	sha256       TEXT    NOT NULL,
	content_type TEXT    NOT NULL,
	metadata     TEXT,   -- JSON object of user metadata; NULL when empty
	blob_key     TEXT    NOT NULL,
	mod_time     INTEGER NOT NULL,
	PRIMARY KEY (bucket, key)
) STRICT, WITHOUT ROWID;

CREATE INDEX objects_blob_key ON objects (blob_key);

CREATE TABLE garbage (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	blob_key   TEXT    NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;

CREATE INDEX garbage_created_at ON garbage (created_at);
CREATE INDEX garbage_blob_key ON garbage (blob_key);

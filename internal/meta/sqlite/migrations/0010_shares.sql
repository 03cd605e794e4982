-- 0010: share links.
--
-- hash: hex SHA-256 of the link's token (the token is shown once, never
-- stored). bucket/object_key: what the link reaches — one object, or,
-- when folder = 1, every key starting with object_key (a prefix, '' for
-- the whole bucket). password: '' or an argon2id PHC string.
-- max_downloads: 0 = unlimited; downloads counts the downloads served, by
-- a conditional UPDATE (downloads < max_downloads), so concurrent
-- downloads can never pass the limit. Shares go with their owner.
CREATE TABLE shares (
	id            TEXT    NOT NULL PRIMARY KEY,
	hash          TEXT    NOT NULL UNIQUE,
	owner_id      TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	bucket        TEXT    NOT NULL,
	object_key    TEXT    NOT NULL,
	folder        INTEGER NOT NULL DEFAULT 0,
	password      TEXT    NOT NULL DEFAULT '',
	note          TEXT    NOT NULL DEFAULT '',
	allow_upload  INTEGER NOT NULL DEFAULT 0,
	max_downloads INTEGER NOT NULL DEFAULT 0 CHECK (max_downloads >= 0),
	downloads     INTEGER NOT NULL DEFAULT 0 CHECK (downloads >= 0),
	created_at    INTEGER NOT NULL,
	expires_at    INTEGER NOT NULL,
	last_access   INTEGER NOT NULL DEFAULT 0,
	revoked       INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

CREATE INDEX shares_owner ON shares (owner_id, created_at);

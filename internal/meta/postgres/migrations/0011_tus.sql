-- 0011: tus resumable uploads (see the SQLite migration of the same number
-- for the meaning of each column).
CREATE TABLE tus_uploads (
	upload_id         text   COLLATE "C" NOT NULL PRIMARY KEY REFERENCES uploads (id) ON DELETE CASCADE,
	length            bigint NOT NULL CHECK (length >= -1),
	info              text   NOT NULL,
	hash_offset       bigint NOT NULL DEFAULT 0,
	hash_state        bytea  NOT NULL DEFAULT '',
	lock_holder       text   NOT NULL DEFAULT '',
	lock_until        bigint NOT NULL DEFAULT 0,
	release_requested bigint NOT NULL DEFAULT 0
);

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

-- Per-user rate limit overrides (see the SQLite migration).
CREATE TABLE user_limits (
	user_id   text   COLLATE "C" NOT NULL PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
	requests  bigint NOT NULL CHECK (requests >= 0),
	bytes     bigint NOT NULL CHECK (bytes >= 0),
	window_ms bigint NOT NULL CHECK (window_ms > 0)
);

-- Cluster-wide rate limits (see the SQLite migration).
CREATE TABLE rate_leases (
	dim          text   COLLATE "C" NOT NULL,
	key          text   COLLATE "C" NOT NULL,
	window_start bigint NOT NULL,
	used         bigint NOT NULL,
	PRIMARY KEY (dim, key, window_start)
);

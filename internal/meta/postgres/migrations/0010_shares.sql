-- 0010: share links.
--
-- hash: hex SHA-256 of the link's token (the token is shown once, never
-- stored). bucket/object_key: what the link reaches — one object, or,
-- when folder, every key starting with object_key (a prefix, '' for the
-- whole bucket). password: '' or an argon2id PHC string.
-- max_downloads: 0 = unlimited; downloads counts the downloads served, by
-- a conditional UPDATE (downloads < max_downloads), so concurrent
-- downloads can never pass the limit. Shares go with their owner.
CREATE TABLE shares (
	id            text    COLLATE "C" NOT NULL PRIMARY KEY,
	hash          text    COLLATE "C" NOT NULL UNIQUE,
	owner_id      text    COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	bucket        text    COLLATE "C" NOT NULL,
	object_key    text    COLLATE "C" NOT NULL,
	folder        boolean NOT NULL DEFAULT false,
	password      text    NOT NULL DEFAULT '',
	note          text    NOT NULL DEFAULT '',
	allow_upload  boolean NOT NULL DEFAULT false,
	max_downloads bigint  NOT NULL DEFAULT 0 CHECK (max_downloads >= 0),
	downloads     bigint  NOT NULL DEFAULT 0 CHECK (downloads >= 0),
	created_at    bigint  NOT NULL,
	expires_at    bigint  NOT NULL,
	last_access   bigint  NOT NULL DEFAULT 0,
	revoked       boolean NOT NULL DEFAULT false
);

CREATE INDEX shares_owner ON shares (owner_id, created_at);

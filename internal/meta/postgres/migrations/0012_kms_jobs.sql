-- 0012: background jobs of encryption at rest (see the SQLite migration
-- of the same number for the meaning of each column).
CREATE TABLE kms_jobs (
	name         text   COLLATE "C" NOT NULL PRIMARY KEY,
	kind         text   NOT NULL CHECK (kind IN ('rewrap', 'encrypt')),
	bucket       text   COLLATE "C" NOT NULL DEFAULT '',
	state        text   NOT NULL CHECK (state IN ('running', 'done')),
	generation   bigint NOT NULL DEFAULT 1,
	phase        bigint NOT NULL DEFAULT 0,
	cursor       text   NOT NULL DEFAULT '',
	pass         bigint NOT NULL DEFAULT 1,
	pass_changed bigint NOT NULL DEFAULT 0,
	done         bigint NOT NULL DEFAULT 0,
	skipped      bigint NOT NULL DEFAULT 0,
	failed       bigint NOT NULL DEFAULT 0,
	last_error   text   NOT NULL DEFAULT '',
	lease_owner  text   NOT NULL DEFAULT '',
	lease_until  bigint NOT NULL DEFAULT 0,
	created_at   bigint NOT NULL,
	updated_at   bigint NOT NULL,
	finished_at  bigint NOT NULL DEFAULT 0
);

CREATE INDEX upload_parts_sse_kek ON upload_parts (sse_kek) WHERE sse_kek <> '';

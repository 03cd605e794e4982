-- 0012: background jobs of encryption at rest (docs/encryption.md,
-- meta.KMSJob): the re-wrap of data keys after a key rotation ('rewrap')
-- and the encryption of plaintext objects ('encrypt:' || bucket;
-- 'encrypt:' = every bucket).
--
-- One node at a time works on a job: lease_owner holds it until
-- lease_until (Unix ms), renewed with every page; generation is bumped by
-- each (re)start so a worker of an older generation cannot save. phase is
-- the table the cursor is in (0 objects, 1 object_parts, 2 upload_parts),
-- cursor the last row done there (a JSON meta.EnvelopeRef; '' = from the
-- start): a job resumes there after a crash, on any node.
CREATE TABLE kms_jobs (
	name         TEXT    NOT NULL PRIMARY KEY,
	kind         TEXT    NOT NULL CHECK (kind IN ('rewrap', 'encrypt')),
	bucket       TEXT    NOT NULL DEFAULT '',
	state        TEXT    NOT NULL CHECK (state IN ('running', 'done')),
	generation   INTEGER NOT NULL DEFAULT 1,
	phase        INTEGER NOT NULL DEFAULT 0,
	cursor       TEXT    NOT NULL DEFAULT '',
	pass         INTEGER NOT NULL DEFAULT 1,
	pass_changed INTEGER NOT NULL DEFAULT 0,
	done         INTEGER NOT NULL DEFAULT 0,
	skipped      INTEGER NOT NULL DEFAULT 0,
	failed       INTEGER NOT NULL DEFAULT 0,
	last_error   TEXT    NOT NULL DEFAULT '',
	lease_owner  TEXT    NOT NULL DEFAULT '',
	lease_until  INTEGER NOT NULL DEFAULT 0,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	finished_at  INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

CREATE INDEX upload_parts_sse_kek ON upload_parts (sse_kek) WHERE sse_kek <> '';

-- 0005: uploads in flight, visible to every node.
--
-- A staging row is a blob being written (recorded before its first byte,
-- with a lease its writer renews), or the declared size of a direct-upload
-- session (blob_key 'upload:' || upload_id, declared, for the session's
-- lifetime). While live (expires_at in the future) it reserves bytes of
-- its owner's quota and keeps its blob from orphan collection. Committing
-- the blob deletes the row in the same transaction that counts the bytes
-- as used. An object upload that replaces an object is credited that
-- object's size (credit), once per key among live rows: it counts
-- bytes - credit, at least 0.
CREATE TABLE staging (
	blob_key   text    COLLATE "C" NOT NULL PRIMARY KEY,
	owner_id   text    COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	upload_id  text    COLLATE "C" NOT NULL DEFAULT '', -- the upload of a part or declared size; '' for an object
	declared   boolean NOT NULL DEFAULT false,
	bucket     text    COLLATE "C" NOT NULL DEFAULT '', -- the object replaced, if any
	key        bytea   NOT NULL DEFAULT '\x'::bytea,
	bytes      bigint  NOT NULL CHECK (bytes >= 0),
	credit     bigint  NOT NULL DEFAULT 0 CHECK (credit >= 0),
	expires_at bigint  NOT NULL
);

-- An owner's reservations (quota checks), an upload's group, expiry.
CREATE INDEX staging_owner ON staging (owner_id, upload_id, expires_at);
CREATE INDEX staging_upload ON staging (upload_id);
CREATE INDEX staging_expires_at ON staging (expires_at);

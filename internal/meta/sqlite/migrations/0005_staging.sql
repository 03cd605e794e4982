-- 0005: uploads in flight, visible to every process of the store.
--
-- A staging row is a blob being written (recorded before its first byte,
-- with a lease its writer renews), or the declared size of a direct-upload
-- session (blob_key 'upload:' || upload_id, declared = 1, for the
-- session's lifetime). While live (expires_at in the future) it reserves
-- bytes of its owner's quota and keeps its blob from orphan collection.
-- Committing the blob deletes the row in the same transaction that counts
-- the bytes as used. An object upload that replaces an object is credited
-- that object's size (credit), once per key among live rows: it counts
-- bytes - credit, at least 0.
CREATE TABLE staging (
	blob_key   TEXT    NOT NULL PRIMARY KEY,
	owner_id   TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	upload_id  TEXT    NOT NULL DEFAULT '', -- the upload of a part or declared size; '' for an object
	declared   INTEGER NOT NULL DEFAULT 0,
	bucket     TEXT    NOT NULL DEFAULT '', -- the object replaced, if any
	key        TEXT    NOT NULL DEFAULT '' COLLATE BINARY,
	bytes      INTEGER NOT NULL CHECK (bytes >= 0),
	credit     INTEGER NOT NULL DEFAULT 0 CHECK (credit >= 0),
	expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- An owner's reservations (quota checks), an upload's group, expiry.
CREATE INDEX staging_owner ON staging (owner_id, upload_id, expires_at);
CREATE INDEX staging_upload ON staging (upload_id);
CREATE INDEX staging_expires_at ON staging (expires_at);

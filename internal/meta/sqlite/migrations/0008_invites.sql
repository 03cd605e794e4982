-- 0008: invites (signup policy "invite").
--
-- hash: hex SHA-256 of the code (the code itself is shown once, never
-- stored). email: '' or the only (normalised) email that may redeem it.
-- uses_left goes down by one per signup, in the signup's transaction, by a
-- conditional UPDATE (uses_left > 0, not revoked, not expired, email
-- matching), so two signups can never take the same last use.
-- created_by: the administrator's user ID, '' for the CLI; no foreign key,
-- so deleting that administrator keeps the invites they made.
CREATE TABLE invites (
	id         TEXT    NOT NULL PRIMARY KEY,
	hash       TEXT    NOT NULL UNIQUE,
	email      TEXT    NOT NULL DEFAULT '',
	uses       INTEGER NOT NULL CHECK (uses >= 1),
	uses_left  INTEGER NOT NULL CHECK (uses_left >= 0 AND uses_left <= uses),
	created_by TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	revoked    INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

CREATE INDEX invites_created_at ON invites (created_at);

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
	id         text    COLLATE "C" NOT NULL PRIMARY KEY,
	hash       text    COLLATE "C" NOT NULL UNIQUE,
	email      text    COLLATE "C" NOT NULL DEFAULT '',
	uses       integer NOT NULL CHECK (uses >= 1),
	uses_left  integer NOT NULL CHECK (uses_left >= 0 AND uses_left <= uses),
	created_by text    COLLATE "C" NOT NULL DEFAULT '',
	created_at bigint  NOT NULL,
	expires_at bigint  NOT NULL,
	revoked    boolean NOT NULL DEFAULT false
);

CREATE INDEX invites_created_at ON invites (created_at);

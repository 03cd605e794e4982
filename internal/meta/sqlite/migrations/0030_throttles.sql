-- The login and signup throttles of package auth, shared by every
-- process of a store (meta.Limits' UpdateThrottles; with SQLite the
-- server keeps them in memory, and the table serves the conformance
-- suite): one row per throttle key, its fixed window's start and count, a
-- back-off's delay and end, and when the row may be forgotten (all Unix
-- ms). Expired rows are swept by UpdateThrottles itself, a few at a time.
CREATE TABLE throttles (
	key          TEXT    NOT NULL PRIMARY KEY,
	window_start INTEGER NOT NULL,
	count        INTEGER NOT NULL,
	delay_ms     INTEGER NOT NULL,
	until_ms     INTEGER NOT NULL,
	expires_ms   INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX throttles_expires ON throttles (expires_ms);

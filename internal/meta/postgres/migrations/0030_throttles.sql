-- The login and signup throttles of package auth, shared by every node
-- (meta.Limits' UpdateThrottles): one row per throttle key, its fixed
-- window's start and count, a back-off's delay and end, and when the row
-- may be forgotten (all Unix ms). Expired rows are swept by
-- UpdateThrottles itself, a few at a time.
CREATE TABLE throttles (
	key          text   COLLATE "C" NOT NULL PRIMARY KEY,
	window_start bigint NOT NULL,
	count        bigint NOT NULL,
	delay_ms     bigint NOT NULL,
	until_ms     bigint NOT NULL,
	expires_ms   bigint NOT NULL
);
CREATE INDEX throttles_expires ON throttles (expires_ms);

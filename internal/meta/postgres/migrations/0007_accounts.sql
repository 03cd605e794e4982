-- 0007: administrators and session cut-off.
--
-- admin: the account may use the admin API and admin commands.
-- sessions_after: unix nanoseconds; access tokens issued before it are
-- refused (0: none refused). Disable, password change and admin resets
-- move it forward so existing sessions end at once.
ALTER TABLE users ADD COLUMN admin boolean NOT NULL DEFAULT false;
ALTER TABLE users ADD COLUMN sessions_after bigint NOT NULL DEFAULT 0;

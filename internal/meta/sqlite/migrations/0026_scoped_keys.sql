-- 0026: scoped keys and app tokens (issue 21).
--
-- An access key may carry a scope (meta.KeyScope as JSON: a bucket, a
-- prefix and an access, or an inline policy; '' when unscoped) and an
-- expiry (Unix nanoseconds; 0: never). A row with token = 1 is a file-API
-- app token: secret_enc holds the SHA-256 of its secret, not a sealed S3
-- secret.

ALTER TABLE access_keys ADD COLUMN scope TEXT NOT NULL DEFAULT '';
ALTER TABLE access_keys ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE access_keys ADD COLUMN token INTEGER NOT NULL DEFAULT 0;

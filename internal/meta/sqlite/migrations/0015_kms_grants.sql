-- 0015: the SSE-KMS key allow list (issue 18). A user may name a key
-- other than the key provider's default in SSE-KMS requests and bucket
-- defaults only with a row here, made by an administrator (coffer kms
-- allow, POST /api/v1/admin/kms/grants). The grant goes with its user.
CREATE TABLE kms_key_grants (
	key_name   TEXT    NOT NULL,
	user_id    TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (key_name, user_id)
) STRICT, WITHOUT ROWID;

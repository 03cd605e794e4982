-- 0015: the SSE-KMS key allow list (see the SQLite migration).
CREATE TABLE kms_key_grants (
	key_name   text   COLLATE "C" NOT NULL,
	user_id    text   COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	created_at bigint NOT NULL,
	PRIMARY KEY (key_name, user_id)
);

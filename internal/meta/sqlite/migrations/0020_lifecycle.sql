-- 0020: S3 lifecycle (issue 20; meta/lifecycle.go, docs/lifecycle.md).
--
-- buckets.lifecycle is a bucket's configuration as JSON (meta.Lifecycle),
-- NULL when it has none. lifecycle_runs holds the worker's one run: its
-- lease (one node at a time; lease_until in Unix ms) and the cursor it
-- resumes from after a crash ('' = no run in progress).

ALTER TABLE buckets ADD COLUMN lifecycle TEXT;

CREATE TABLE lifecycle_runs (
	name        TEXT    NOT NULL PRIMARY KEY,
	cursor      TEXT    NOT NULL DEFAULT '',
	started_at  INTEGER NOT NULL DEFAULT 0,
	finished_at INTEGER NOT NULL DEFAULT 0,
	lease_owner TEXT    NOT NULL DEFAULT '',
	lease_until INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

-- 0020: S3 lifecycle (issue 20; meta/lifecycle.go, docs/lifecycle.md).
-- The numbering follows the SQLite backend's.
--
-- buckets.lifecycle is a bucket's configuration as JSON (meta.Lifecycle),
-- NULL when it has none (a nullable column without a default rewrites no
-- table). lifecycle_runs holds the worker's one run: its lease (one node
-- at a time; lease_until in Unix ms) and the cursor it resumes from after
-- a crash ('' = no run in progress).

ALTER TABLE buckets ADD COLUMN lifecycle text;

CREATE TABLE lifecycle_runs (
	name        text   COLLATE "C" NOT NULL PRIMARY KEY,
	cursor      text   NOT NULL DEFAULT '',
	started_at  bigint NOT NULL DEFAULT 0,
	finished_at bigint NOT NULL DEFAULT 0,
	lease_owner text   NOT NULL DEFAULT '',
	lease_until bigint NOT NULL DEFAULT 0
);

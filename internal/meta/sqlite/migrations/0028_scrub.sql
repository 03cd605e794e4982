-- 0028: the scrub (issue 22; meta/scrub.go, object/scrub.go, coffer fsck).
--
-- scrub_runs holds the scrub's one run: its lease (one node at a time;
-- lease_until in Unix ms), the cursor it resumes from after a crash (''
-- = no run in progress), the current run's counts and the last finished
-- run's summary (the scrub's JSON). scrub_findings holds the blobs found
-- missing, damaged or unreadable (by the scrub or by a read), one row per
-- blob; key is the object key as bytes (keys need not be UTF-8).

CREATE TABLE scrub_runs (
	name        TEXT    NOT NULL PRIMARY KEY,
	cursor      TEXT    NOT NULL DEFAULT '',
	started_at  INTEGER NOT NULL DEFAULT 0,
	finished_at INTEGER NOT NULL DEFAULT 0,
	progress    TEXT    NOT NULL DEFAULT '',
	last        TEXT    NOT NULL DEFAULT '',
	lease_owner TEXT    NOT NULL DEFAULT '',
	lease_until INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

CREATE TABLE scrub_findings (
	blob_key   TEXT    NOT NULL PRIMARY KEY,
	bucket     TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	version_id TEXT    NOT NULL,
	problem    TEXT    NOT NULL,
	detail     TEXT    NOT NULL,
	found_at   INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

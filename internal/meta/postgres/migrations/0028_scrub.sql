-- 0028: the scrub (issue 22; meta/scrub.go, object/scrub.go, coffer fsck).
-- The numbering follows the SQLite backend's.
--
-- scrub_runs holds the scrub's one run: its lease (one node at a time;
-- lease_until in Unix ms), the cursor it resumes from after a crash (''
-- = no run in progress), the current run's counts and the last finished
-- run's summary (the scrub's JSON). scrub_findings holds the blobs found
-- missing, damaged or unreadable (by the scrub or by a read), one row per
-- blob; key is the object key as bytes (keys need not be UTF-8).

CREATE TABLE scrub_runs (
	name        text   COLLATE "C" NOT NULL PRIMARY KEY,
	cursor      text   NOT NULL DEFAULT '',
	started_at  bigint NOT NULL DEFAULT 0,
	finished_at bigint NOT NULL DEFAULT 0,
	progress    text   NOT NULL DEFAULT '',
	last        text   NOT NULL DEFAULT '',
	lease_owner text   NOT NULL DEFAULT '',
	lease_until bigint NOT NULL DEFAULT 0
);

CREATE TABLE scrub_findings (
	blob_key   text   COLLATE "C" NOT NULL PRIMARY KEY,
	bucket     text   NOT NULL,
	key        bytea  NOT NULL,
	version_id text   NOT NULL,
	problem    text   NOT NULL,
	detail     text   NOT NULL,
	found_at   bigint NOT NULL
);

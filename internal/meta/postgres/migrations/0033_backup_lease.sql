-- 0033: coffer backup (issue 24; meta/reclamation.go, internal/backup).
-- The numbering follows the SQLite backend's.
--
-- backup_leases holds the leases of backups in progress: while one is
-- live (until_ns, Unix ns, after the claimer's now), ClaimGarbage claims no
-- blob with a garbage entry queued at or after its since_ns: the
-- blobs its metadata snapshot points at stay until it has copied them. A
-- backup renews its lease while it copies; a killed one's lapses.
-- backup_runs holds when the last backup finished (name 'backup'), for
-- coffer_backup_last_success_timestamp_seconds. (coffer backup itself
-- refuses the scale-out shape; the lease is kept by both backends so that
-- the janitor's contract is one.)

CREATE TABLE backup_leases (
	id       text   COLLATE "C" NOT NULL PRIMARY KEY,
	since_ns bigint NOT NULL,
	until_ns bigint NOT NULL
);

CREATE TABLE backup_runs (
	name        text   COLLATE "C" NOT NULL PRIMARY KEY,
	finished_at bigint NOT NULL
);

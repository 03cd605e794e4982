-- 0019: S3 object lock (issue 20; meta/lock.go). The numbering follows
-- the SQLite backend's.
--
-- buckets.object_lock: the bucket was created with object lock (never
-- cleared); lock_mode ('' none, 'GOVERNANCE', 'COMPLIANCE') with
-- lock_days or lock_years (one of them positive): its default retention.
--
-- objects.lock_mode and lock_until (unix nanoseconds; 0 with no mode):
-- the version's retention; legal_hold: its legal hold. The same columns
-- of uploads: the lock a multipart upload's object gets on completion. Columns with
-- constant defaults rewrite no table.

ALTER TABLE buckets ADD COLUMN object_lock boolean NOT NULL DEFAULT false;
ALTER TABLE buckets ADD COLUMN lock_mode text NOT NULL DEFAULT '' CHECK (lock_mode IN ('', 'GOVERNANCE', 'COMPLIANCE'));
ALTER TABLE buckets ADD COLUMN lock_days integer NOT NULL DEFAULT 0;
ALTER TABLE buckets ADD COLUMN lock_years integer NOT NULL DEFAULT 0;

ALTER TABLE objects ADD COLUMN lock_mode text NOT NULL DEFAULT '' CHECK (lock_mode IN ('', 'GOVERNANCE', 'COMPLIANCE'));
ALTER TABLE objects ADD COLUMN lock_until bigint NOT NULL DEFAULT 0;
ALTER TABLE objects ADD COLUMN legal_hold boolean NOT NULL DEFAULT false;

ALTER TABLE uploads ADD COLUMN lock_mode text NOT NULL DEFAULT '' CHECK (lock_mode IN ('', 'GOVERNANCE', 'COMPLIANCE'));
ALTER TABLE uploads ADD COLUMN lock_until bigint NOT NULL DEFAULT 0;
ALTER TABLE uploads ADD COLUMN legal_hold boolean NOT NULL DEFAULT false;

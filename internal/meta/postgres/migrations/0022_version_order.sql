-- 0022: a key's versions in the primary key's order (issue 20, "Must be
-- measured"; meta/versions.go, docs/PERFORMANCE.md). The numbering
-- follows the SQLite backend's.
--
-- The primary key becomes (bucket, key, seq): a key's versions newest
-- first, so its latest version is its first row, one seek, and the
-- partial index objects_latest of 0017 (a second B-tree insert for every
-- version written into a versioned bucket) goes. A version that is not
-- null is found by its seq, which is its version ID; the null version by
-- a scan of its key's versions (one row in a bucket never versioned). At
-- most one null version per key is the store's rule, not an index's.

DROP INDEX objects_latest;
ALTER TABLE objects DROP CONSTRAINT objects_pkey;
ALTER TABLE objects ADD PRIMARY KEY (bucket, key, seq);

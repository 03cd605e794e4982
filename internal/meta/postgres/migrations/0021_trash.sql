-- 0021: the deleted files (issue 20, the file API's trash; meta.ListOptions.DeleteMarkers).
--
-- The keys whose latest version is a delete marker, by bucket and key: a
-- page of them reads only them (metasql.DeletedScans names the index's
-- condition), not every latest row of the bucket. Only marker rows are
-- in it, so a bucket never versioned pays nothing but the check of each
-- written row's two flags.

CREATE INDEX objects_deleted ON objects (bucket, key) WHERE is_latest AND delete_marker;

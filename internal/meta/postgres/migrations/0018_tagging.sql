-- 0018: S3 tagging (issue 20; meta/tags.go). The numbering follows the
-- SQLite backend's.
--
-- A tag set is a JSON array of {"Key","Value"} in a column of the row it
-- belongs to, NULL when there is none: objects.tags (a version's: read
-- with the row by GetObject, so a GET needs no second read, and costing
-- a NULL to a row without tags; listings do not read it), uploads.tags
-- (the tags a multipart upload's object gets on completion) and
-- buckets.tags (read only by GetBucketTags). Adding a nullable column
-- without a default rewrites no table.

ALTER TABLE objects ADD COLUMN tags text;
ALTER TABLE uploads ADD COLUMN tags text;
ALTER TABLE buckets ADD COLUMN tags text;

-- 0018: S3 tagging (issue 20; meta/tags.go).
--
-- A tag set is a JSON array of {"Key","Value"} in a column of the row it
-- belongs to, NULL when there is none: objects.tags (a version's: read
-- with the row by GetObject, so a GET needs no second read, and costing
-- a NULL to a row without tags; listings do not read it), uploads.tags
-- (the tags a multipart upload's object gets on completion) and
-- buckets.tags (read only by GetBucketTags).

ALTER TABLE objects ADD COLUMN tags TEXT;
ALTER TABLE uploads ADD COLUMN tags TEXT;
ALTER TABLE buckets ADD COLUMN tags TEXT;

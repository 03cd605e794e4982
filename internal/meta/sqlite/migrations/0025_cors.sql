-- 0025: S3 CORS (issue 21; meta/cors.go, docs/cors.md).
--
-- buckets.cors is a bucket's CORS configuration as JSON (meta.CORS),
-- NULL when it has none (a nullable column without a default rewrites no
-- table). It is read with the bucket record (the S3 API answers a
-- request carrying Origin from the cached record).

ALTER TABLE buckets ADD COLUMN cors TEXT;

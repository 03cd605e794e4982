-- 0023: S3 bucket policies (issue 21; meta/policy.go, docs/policies.md).
-- The numbering follows the SQLite backend's.
--
-- buckets.policy is a bucket's policy document as its owner wrote it
-- (JSON, validated by package policy before it is stored), NULL when it
-- has none (a nullable column without a default rewrites no table).

ALTER TABLE buckets ADD COLUMN policy text;

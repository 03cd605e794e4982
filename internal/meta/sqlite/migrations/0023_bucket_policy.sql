-- 0023: S3 bucket policies (issue 21; meta/policy.go, docs/policies.md).
--
-- buckets.policy is a bucket's policy document as its owner wrote it
-- (JSON, validated by package policy before it is stored), NULL when it
-- has none.

ALTER TABLE buckets ADD COLUMN policy TEXT;

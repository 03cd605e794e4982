-- 0027: S3 Block Public Access per bucket (issue 21; meta/policy.go,
-- docs/policies.md).
--
-- buckets.public_access_block packs the four settings
-- (meta.PublicAccessBlock.Bits: 1 BlockPublicAcls, 2 IgnorePublicAcls,
-- 4 BlockPublicPolicy, 8 RestrictPublicBuckets, 16 configured); 0 when the
-- bucket has no configuration.

ALTER TABLE buckets ADD COLUMN public_access_block INTEGER NOT NULL DEFAULT 0;

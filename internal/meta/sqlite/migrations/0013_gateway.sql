-- 0013: gateway buckets (issue 14; docs/gateway.md).
--
-- gateway: '' for a native bucket; for a gateway bucket, the URL of the
-- existing S3 bucket it fronts (s3://BUCKET[/PREFIX]?endpoint=…&mode=…,
-- never a secret: credentials come from the AWS chain or a file the URL
-- names). A gateway bucket has no object rows: its objects are the
-- backend's.
ALTER TABLE buckets ADD COLUMN gateway TEXT NOT NULL DEFAULT '';
CREATE INDEX buckets_gateway ON buckets (name) WHERE gateway <> '';

-- 0009: encryption at rest (issue 11; docs/encryption.md).
--
-- sse: the object's / part's crypt.Envelope (Marshal form), NULL for
-- plaintext bytes (every row written before encryption was turned on).
-- The envelope holds only wrapped keys; the bytes it describes (blob, or
-- inline data) are ciphertext. sse_kek: the KEK the data key is wrapped
-- under (kms.KeyRef.String()), '' for plaintext and customer keys: what
-- the re-wrap after a rotation scans for.
ALTER TABLE objects      ADD COLUMN sse     BLOB;
ALTER TABLE objects      ADD COLUMN sse_kek TEXT NOT NULL DEFAULT '';
ALTER TABLE object_parts ADD COLUMN sse     BLOB;
ALTER TABLE object_parts ADD COLUMN sse_kek TEXT NOT NULL DEFAULT '';
ALTER TABLE upload_parts ADD COLUMN sse     BLOB;
ALTER TABLE upload_parts ADD COLUMN sse_kek TEXT NOT NULL DEFAULT '';

-- An upload's encryption, chosen at CreateUpload, which every part must
-- match: sse_mode a crypt.Mode (0 = none), sse_kms_key the key a client
-- named (SSE-KMS), sse_c_check a customer-mode envelope (SSE-C: its salted
-- key check, never the key).
ALTER TABLE uploads ADD COLUMN sse_mode    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE uploads ADD COLUMN sse_kms_key TEXT NOT NULL DEFAULT '';
ALTER TABLE uploads ADD COLUMN sse_c_check BLOB;

-- A bucket's default encryption: '' (the server's --encryption), 'AES256'
-- or 'aws:kms' (with sse_kms_key, '' = the default KEK).
ALTER TABLE buckets ADD COLUMN sse_default TEXT NOT NULL DEFAULT '';
ALTER TABLE buckets ADD COLUMN sse_kms_key TEXT NOT NULL DEFAULT '';

CREATE INDEX objects_sse_kek      ON objects      (sse_kek) WHERE sse_kek <> '';
CREATE INDEX object_parts_sse_kek ON object_parts (sse_kek) WHERE sse_kek <> '';

-- 0029: the CRC-32C of a plaintext single-blob object's bytes (4 bytes,
-- big-endian), recorded by its write: what a verified read
-- (--verify-reads, object/verify.go) checks while the object streams, at
-- hardware speed. NULL for rows written before (their reads check the
-- SHA-256, as before), encrypted objects (the AEAD authenticates every
-- segment) and multipart objects. The scrub checks it beside the SHA-256.
ALTER TABLE objects ADD COLUMN crc32c BLOB;

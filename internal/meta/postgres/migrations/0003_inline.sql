-- 0003: small objects stored inline.
--
-- An object with neither a blob_key nor parts keeps its bytes in
-- inline_data (NULL for every other object), in its own row: reading it
-- stays one query, and moving it rewrites no bytes (PostgreSQL keeps an
-- unchanged TOASTed value by reference). The bytes commit in the same
-- transaction as the row.
ALTER TABLE objects ADD COLUMN inline_data bytea;

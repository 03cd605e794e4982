-- 0003: small objects stored inline.
--
-- An object with neither a blob_key nor parts keeps its bytes in
-- inline_data (a rowid table: rows of up to tens of KiB belong in one, not
-- in the WITHOUT ROWID objects table). The bytes commit in the same
-- transaction as the object row: no file create, no file fsync, one WAL
-- fsync shared by the whole commit batch.
CREATE TABLE inline_data (
	id   INTEGER PRIMARY KEY,
	data BLOB    NOT NULL
) STRICT;

ALTER TABLE objects ADD COLUMN inline_id INTEGER;

-- 0004: direct uploads assembled by the blob backend.
--
-- A direct upload may send its parts straight to the blob backend's own
-- multipart upload (backend_upload_id), which assembles them into the blob
-- blob_key. The key counts as referenced while the upload exists, so orphan
-- collection never takes a blob the backend has just assembled and whose
-- object is about to commit. '' for ordinary uploads.
ALTER TABLE uploads ADD COLUMN blob_key          text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE uploads ADD COLUMN backend_upload_id text NOT NULL DEFAULT '';

-- Not partial (WHERE blob_key <> ''): the "still referenced?" checks bind
-- the key as a parameter, and a generic plan could not use a partial index.
CREATE INDEX uploads_blob_key ON uploads (blob_key);

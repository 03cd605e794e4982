-- objects_blob_key indexes only the rows that name a blob. An inline
-- object, a multipart object (its blobs are in object_parts) and a delete
-- marker have blob_key '', and each of them cost an entry in this index:
-- one more B-tree insert (and a dirtied page) on every small PUT, for
-- entries no query looks up. The one query on it,
-- metasql.Referenced, says blob_key <> '' so that the planner can use
-- the partial index (issue 23, third pass).
DROP INDEX objects_blob_key;
CREATE INDEX objects_blob_key ON objects (blob_key) WHERE blob_key <> '';

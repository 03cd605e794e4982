-- 0024: S3 ACLs and object ownership (issue 21; meta/acl.go,
-- docs/acl.md). The numbering follows the SQLite backend's.
--
-- buckets.acl is a bucket's grants as JSON (meta.Grant), NULL for the
-- default (private: the owner's FULL_CONTROL); buckets.object_ownership
-- its ownership setting ('' = none set: ObjectWriter). Both are read with
-- the bucket's record. objects.acl is a version's owner and grants as
-- JSON ({"o": owner, "g": grants}), NULL for a version the bucket's owner
-- wrote without grants of its own (every row before this migration), read
-- with the row by GetObject. uploads.acl holds the grants the completed
-- object gets (its owner is the upload's initiator). A nullable column,
-- or one with a constant default, rewrites no table.

ALTER TABLE buckets ADD COLUMN acl text;
ALTER TABLE buckets ADD COLUMN object_ownership text NOT NULL DEFAULT '';
ALTER TABLE objects ADD COLUMN acl text;
ALTER TABLE uploads ADD COLUMN acl text;

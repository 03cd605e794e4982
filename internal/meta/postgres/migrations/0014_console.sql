-- 0014: for the web console (issue 17).
--
-- shares.is_grant: a download grant, a link a client made for its own
-- short-lived use (the console's downloads and previews): left out of the
-- owner's list by default, deleted once spent.
ALTER TABLE shares ADD COLUMN is_grant boolean NOT NULL DEFAULT false;

-- buckets.object_count / byte_count: how many objects a bucket holds and
-- their total size, kept by the triggers below in the transaction of
-- every write to objects (INSERT … ON CONFLICT DO UPDATE fires the UPDATE
-- trigger for a row it updates). The bucket's row is locked until the
-- writing transaction ends; writes to objects already lock the owner's
-- row (usage), so this adds no new point where writers wait. Gateway
-- buckets have no object rows and stay at 0.
ALTER TABLE buckets ADD COLUMN object_count bigint NOT NULL DEFAULT 0;
ALTER TABLE buckets ADD COLUMN byte_count   bigint NOT NULL DEFAULT 0;

UPDATE buckets b SET object_count = s.n, byte_count = s.bytes
	FROM (SELECT bucket, count(*) AS n, COALESCE(SUM(size), 0) AS bytes FROM objects GROUP BY bucket) s
	WHERE s.bucket = b.name;

CREATE FUNCTION objects_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		UPDATE buckets SET object_count = object_count - 1, byte_count = byte_count - OLD.size WHERE name = OLD.bucket;
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		UPDATE buckets SET object_count = object_count + 1, byte_count = byte_count + NEW.size WHERE name = NEW.bucket;
	END IF;
	RETURN NULL;
END
$$;

CREATE TRIGGER objects_count_insert AFTER INSERT ON objects FOR EACH ROW EXECUTE FUNCTION objects_count();
CREATE TRIGGER objects_count_delete AFTER DELETE ON objects FOR EACH ROW EXECUTE FUNCTION objects_count();
CREATE TRIGGER objects_count_update AFTER UPDATE OF bucket, size ON objects FOR EACH ROW
	WHEN (OLD.bucket IS DISTINCT FROM NEW.bucket OR OLD.size IS DISTINCT FROM NEW.size) EXECUTE FUNCTION objects_count();

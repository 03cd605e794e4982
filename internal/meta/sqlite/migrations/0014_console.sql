-- 0014: for the web console (issue 17).
--
-- shares.is_grant: a download grant, a link a client made for its own
-- short-lived use (the console's downloads and previews): left out of the
-- owner's list by default, deleted once spent.
ALTER TABLE shares ADD COLUMN is_grant INTEGER NOT NULL DEFAULT 0;

-- buckets.object_count / byte_count: how many objects a bucket holds and
-- their total size, kept by the triggers below in the transaction of
-- every write to objects (an upsert's update fires the UPDATE trigger; no
-- statement here uses REPLACE, whose delete would not fire one). Gateway
-- buckets have no object rows and stay at 0.
ALTER TABLE buckets ADD COLUMN object_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE buckets ADD COLUMN byte_count   INTEGER NOT NULL DEFAULT 0;

UPDATE buckets SET
	object_count = (SELECT count(*) FROM objects WHERE objects.bucket = buckets.name),
	byte_count   = (SELECT COALESCE(SUM(size), 0) FROM objects WHERE objects.bucket = buckets.name);

CREATE TRIGGER objects_count_insert AFTER INSERT ON objects BEGIN
	UPDATE buckets SET object_count = object_count + 1, byte_count = byte_count + NEW.size WHERE name = NEW.bucket;
END;

CREATE TRIGGER objects_count_delete AFTER DELETE ON objects BEGIN
	UPDATE buckets SET object_count = object_count - 1, byte_count = byte_count - OLD.size WHERE name = OLD.bucket;
END;

CREATE TRIGGER objects_count_update AFTER UPDATE OF bucket, size ON objects
	WHEN OLD.bucket IS NOT NEW.bucket OR OLD.size IS NOT NEW.size BEGIN
	UPDATE buckets SET object_count = object_count - 1, byte_count = byte_count - OLD.size WHERE name = OLD.bucket;
	UPDATE buckets SET object_count = object_count + 1, byte_count = byte_count + NEW.size WHERE name = NEW.bucket;
END;

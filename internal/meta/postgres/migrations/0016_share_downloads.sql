-- 0016: resumable downloads through share links with a download limit.
--
-- A GET through such a link that does not start at the first byte is a
-- download of its own, unless it continues the counted download of the
-- same client (address; an IPv6 client's /64), file and ETag: it must
-- begin after the previous request of that download began (last_start),
-- before expires_at, and fewer than a few times (resumes). One row per
-- (share, client, file), replaced by that client's next counted download
-- of the file, so a link never has more rows than downloads. Rows go with
-- their share.
CREATE TABLE share_downloads (
	share_id   text    COLLATE "C" NOT NULL REFERENCES shares (id) ON DELETE CASCADE,
	client     text    COLLATE "C" NOT NULL,
	object_key text    COLLATE "C" NOT NULL,
	etag       text    COLLATE "C" NOT NULL,
	last_start bigint  NOT NULL CHECK (last_start >= 0),
	resumes    integer NOT NULL DEFAULT 0,
	expires_at bigint  NOT NULL,
	PRIMARY KEY (share_id, client, object_key)
);

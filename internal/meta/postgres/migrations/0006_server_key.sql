-- 0006: the fingerprint of the server key the store works with.
--
-- One row at most (id 1): an HMAC-SHA256 of a fixed constant under the
-- server key, hex — never the key itself. The first node to start records
-- it; a node with another key refuses to start. A database from before
-- this migration has no row and adopts the key of the next start.
CREATE TABLE server_key (
    id          smallint NOT NULL PRIMARY KEY CHECK (id = 1),
    fingerprint text     NOT NULL,
    recorded_at bigint   NOT NULL
);

package metasql

import "github.com/coffer-storage/coffer/internal/meta"

// Blob references: the SQL of what may be queued, reclaimed or collected
// as an orphan. Fragments take their operands as SQL expressions (a
// column, or a placeholder), so that each backend binds them its own way.

// Referenced is the condition "a row points at blob k" (k must not be a
// bare column name, which the subqueries would resolve to their own
// tables' blob_key): an object, a part of a multipart object, a part of an
// upload in progress, an upload whose blob the backend assembles, or a
// staging. A staging counts whether live or expired, until a janitor
// deletes it: liveness is judged by clocks, and a node whose clock runs
// ahead must not take a blob whose writer still believes its lease live
// (the writer's commit and the staging's deletion then exclude each other
// on the staging row). The garbage queue does not count: this is the check
// made before a queued blob is deleted (and before one is queued). Every
// blob_key column is indexed.
func Referenced(k string) string {
	return "(EXISTS (SELECT 1 FROM objects WHERE blob_key = " + k + ")" +
		" OR EXISTS (SELECT 1 FROM object_parts WHERE blob_key = " + k + ")" +
		" OR EXISTS (SELECT 1 FROM upload_parts WHERE blob_key = " + k + ")" +
		" OR EXISTS (SELECT 1 FROM uploads WHERE blob_key = " + k + ")" +
		" OR EXISTS (SELECT 1 FROM staging WHERE blob_key = " + k + "))"
}

// ReferencedOrQueued is Referenced, or k waits in the garbage queue: what
// orphan collection must leave alone.
func ReferencedOrQueued(k string) string {
	return "(" + Referenced(k) + " OR EXISTS (SELECT 1 FROM garbage WHERE blob_key = " + k + "))"
}

// ClaimGarbageQuery lists up to limit queue entries enqueued before
// before, oldest first, each with whether a row points at its blob again
// (see Referenced). Columns: id, blob_key, created_at, referenced.
func ClaimGarbageQuery(before, limit string) string {
	return "SELECT g.id, g.blob_key, g.created_at, CASE WHEN " + Referenced("g.blob_key") + " THEN 1 ELSE 0 END FROM garbage g" +
		" WHERE g.created_at < " + before + " ORDER BY g.created_at, g.id LIMIT " + limit
}

// GarbageCols are the columns of a garbage queue entry, in ScanGarbage's
// order.
const GarbageCols = "id, blob_key, created_at"

// ScanGarbage reads a queue entry selected with GarbageCols.
func ScanGarbage(r Row) (meta.Garbage, error) {
	var g meta.Garbage
	var created int64
	err := r.Scan(&g.ID, &g.BlobKey, &created)
	g.CreatedAt = FromNanos(created)
	return g, err
}

// ListGarbageSQL lists up to ph(2) queue entries enqueued before ph(1),
// oldest first (ScanGarbage).
func ListGarbageSQL(ph PH) string {
	return "SELECT " + GarbageCols + " FROM garbage WHERE created_at < " + ph(1) + " ORDER BY created_at, id LIMIT " + ph(2)
}

// Claim is a row of ClaimGarbageQuery: a queue entry, and whether a row
// points at its blob again.
type Claim struct {
	meta.Garbage
	Referenced bool
}

// ScanClaim reads a row of ClaimGarbageQuery.
func ScanClaim(r Row) (Claim, error) {
	var c Claim
	var created, ref int64
	err := r.Scan(&c.ID, &c.BlobKey, &created, &ref)
	c.CreatedAt, c.Referenced = FromNanos(created), ref != 0
	return c, err
}

// SplitClaims returns the entries of cs whose blobs may be reclaimed, and
// the IDs of the others (stale: a row points at their blob again), which
// the claim drops from the queue.
func SplitClaims(cs []Claim) (free []meta.Garbage, stale []int64) {
	for _, c := range cs {
		if c.Referenced {
			stale = append(stale, c.ID)
		} else {
			free = append(free, c.Garbage)
		}
	}
	return free, stale
}

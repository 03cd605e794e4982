package metasql

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

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
// blob_key column is indexed (objects' only on the rows that name a blob).
func Referenced(k string) string {
	return "(EXISTS (SELECT 1 FROM objects WHERE blob_key = " + k + " AND blob_key <> '')" + // the partial index objects_blob_key (0032)
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

// claimGarbageQuery lists up to limit queue entries enqueued before
// before, oldest first, each with whether a row points at its blob again
// (see Referenced). Columns: id, blob_key, created_at, referenced.
func claimGarbageQuery(before, limit string) string {
	return "SELECT g.id, g.blob_key, g.created_at, CASE WHEN " + Referenced("g.blob_key") + " THEN 1 ELSE 0 END FROM garbage g" +
		" WHERE g.created_at < " + before + " ORDER BY g.created_at, g.id LIMIT " + limit
}

// garbageCols are the columns of a garbage queue entry, in scanGarbage's
// order.
const garbageCols = "id, blob_key, created_at"

// scanGarbage reads a queue entry selected with garbageCols.
func scanGarbage(r Row) (meta.Garbage, error) {
	var g meta.Garbage
	var created int64
	err := r.Scan(&g.ID, &g.BlobKey, &created)
	g.CreatedAt = FromNanos(created)
	return g, err
}

// claim is a row of claimGarbageQuery: a queue entry, and whether a row
// points at its blob again.
type claim struct {
	meta.Garbage
	Referenced bool
}

// scanClaim reads a row of claimGarbageQuery.
func scanClaim(r Row) (claim, error) {
	var c claim
	var created, ref int64
	err := r.Scan(&c.ID, &c.BlobKey, &created, &ref)
	c.CreatedAt, c.Referenced = FromNanos(created), ref != 0
	return c, err
}

// splitClaims returns the entries of cs whose blobs may be reclaimed, and
// the IDs of the others (stale: a row points at their blob again), which
// the claim drops from the queue.
func splitClaims(cs []claim) (free []meta.Garbage, stale []int64) {
	for _, c := range cs {
		if c.Referenced {
			stale = append(stale, c.ID)
		} else {
			free = append(free, c.Garbage)
		}
	}
	return free, stale
}

// ListGarbage implements meta.Reclamation. A limit <= 0 means 1000.
func (o reclamationOps) ListGarbage(ctx context.Context, before time.Time, limit int) ([]meta.Garbage, error) {
	return List(ctx, o.run, "list garbage", scanGarbage, o.sql.listGarbage, ToNanos(before), meta.PageLimit(limit, 1000, 0))
}

// DeleteGarbage implements meta.Reclamation. Unknown ids are ignored.
func (o reclamationOps) DeleteGarbage(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := o.d.List(ids)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "encode garbage ids")
	}
	return o.exec(ctx, "delete garbage", o.sql.deleteGarbage, list)
}

// ClaimGarbage implements meta.Reclamation in one transaction: the queue
// entries with their re-check (claimGarbageQuery), then the deletion of
// those whose blob a row points at again. A limit <= 0 means 1000.
func (o reclamationOps) ClaimGarbage(ctx context.Context, before time.Time, limit int) ([]meta.Garbage, error) {
	var out []meta.Garbage
	err := o.run.Write(ctx, "claim garbage", func(w Writer) error {
		var claims []claim
		err := w.Query(o.sql.claimGarbage, []any{ToNanos(before), meta.PageLimit(limit, 1000, 0)}, func(r Row) error {
			c, err := scanClaim(r)
			claims = append(claims, c)
			return err
		})
		if err != nil {
			return err
		}
		var stale []int64
		if out, stale = splitClaims(claims); len(stale) == 0 {
			return nil
		}
		list, err := o.d.List(stale)
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "encode garbage ids")
		}
		return w.Queue(nil, o.sql.deleteGarbage, list)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

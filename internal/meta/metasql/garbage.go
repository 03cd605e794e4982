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
// (see Referenced), leaving out the blobs a backup lease live at now holds
// (HeldByBackup). Columns: id, blob_key, created_at, referenced.
func claimGarbageQuery(before, now, limit string) string {
	return "SELECT g.id, g.blob_key, g.created_at, CASE WHEN " + Referenced("g.blob_key") + " THEN 1 ELSE 0 END FROM garbage g" +
		" WHERE g.created_at < " + before + " AND NOT " + HeldByBackup("g.blob_key", now) +
		" ORDER BY g.created_at, g.id LIMIT " + limit
}

// HeldByBackup is the condition "a backup lease live at now holds blob k":
// one of k's queue entries was queued at or after the lease's since. Not
// only the entry being claimed: a blob queued before the lease began, that
// a row pointed at again (a stale entry, see ClaimGarbage) when the
// backup's snapshot was read, and that was queued again since, must stay
// too. (The lease table is empty but during a backup: the outer EXISTS
// costs one probe of it.)
func HeldByBackup(k, now string) string {
	return "EXISTS (SELECT 1 FROM backup_leases l WHERE l.until_ns > " + now +
		" AND EXISTS (SELECT 1 FROM garbage h WHERE h.blob_key = " + k + " AND h.created_at >= l.since_ns))"
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
func (o reclamationOps) ClaimGarbage(ctx context.Context, before, now time.Time, limit int) ([]meta.Garbage, error) {
	var out []meta.Garbage
	err := o.run.Write(ctx, "claim garbage", func(w Writer) error {
		var claims []claim
		err := w.Query(o.sql.claimGarbage, []any{ToNanos(before), meta.PageLimit(limit, 1000, 0), ToNanos(now)}, func(r Row) error {
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

// The backup leases (migration 0033): backup_leases, with since_ns and
// until_ns in Unix nanoseconds (the unit of garbage.created_at, which
// they are compared with), and backup_runs, the time the last backup
// finished.

// AcquireBackupLease implements meta.Reclamation.
func (o reclamationOps) AcquireBackupLease(ctx context.Context, id string, since, until time.Time) error {
	if id == "" {
		return errcode.New(errcode.InvalidArgument, "a backup lease needs an id")
	}
	ph := o.sql.ph
	return o.mustChange(ctx, "acquire backup lease", errcode.New(errcode.Conflict, "backup lease %q is taken", id),
		"INSERT INTO backup_leases (id, since_ns, until_ns) VALUES ("+values(ph, 1, 3)+") ON CONFLICT (id) DO NOTHING",
		id, ToNanos(since), ToNanos(until))
}

// RenewBackupLease implements meta.Reclamation.
func (o reclamationOps) RenewBackupLease(ctx context.Context, id string, until, now time.Time) error {
	ph := o.sql.ph
	return o.mustChange(ctx, "renew backup lease", meta.ErrJobLeaseLost(meta.BackupLeaseName),
		"UPDATE backup_leases SET until_ns = "+ph(1)+" WHERE id = "+ph(2)+" AND until_ns > "+ph(3),
		ToNanos(until), id, ToNanos(now))
}

// ReleaseBackupLease implements meta.Reclamation.
func (o reclamationOps) ReleaseBackupLease(ctx context.Context, id string) error {
	return o.exec(ctx, "release backup lease", "DELETE FROM backup_leases WHERE id = "+o.sql.ph(1), id)
}

// FinishBackup implements meta.Reclamation.
func (o reclamationOps) FinishBackup(ctx context.Context, id string, at time.Time) error {
	ph := o.sql.ph
	return o.run.Write(ctx, "finish backup", func(w Writer) error {
		if err := w.Queue(nil, "DELETE FROM backup_leases WHERE id = "+ph(1), id); err != nil {
			return err
		}
		return w.Queue(nil, "INSERT INTO backup_runs (name, finished_at) VALUES ('backup', "+ph(1)+
			") ON CONFLICT (name) DO UPDATE SET finished_at = excluded.finished_at", ToNanos(at))
	})
}

// LastBackup implements meta.Reclamation.
func (o reclamationOps) LastBackup(ctx context.Context) (time.Time, error) {
	ts, err := List(ctx, o.run, "last backup", func(r Row) (int64, error) {
		var n int64
		return n, r.Scan(&n)
	}, "SELECT finished_at FROM backup_runs WHERE name = 'backup'")
	if err != nil || len(ts) == 0 {
		return time.Time{}, err
	}
	return FromNanos(ts[0]), nil
}

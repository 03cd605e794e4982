package metasql

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Reservations: the SQL of stagings (meta.Staging) and of what they
// reserve, whose decisions are meta's (meta.Room). Fragments take their
// operands as SQL expressions (a column, or a placeholder: "$2" in
// PostgreSQL, "?2" in SQLite), so that each backend binds them its own
// way. Booleans are used only as CASE conditions, which SQLite's 0/1
// integers satisfy too.

// larger is the SQL of the larger of two expressions.
func larger(a, b string) string {
	return "CASE WHEN " + a + " > " + b + " THEN " + a + " ELSE " + b + " END"
}

const (
	declaredBytes = "SUM(CASE WHEN declared THEN bytes ELSE 0 END)"
	partBytes     = "SUM(CASE WHEN declared THEN 0 ELSE bytes END)"
)

// ReservedQuery reads what the stagings live at now reserve, per owner,
// for the owners that ownerCond (a condition on owner_id) selects: rows
// (owner_id, bytes); an owner without live stagings has no row. An
// object's staging reserves Bytes - Credit (at least 0); the stagings of one upload
// reserve together the larger of its declared bytes still due and the
// bytes of its parts in flight.
func ReservedQuery(ownerCond, now string) string {
	return "SELECT owner_id, CAST(SUM(r) AS bigint) FROM (SELECT owner_id, CASE WHEN upload_id = '' THEN SUM(" + larger("bytes - credit", "0") + ") ELSE " +
		larger(declaredBytes, partBytes) + " END AS r FROM staging WHERE " + ownerCond +
		" AND expires_at > " + now + " GROUP BY owner_id, upload_id) AS t GROUP BY owner_id"
}

// GroupQuery reads what the stagings of upload, live at now, other than
// key, reserve: the declared bytes still due, and the bytes of its parts.
func GroupQuery(upload, key, now string) string {
	return "SELECT CAST(COALESCE(SUM(CASE WHEN declared THEN bytes ELSE 0 END), 0) AS bigint)," +
		" CAST(COALESCE(SUM(CASE WHEN declared OR blob_key = " + key + " THEN 0 ELSE bytes END), 0) AS bigint)" +
		" FROM staging WHERE upload_id = " + upload + " AND upload_id <> '' AND expires_at > " + now
}

// creditQuery reads the size of the version a write at bucket/key would
// replace (0 if none: the key's null version, unless the bucket is
// versioned and Enabled, where a write replaces nothing) and the credit
// that other live stagings already take of it, for Stage.
func creditQuery(bucket, key, owner, now string) string {
	return "SELECT CAST(COALESCE((SELECT o.size FROM objects o JOIN buckets b ON b.name = o.bucket WHERE o.bucket = " + bucket +
		" AND o.key = " + key + " AND o.version_id = 'null' AND b.versioning <> 'Enabled'), 0) AS bigint)," +
		" CAST(COALESCE((SELECT SUM(credit) FROM staging WHERE owner_id = " + owner + " AND bucket = " + bucket +
		" AND key = " + key + " AND upload_id = '' AND expires_at > " + now + "), 0) AS bigint)"
}

// declaredLeftUpdate sets the declared-size staging of upload to the
// declared bytes still due once its part number holds size bytes: the
// declared size minus the sizes of its other parts and size, at least 0.
func declaredLeftUpdate(upload, number, size string) string {
	left := "(SELECT u.size - COALESCE((SELECT SUM(p.size) FROM upload_parts p WHERE p.upload_id = u.id AND p.number <> " + number + "), 0) - " + size +
		" FROM uploads u WHERE u.id = " + upload + ")"
	return "UPDATE staging SET bytes = " + larger(left, "0") + " WHERE upload_id = " + upload + " AND declared"
}

// StagingCols are the columns of a staging, in insertStagingSQL's order.
const StagingCols = "blob_key, owner_id, upload_id, declared, bucket, key, bytes, credit, expires_at"

// insertStagingSQL inserts a staging: arguments StagingArgs.
func insertStagingSQL(ph PH) string {
	return "INSERT INTO staging (" + StagingCols + ") VALUES (" + values(ph, 1, 9) + ")"
}

// StagingArgs are insertStagingSQL's arguments; key binds its key in the
// dialect.
func StagingArgs(s meta.Staging, key func(string) any) []any {
	return []any{s.BlobKey, s.OwnerID, s.UploadID, s.Declared, s.Bucket, key(s.Key), s.Bytes, s.Credit, ToNanos(s.ExpiresAt)}
}

// stagingLeaseSQL reads the lease of the object or part staging ph(1):
// owner_id, upload_id, bytes, credit, expires_at (ScanStagingLease).
func stagingLeaseSQL(ph PH) string {
	return "SELECT owner_id, upload_id, bytes, credit, expires_at FROM staging WHERE blob_key = " + ph(1) + " AND NOT declared"
}

// StagingLease is what GrowStaging reads of a staging.
type StagingLease struct {
	Owner, Upload  string
	Bytes, Credit  int64
	ExpiresAtNanos int64
}

// ScanStagingLease reads a row of stagingLeaseSQL.
func ScanStagingLease(r Row) (StagingLease, error) {
	var l StagingLease
	err := r.Scan(&l.Owner, &l.Upload, &l.Bytes, &l.Credit, &l.ExpiresAtNanos)
	return l, err
}

// Reserved is a row of ReservedQuery: what an owner's live stagings
// reserve.
type Reserved struct {
	Owner string
	Bytes int64
}

// ScanReserved reads a row of ReservedQuery.
func ScanReserved(r Row) (Reserved, error) {
	var res Reserved
	err := r.Scan(&res.Owner, &res.Bytes)
	return res, err
}

// Released is a staging a write deleted (RETURNING blob_key, expires_at).
type Released struct {
	Key     string
	Expires time.Time
}

// ScanReleased reads a row of blob_key, expires_at.
func ScanReleased(r Row) (Released, error) {
	var rel Released
	var e int64
	err := r.Scan(&rel.Key, &e)
	rel.Expires = FromNanos(e)
	return rel, err
}

// ScanPair reads a row of two integers (GroupQuery, creditQuery).
func ScanPair(r Row) ([2]int64, error) {
	var p [2]int64
	err := r.Scan(&p[0], &p[1])
	return p, err
}

// DeleteExpiredStaging implements meta.Stagings.
func (o stagingOps) DeleteExpiredStaging(ctx context.Context, before time.Time) (int, error) {
	n, err := o.run.Exec(ctx, "delete expired staging", o.sql.deleteExpiredStaging, []any{ToNanos(before)}, nil)
	return int(n), err
}

// RenewStaging implements meta.Stagings in one statement.
func (o stagingOps) RenewStaging(ctx context.Context, keys []string, expires time.Time) ([]string, error) {
	if len(keys) == 0 {
		return nil, o.run.Ready()
	}
	list, err := o.d.List(keys)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "encode blob keys")
	}
	renewed := map[string]bool{}
	_, err = o.run.Exec(ctx, "renew staging", o.sql.renewStaging, []any{list, ToNanos(expires), ToNanos(time.Now())}, func(r Row) error {
		k, err := ScanString(r)
		renewed[k] = true
		return err
	})
	if err != nil {
		return nil, err
	}
	return meta.Missing(keys, renewed), nil
}

// Unstage implements meta.Stagings in one statement.
func (o stagingOps) Unstage(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return o.run.Ready()
	}
	list, err := o.d.List(keys)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "encode blob keys")
	}
	return o.exec(ctx, "unstage", o.sql.unstage, list)
}

// Stage implements meta.Stagings: the staging is checked (meta.CheckStaging),
// then recorded by the driver.
func (o stagingOps) Stage(ctx context.Context, s meta.Staging, minBytes int64) (meta.Staging, bool, error) {
	s, err := meta.CheckStaging(s, minBytes)
	if err != nil {
		return meta.Staging{}, false, err
	}
	return o.drv.Stage(ctx, s, minBytes)
}

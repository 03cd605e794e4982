package metasql

import (
	"context"
	"fmt"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// The scrub's run is the one row of scrub_runs, its findings the rows of
// scrub_findings (migration 0028). Times are Unix milliseconds.

// scrubSQL are the statements of the scrub operations.
type scrubSQL struct {
	// acquire: args name, owner, until, now; returns scrubCols (no row:
	// held by another). save: args cursor, started, finished, progress,
	// last, until, name, owner, now. get: arg name.
	acquire, save, get string
	// record: args findingCols; list: args after, limit; del: arg blob key.
	record, list, del string
}

const (
	scrubCols   = "cursor, started_at, finished_at, progress, last, lease_owner, lease_until"
	findingCols = "blob_key, bucket, key, version_id, problem, detail, found_at"
)

func newScrubSQL(ph PH) scrubSQL {
	return scrubSQL{
		acquire: "INSERT INTO scrub_runs (name, lease_owner, lease_until) VALUES (" + values(ph, 1, 3) + ") " +
			"ON CONFLICT (name) DO UPDATE SET lease_owner = excluded.lease_owner, lease_until = excluded.lease_until " +
			"WHERE scrub_runs.lease_owner = excluded.lease_owner OR scrub_runs.lease_owner = '' OR scrub_runs.lease_until < " + ph(4) +
			" RETURNING " + scrubCols,
		save: "UPDATE scrub_runs SET cursor = " + ph(1) + ", started_at = " + ph(2) + ", finished_at = " + ph(3) +
			", progress = " + ph(4) + ", last = " + ph(5) + ", lease_until = " + ph(6) +
			" WHERE name = " + ph(7) + " AND lease_owner = " + ph(8) + " AND lease_until >= " + ph(9),
		get: "SELECT " + scrubCols + " FROM scrub_runs WHERE name = " + ph(1),
		record: "INSERT INTO scrub_findings (" + findingCols + ") VALUES (" + values(ph, 1, 7) + ") " +
			"ON CONFLICT (blob_key) DO UPDATE SET bucket = excluded.bucket, key = excluded.key, version_id = excluded.version_id, " +
			"problem = excluded.problem, detail = excluded.detail, found_at = excluded.found_at",
		list: "SELECT " + findingCols + " FROM scrub_findings WHERE blob_key > " + ph(1) + " ORDER BY blob_key LIMIT " + ph(2),
		del:  "DELETE FROM scrub_findings WHERE blob_key = " + ph(1),
	}
}

func scanScrubRun(r Row) (meta.ScrubRun, error) {
	var (
		run                       meta.ScrubRun
		started, finished, leased int64
	)
	err := r.Scan(&run.Cursor, &started, &finished, &run.Progress, &run.Last, &run.LeaseOwner, &leased)
	run.StartedAt, run.FinishedAt, run.LeaseUntil = fromMillis(started), fromMillis(finished), fromMillis(leased)
	return run, err
}

func scanFinding(r Row) (meta.ScrubFinding, error) {
	var (
		f     meta.ScrubFinding
		key   []byte
		found int64
	)
	err := r.Scan(&f.BlobKey, &f.Bucket, &key, &f.VersionID, &f.Problem, &f.Detail, &found)
	f.Key, f.FoundAt = string(key), fromMillis(found)
	return f, err
}

// AcquireScrubRun implements meta.Scrubs: one upsert, which changes (and
// returns) the row only if the lease is free, expired or owner's.
func (o scrubOps) AcquireScrubRun(ctx context.Context, owner string, until, now time.Time) (meta.ScrubRun, bool, error) {
	if owner == "" {
		return meta.ScrubRun{}, false, errcode.New(errcode.InvalidArgument, "a lease needs an owner")
	}
	return writeGet(ctx, o.core, "acquire scrub run", scanScrubRun, o.sql.scrub.acquire, meta.ScrubRunName, owner, millis(until), millis(now))
}

// SaveScrubRun implements meta.Scrubs.
func (o scrubOps) SaveScrubRun(ctx context.Context, r meta.ScrubRun, owner string, until, now time.Time) error {
	return o.mustChange(ctx, "save scrub run", meta.ErrJobLeaseLost(meta.ScrubRunName), o.sql.scrub.save,
		r.Cursor, millis(r.StartedAt), millis(r.FinishedAt), r.Progress, r.Last, millis(until), meta.ScrubRunName, owner, millis(now))
}

// GetScrubRun implements meta.Scrubs.
func (o scrubOps) GetScrubRun(ctx context.Context) (meta.ScrubRun, error) {
	runs, err := List(ctx, o.run, "get scrub run", scanScrubRun, o.sql.scrub.get, meta.ScrubRunName)
	if err != nil || len(runs) == 0 {
		return meta.ScrubRun{}, err
	}
	return runs[0], nil
}

// RecordScrubFinding implements meta.Scrubs.
func (o scrubOps) RecordScrubFinding(ctx context.Context, f meta.ScrubFinding) error {
	if f.BlobKey == "" || f.Problem == "" {
		return errcode.New(errcode.InvalidArgument, "a scrub finding needs a blob key and a problem")
	}
	return o.exec(ctx, "record scrub finding", o.sql.scrub.record,
		f.BlobKey, f.Bucket, o.key(f.Key), f.VersionID, f.Problem, f.Detail, millis(f.FoundAt))
}

// ListScrubFindings implements meta.Scrubs.
func (o scrubOps) ListScrubFindings(ctx context.Context, after string, limit int) ([]meta.ScrubFinding, error) {
	return List(ctx, o.run, "list scrub findings", scanFinding, o.sql.scrub.list, after, meta.PageLimit(limit, 100, 1000))
}

// DeleteScrubFinding implements meta.Scrubs.
func (o scrubOps) DeleteScrubFinding(ctx context.Context, blobKey string) error {
	return o.exec(ctx, "delete scrub finding", o.sql.scrub.del, blobKey)
}

// listScrubVersionsSQL pages through object versions (no delete markers):
// args limit, then the cursor's bucket, key and version ID (with after).
// Returns bucket, key, version_id.
func listScrubVersionsSQL(after bool, ph PH) string {
	cond := ""
	if after {
		// The bound on (bucket, key) is a range of the primary key
		// (bucket, key, seq); a key's version IDs are then sorted.
		cond = fmt.Sprintf(" AND (bucket, key) >= (%s, %s) AND (bucket, key, version_id) > (%s, %s, %s)", ph(2), ph(3), ph(2), ph(3), ph(4))
	}
	return fmt.Sprintf("SELECT bucket, key, version_id FROM objects WHERE NOT delete_marker%s ORDER BY bucket, key, version_id LIMIT %s", cond, ph(1))
}

// ListScrubVersions implements meta.Scrubs.
func (o scrubOps) ListScrubVersions(ctx context.Context, after *meta.VersionRef, limit int) ([]meta.VersionRef, error) {
	args := []any{meta.PageLimit(limit, 1000, 1000)}
	if after != nil {
		args = append(args, after.Bucket, o.key(after.Key), after.VersionID)
	}
	return List(ctx, o.run, "list scrub versions", func(r Row) (meta.VersionRef, error) {
		var (
			v   meta.VersionRef
			key []byte
		)
		err := r.Scan(&v.Bucket, &key, &v.VersionID)
		v.Key = string(key)
		return v, err
	}, listScrubVersionsSQL(after != nil, o.sql.ph), args...)
}

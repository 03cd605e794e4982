package metasql

import (
	"context"
	"encoding/json"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Lifecycle configurations are JSON (meta.Lifecycle) in buckets.lifecycle,
// NULL when a bucket has none; the worker's run is the one row of
// lifecycle_runs (migration 0020). Times are Unix milliseconds.

// lifecycleSQL are the statements of the lifecycle operations.
type lifecycleSQL struct {
	// get: the configuration of bucket ph(1); set: args configuration,
	// name (native buckets only); list: args after, limit.
	get, set, list string
	// acquire: args name, owner, until, now; returns runCols (no row:
	// held by another). save: args cursor, started, finished, until,
	// name, owner, now.
	acquire, save string
}

const runCols = "cursor, started_at, finished_at, lease_owner, lease_until"

func newLifecycleSQL(ph PH) lifecycleSQL {
	return lifecycleSQL{
		get: "SELECT lifecycle FROM buckets WHERE name = " + ph(1),
		set: "UPDATE buckets SET lifecycle = " + ph(1) + " WHERE name = " + ph(2) + " AND gateway = ''",
		list: "SELECT name, versioning, lifecycle FROM buckets WHERE lifecycle IS NOT NULL AND name > " + ph(1) +
			" ORDER BY name LIMIT " + ph(2),
		acquire: "INSERT INTO lifecycle_runs (name, lease_owner, lease_until) VALUES (" + values(ph, 1, 3) + ") " +
			"ON CONFLICT (name) DO UPDATE SET lease_owner = excluded.lease_owner, lease_until = excluded.lease_until " +
			"WHERE lifecycle_runs.lease_owner = excluded.lease_owner OR lifecycle_runs.lease_owner = '' OR lifecycle_runs.lease_until < " + ph(4) +
			" RETURNING " + runCols,
		save: "UPDATE lifecycle_runs SET cursor = " + ph(1) + ", started_at = " + ph(2) + ", finished_at = " + ph(3) + ", lease_until = " + ph(4) +
			" WHERE name = " + ph(5) + " AND lease_owner = " + ph(6) + " AND lease_until >= " + ph(7),
	}
}

func scanRun(r Row) (meta.LifecycleRun, error) {
	var (
		run                       meta.LifecycleRun
		started, finished, leased int64
	)
	err := r.Scan(&run.Cursor, &started, &finished, &run.LeaseOwner, &leased)
	run.StartedAt, run.FinishedAt, run.LeaseUntil = fromMillis(started), fromMillis(finished), fromMillis(leased)
	return run, err
}

// decodeLifecycle reads a stored configuration.
func decodeLifecycle(s string) (meta.Lifecycle, error) {
	var lc meta.Lifecycle
	if err := json.Unmarshal([]byte(s), &lc); err != nil {
		return meta.Lifecycle{}, errcode.Wrap(errcode.Internal, err, "corrupt lifecycle configuration")
	}
	return lc, nil
}

// GetBucketLifecycle implements meta.Lifecycles.
func (o lifecycleOps) GetBucketLifecycle(ctx context.Context, bucket string) (meta.Lifecycle, error) {
	s, err := Get(ctx, o.run, "get bucket lifecycle", func(r Row) (*string, error) {
		var s *string
		return s, r.Scan(&s)
	}, func() error { return meta.ErrNoBucket(bucket) }, o.sql.lifecycle.get, bucket)
	if err != nil {
		return meta.Lifecycle{}, err
	}
	if s == nil || *s == "" {
		return meta.Lifecycle{}, meta.ErrNoLifecycle(bucket)
	}
	return decodeLifecycle(*s)
}

// SetBucketLifecycle implements meta.Lifecycles (setDocument).
func (o lifecycleOps) SetBucketLifecycle(ctx context.Context, bucket string, lc *meta.Lifecycle) error {
	var doc any
	if lc != nil {
		if err := meta.CheckLifecycle(lc); err != nil {
			return err
		}
		doc = lc
	}
	return bucketOps(o).setDocument(ctx, "lifecycle", o.sql.lifecycle.set, bucket, doc)
}

// ListLifecycleBuckets implements meta.Lifecycles.
func (o lifecycleOps) ListLifecycleBuckets(ctx context.Context, after string, limit int) ([]meta.BucketLifecycle, error) {
	return List(ctx, o.run, "list lifecycle buckets", func(r Row) (meta.BucketLifecycle, error) {
		var (
			b          meta.BucketLifecycle
			versioning string
			s          string
		)
		if err := r.Scan(&b.Bucket, &versioning, &s); err != nil {
			return b, err
		}
		b.Versioning = meta.Versioning(versioning)
		var err error
		b.Lifecycle, err = decodeLifecycle(s)
		return b, err
	}, o.sql.lifecycle.list, after, meta.PageLimit(limit, 100, 1000))
}

// AcquireLifecycleRun implements meta.Lifecycles: one upsert, which
// changes (and returns) the row only if the lease is free, expired or
// owner's.
func (o lifecycleOps) AcquireLifecycleRun(ctx context.Context, owner string, until, now time.Time) (meta.LifecycleRun, bool, error) {
	if owner == "" {
		return meta.LifecycleRun{}, false, errcode.New(errcode.InvalidArgument, "a lease needs an owner")
	}
	return writeGet(ctx, o.core, "acquire lifecycle run", scanRun, o.sql.lifecycle.acquire, meta.LifecycleRunName, owner, millis(until), millis(now))
}

// SaveLifecycleRun implements meta.Lifecycles.
func (o lifecycleOps) SaveLifecycleRun(ctx context.Context, r meta.LifecycleRun, owner string, until, now time.Time) error {
	return o.mustChange(ctx, "save lifecycle run", meta.ErrJobLeaseLost(meta.LifecycleRunName), o.sql.lifecycle.save,
		r.Cursor, millis(r.StartedAt), millis(r.FinishedAt), millis(until), meta.LifecycleRunName, owner, millis(now))
}

package metasql

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// The reads of one version and the removals of one version, written once:
// the driver runs the read (GetVersion) or the transaction
// (DeleteVersion, DeleteObject's removal), and decides the removal with
// CheckRemoval, inside it. And the object lock writes (meta/lock.go).

// GetObject implements meta.Objects: the driver's read of the latest
// version.
func (o objectOps) GetObject(ctx context.Context, bucket, key string) (meta.Object, error) {
	return o.drv.GetVersion(ctx, bucket, key, "")
}

// GetObjectVersion implements meta.Objects: the driver's read of the
// version, which must be named.
func (o objectOps) GetObjectVersion(ctx context.Context, bucket, key, versionID string) (meta.Object, error) {
	if versionID == "" {
		return meta.Object{}, meta.ErrNoVersion(bucket, key, versionID)
	}
	return o.drv.GetVersion(ctx, bucket, key, versionID)
}

// DeleteVersion implements meta.Objects: the version must be named; the
// driver's transaction decides with CheckRemoval.
func (o objectOps) DeleteVersion(ctx context.Context, bucket, key, versionID string, cond meta.Cond) (meta.Object, error) {
	if versionID == "" {
		return meta.Object{}, meta.ErrNoVersion(bucket, key, versionID)
	}
	return o.drv.DeleteVersion(ctx, bucket, key, versionID, cond)
}

// CheckRemoval decides the removal of version ("": the latest) of
// bucket/key, found as cur (exists false: none), inside the removal's
// transaction at now: Missing (ErrNoVersion, ErrNoObject), cond on the
// version (a delete marker is no object), and the version's lock
// (meta.CheckUnlocked with cond.BypassGovernance).
func CheckRemoval(bucket, key, version string, cur meta.Object, exists bool, cond meta.Cond, now time.Time) error {
	if err := Missing(bucket, key, version, cur, exists); err != nil {
		return err
	}
	if err := cond.Check(cur, exists && !cur.DeleteMarker); err != nil {
		return err
	}
	return meta.CheckUnlocked(cur, cond.BypassGovernance, now)
}

// lockSQL are the statements of the object lock writes.
type lockSQL struct {
	// owner locks the users row of the owner of bucket ph(1) (in
	// PostgreSQL; SQLite's single writer needs no lock), as every removal
	// of a version does: a lock write and a removal of one version are
	// serialised, so a removal never decides on a lock state that changes
	// before it commits.
	owner string
	// latest, version: the bucket's object lock and the lock state of the
	// latest version / version ph(3) of bucket ph(1), key ph(2)
	// (scanLockState).
	latest, version string
	// set: args lock_mode, lock_until, legal_hold, bucket, key, version_id.
	set string
}

func newLockSQL(d Dialect) lockSQL {
	ph := d.PH
	state := func(cond string) string {
		return "SELECT b.object_lock, o.version_id, o.is_latest, o.delete_marker, o.lock_mode, o.lock_until, o.legal_hold" +
			" FROM buckets b LEFT JOIN objects o ON o.bucket = b.name AND o.key = " + ph(2) + " AND " + cond + " WHERE b.name = " + ph(1)
	}
	return lockSQL{
		owner:   "SELECT id FROM users WHERE id = (SELECT owner_id FROM buckets WHERE name = " + ph(1) + ")" + d.ForUpdate,
		latest:  state(latestIDCond(ph)),
		version: state(VersionIs("o.", ph(3))),
		set: "UPDATE objects SET lock_mode = " + ph(1) + ", lock_until = " + ph(2) + ", legal_hold = " + ph(3) +
			" WHERE bucket = " + ph(4) + " AND key = " + ph(5) + " AND " + VersionIs("", ph(6)),
	}
}

// lockState is what the lock statements read.
type lockState struct {
	enabled bool
	version *string
	latest  *bool
	marker  *bool
	mode    *string
	until   *int64
	hold    *bool
}

func scanLockState(r Row) (lockState, error) {
	var s lockState
	err := r.Scan(&s.enabled, &s.version, &s.latest, &s.marker, &s.mode, &s.until, &s.hold)
	return s, err
}

// SetObjectRetention implements meta.Objects.
func (o objectOps) SetObjectRetention(ctx context.Context, bucket, key, versionID string, r meta.Retention, bypass bool) (meta.Object, error) {
	if err := meta.CheckRetention(r); err != nil {
		return meta.Object{}, err
	}
	r.Until = meta.StoredTime(r.Until)
	return o.setLock(ctx, "set object retention", bucket, key, versionID, func(cur meta.Object, now time.Time) (meta.Object, error) {
		if err := meta.CheckRetentionChange(cur, r, bypass, now); err != nil {
			return meta.Object{}, err
		}
		cur.Retention = r
		return cur, nil
	})
}

// SetObjectLegalHold implements meta.Objects.
func (o objectOps) SetObjectLegalHold(ctx context.Context, bucket, key, versionID string, on bool) (meta.Object, error) {
	return o.setLock(ctx, "set object legal hold", bucket, key, versionID, func(cur meta.Object, _ time.Time) (meta.Object, error) {
		cur.LegalHold = on
		return cur, nil
	})
}

// setLock writes the lock state change makes of version versionID ("":
// the latest) of bucket/key, in one transaction that holds the lock of
// the bucket's owner (lockSQL.owner), and returns the version (its ID,
// latest flag and lock state).
func (o objectOps) setLock(ctx context.Context, what, bucket, key, versionID string,
	change func(cur meta.Object, now time.Time) (meta.Object, error)) (meta.Object, error) {
	var out meta.Object
	err := o.run.Write(ctx, what, func(w Writer) error {
		out = meta.Object{}
		now := time.Now()
		if err := w.Query(o.sql.lock.owner, []any{bucket}, func(Row) error { return nil }); err != nil {
			return err
		}
		query, args := o.sql.lock.latest, []any{bucket, o.key(key)}
		if versionID != "" {
			query, args = o.sql.lock.version, append(args, versionID)
		}
		var st lockState
		found := false
		if err := w.Query(query, args, func(r Row) (err error) {
			st, err = scanLockState(r)
			found = err == nil
			return err
		}); err != nil {
			return err
		}
		cur := meta.Object{Bucket: bucket, Key: key, VersionID: Deref(st.version), IsLatest: Deref(st.latest), DeleteMarker: Deref(st.marker),
			Retention: meta.Retention{Mode: meta.RetentionMode(Deref(st.mode)), Until: FromNanos(Deref(st.until))}, LegalHold: Deref(st.hold)}
		switch {
		case !found:
			return meta.ErrNoBucket(bucket)
		case !st.enabled:
			return meta.ErrLockNotEnabled(bucket)
		}
		if err := Missing(bucket, key, versionID, cur, st.version != nil); err != nil {
			return err
		}
		if cur.DeleteMarker {
			return meta.ErrMarkerHasNoTags(cur.VersionID)
		}
		next, err := change(cur, now)
		if err != nil {
			return err
		}
		n, err := w.Exec(o.sql.lock.set, string(next.Retention.Mode), ToNanos(next.Retention.Until), next.LegalHold, bucket, o.key(key), cur.VersionID)
		if err == nil && n != 1 {
			err = errcode.New(errcode.Internal, "%s: version %q of %q changed under the owner's lock", what, cur.VersionID, key)
		}
		out = next
		return err
	})
	return Result(out, err)
}

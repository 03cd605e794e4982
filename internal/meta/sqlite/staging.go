package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// The single writer serialises every staging change with every quota
// check, so the reads and decisions below are exact.

var (
	reservedQuery = metasql.ReservedQuery("owner_id = ?1", "?2")
	// growUnlimitedQuery grows the usage of an owner without a quota
	// (addUsage): ?1 bytes, owner ?2.
	growUnlimitedQuery = "UPDATE users SET usage_bytes = usage_bytes + ? WHERE id = ? AND quota_bytes = 0"
)

// room reads owner's quota, usage and live reservations (without those the
// transaction released already). NotFound if the owner does not exist.
func room(ctx context.Context, c *conn, owner string, now time.Time) (meta.Room, error) {
	var r meta.Room
	err := c.QueryRowContext(ctx, "SELECT quota_bytes, usage_bytes FROM users WHERE id = ?", owner).Scan(&r.Quota, &r.Usage)
	if errors.Is(err, sql.ErrNoRows) {
		return r, meta.ErrNoUser(owner)
	}
	if err != nil {
		return r, classify(err, "read quota of %q", owner)
	}
	if r.Quota == 0 {
		return r, nil
	}
	var id string
	err = c.QueryRowContext(ctx, reservedQuery, owner, metasql.ToNanos(now)).Scan(&id, &r.Reserved)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return r, classify(err, "read reservations of %q", owner)
	}
	return r, nil
}

// addUsage moves owner's usage by delta. Growth must leave usage and the
// owner's live reservations within the quota (QuotaExceeded otherwise);
// shrinking always passes.
func addUsage(ctx context.Context, c *conn, owner string, delta int64, now time.Time) error {
	if delta == 0 {
		return nil
	}
	if delta > 0 {
		// An owner without a quota (the common case) grows in one
		// statement: the row matches only if its quota_bytes, read in this
		// transaction, is 0, so no check is skipped. Anyone else (a quota,
		// or no such owner) takes the exact path below.
		res, err := c.ExecContext(ctx, growUnlimitedQuery, delta, owner)
		if err != nil {
			return classify(err, "update usage of %q", owner)
		}
		if n, err := res.RowsAffected(); err == nil && n == 1 {
			return nil
		}
		r, err := room(ctx, c, owner, now)
		if err != nil {
			return err
		}
		if err := r.CheckGrowth(delta); err != nil {
			return err
		}
	}
	_, err := c.ExecContext(ctx, "UPDATE users SET usage_bytes = usage_bytes + ? WHERE id = ?", delta, owner)
	return classify(err, "update usage of %q", owner)
}

// reservation reads what a staging (key, of upload if any) shares its
// reservation with.
func reservation(ctx context.Context, c *conn, key, upload string, own, credit int64, now time.Time) (meta.Reservation, error) {
	res := meta.Reservation{Own: own, Credit: credit, Upload: upload != ""}
	if res.Upload {
		if err := c.QueryRowContext(ctx, sq.Group, upload, key, metasql.ToNanos(now)).Scan(&res.Declared, &res.Parts); err != nil {
			return res, classify(err, "read the reservations of upload %q", upload)
		}
	}
	return res, nil
}

func insertStaging(ctx context.Context, c *conn, s meta.Staging) error {
	_, err := c.ExecContext(ctx, sq.InsertStaging, metasql.StagingArgs(s, key)...)
	return classify(err, "stage %q", s.BlobKey)
}

// Stage implements meta.Stagings.
func (s driver) Stage(ctx context.Context, st meta.Staging, minBytes int64) (meta.Staging, bool, error) {
	var out meta.Staging
	var limited bool
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		out = st
		r, err := room(ctx, c, st.OwnerID, now)
		if err != nil {
			return err
		}
		limited = r.Quota > 0
		if limited {
			if st.Bucket != "" {
				var size, taken int64
				if err := c.QueryRowContext(ctx, sq.Credit, st.Bucket, st.Key, st.OwnerID, metasql.ToNanos(now)).Scan(&size, &taken); err != nil {
					return classify(err, "read the object %q replaces", st.BlobKey)
				}
				out.Credit = meta.Credit(size, taken)
			}
			res, err := reservation(ctx, c, st.BlobKey, st.UploadID, 0, out.Credit, now)
			if err != nil {
				return err
			}
			if out.Bytes, err = r.Grant(res, minBytes, st.Bytes); err != nil {
				return err
			}
		}
		return insertStaging(ctx, c, out)
	})
	if err != nil {
		return meta.Staging{}, false, err
	}
	return out, limited, nil
}

// GrowStaging implements meta.Stagings.
func (s *Store) GrowStaging(ctx context.Context, key string, minBytes, maxBytes int64) (int64, error) {
	var granted int64
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		l, err := queryRow(ctx, c, metasql.ScanStagingLease, meta.ErrLeaseLost(), sq.StagingLease, key)
		if err == nil && l.ExpiresAtNanos <= metasql.ToNanos(now) {
			err = meta.ErrLeaseLost()
		}
		if err != nil {
			return classify(err, "read staging %q", key)
		}
		r, err := room(ctx, c, l.Owner, now)
		if err != nil {
			return err
		}
		res, err := reservation(ctx, c, key, l.Upload, l.Bytes, l.Credit, now)
		if err != nil {
			return err
		}
		if granted, err = r.Grant(res, minBytes, maxBytes); err != nil || granted == l.Bytes {
			return err
		}
		_, err = c.ExecContext(ctx, sq.GrowStaging, granted, key)
		return classify(err, "grow staging %q", key)
	})
	if err != nil {
		return 0, err
	}
	return granted, nil
}

// releaseStaged deletes the stagings of the blobs a write commits and
// fails unless each was live: their reservations become usage in the same
// transaction.
func releaseStaged(ctx context.Context, c *conn, keys []string, now time.Time) error {
	expires := map[string]time.Time{}
	for _, k := range keys {
		var e int64
		err := c.QueryRowContext(ctx, "DELETE FROM staging WHERE blob_key = ? AND NOT declared RETURNING expires_at", k).Scan(&e)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return classify(err, "release staging %q", k)
		}
		expires[k] = metasql.FromNanos(e)
	}
	return meta.CheckReleased(keys, expires, now)
}

package postgres

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// CreateShare implements meta.Store.
func (s *Store) CreateShare(ctx context.Context, sh meta.Share) error {
	sh, err := meta.CheckShare(sh, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, "create share", func(t *txn) error {
		t.exec("INSERT INTO shares ("+metasql.ShareCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)", metasql.ShareArgs(sh)...)
		return nil
	})
}

func (s *Store) getShare(ctx context.Context, col, v string) (meta.Share, error) {
	var sh meta.Share
	err := s.queryRow(ctx, "get share", func(r pgx.Row) (err error) {
		sh, err = metasql.ScanShare(r)
		if errors.Is(err, pgx.ErrNoRows) {
			return meta.ErrNoShare()
		}
		return err
	}, "SELECT "+metasql.ShareCols+" FROM shares WHERE "+col+" = $1", v)
	if err != nil {
		return meta.Share{}, err
	}
	return sh, nil
}

// GetShare implements meta.Store.
func (s *Store) GetShare(ctx context.Context, id string) (meta.Share, error) {
	return s.getShare(ctx, "id", id)
}

// GetShareByHash implements meta.Store.
func (s *Store) GetShareByHash(ctx context.Context, hash string) (meta.Share, error) {
	return s.getShare(ctx, "hash", hash)
}

// ListShares implements meta.Store.
func (s *Store) ListShares(ctx context.Context, ownerID string) ([]meta.Share, error) {
	var out []meta.Share
	err := s.read(ctx, "list shares", func(c *pgx.Conn) error {
		out = nil
		rows, err := c.Query(ctx, "SELECT "+metasql.ShareCols+" FROM shares WHERE owner_id = $1 ORDER BY created_at DESC, id", ownerID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			sh, err := metasql.ScanShare(rows)
			if err != nil {
				return err
			}
			out = append(out, sh)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetShareExpiry implements meta.Store.
func (s *Store) SetShareExpiry(ctx context.Context, id string, expires time.Time) (meta.Share, error) {
	if err := meta.CheckShareExpiry(expires); err != nil {
		return meta.Share{}, err
	}
	err := s.write(ctx, "share expiry", func(t *txn) error {
		t.execN(mustAffect(meta.ErrNoShare()), "UPDATE shares SET expires_at = $1 WHERE id = $2", metasql.ToNanos(expires), id)
		return nil
	})
	if err != nil {
		return meta.Share{}, err
	}
	return s.GetShare(ctx, id)
}

// RevokeShare implements meta.Store.
func (s *Store) RevokeShare(ctx context.Context, id string) error {
	return s.write(ctx, "revoke share", func(t *txn) error {
		t.execN(mustAffect(meta.ErrNoShare()), "UPDATE shares SET revoked = true WHERE id = $1", id)
		return nil
	})
}

// DeleteShare implements meta.Store.
func (s *Store) DeleteShare(ctx context.Context, id string) error {
	return s.write(ctx, "delete share", func(t *txn) error {
		t.execN(mustAffect(meta.ErrNoShare()), "DELETE FROM shares WHERE id = $1", id)
		return nil
	})
}

// DeleteSpentGrants implements meta.Store.
func (s *Store) DeleteSpentGrants(ctx context.Context, ownerID string, now time.Time) (int, error) {
	var n int64
	err := s.write(ctx, "delete spent grants", func(t *txn) error {
		t.execN(func(c int64) error { n = c; return nil },
			metasql.DeleteSpentGrantsSQL(func(i int) string { return "$" + strconv.Itoa(i) }), ownerID, metasql.ToNanos(now))
		return nil
	})
	return int(n), err
}

// UseShare implements meta.Store.
func (s *Store) UseShare(ctx context.Context, id string, download bool, now time.Time) error {
	return s.useShare(ctx, id, download, nil, now)
}

// StartShareDownload implements meta.Store.
func (s *Store) StartShareDownload(ctx context.Context, d meta.ShareDownload, now time.Time) error {
	if err := meta.CheckShareDownload(d); err != nil {
		return err
	}
	return s.useShare(ctx, d.ShareID, true, &d, now)
}

// useShare is UseShare, recording d too when it is not nil and the use
// was taken.
func (s *Store) useShare(ctx context.Context, id string, download bool, d *meta.ShareDownload, now time.Time) error {
	now = meta.OrNow(now, time.Now())
	var used bool
	err := s.write(ctx, "use share", func(t *txn) error {
		used = false
		t.execN(func(n int64) error { used = n == 1; return nil }, metasql.UseShareSQL(dollar), metasql.UseShareArgs(id, download, now)...)
		if d == nil {
			return nil
		}
		if err := t.flush(); err != nil || !used {
			return err
		}
		t.exec(metasql.ShareDownloadUpsertSQL(dollar), metasql.ShareDownloadUpsertArgs(*d)...)
		return nil
	})
	if err != nil || used {
		return err
	}
	return meta.ShareRefusal(ctx, s.GetShare, id, now)
}

// ResumeShareDownload implements meta.Store.
func (s *Store) ResumeShareDownload(ctx context.Context, d meta.ShareDownload, maxResumes int, now time.Time) (bool, error) {
	now = meta.OrNow(now, time.Now())
	var resumed bool
	err := s.write(ctx, "resume share download", func(t *txn) error {
		resumed = false
		t.execN(func(n int64) error { resumed = n == 1; return nil },
			metasql.ResumeShareDownloadSQL(dollar), metasql.ResumeShareDownloadArgs(d, maxResumes, now)...)
		if err := t.flush(); err != nil || !resumed {
			return err
		}
		t.exec(metasql.TouchShareSQL(dollar), metasql.ToNanos(now), d.ShareID)
		return nil
	})
	return resumed && err == nil, err
}

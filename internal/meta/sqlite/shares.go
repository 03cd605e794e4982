package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// CreateShare implements meta.Store.
func (s *Store) CreateShare(ctx context.Context, sh meta.Share) error {
	sh, err := meta.CheckShare(sh, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, "INSERT INTO shares ("+metasql.ShareCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", metasql.ShareArgs(sh)...)
		return classify(err, "share %q", sh.ID)
	})
}

func (s *Store) getShare(ctx context.Context, col, v string) (meta.Share, error) {
	if err := s.ready(); err != nil {
		return meta.Share{}, err
	}
	sh, err := metasql.ScanShare(s.read().QueryRowContext(ctx, "SELECT "+metasql.ShareCols+" FROM shares WHERE "+col+" = ?", v))
	if errors.Is(err, sql.ErrNoRows) {
		return meta.Share{}, meta.ErrNoShare()
	}
	if err != nil {
		return meta.Share{}, classify(err, "get share")
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
	if err := s.ready(); err != nil {
		return nil, err
	}
	rows, err := s.read().QueryContext(ctx, "SELECT "+metasql.ShareCols+" FROM shares WHERE owner_id = ? ORDER BY created_at DESC, id", ownerID)
	if err != nil {
		return nil, classify(err, "list shares")
	}
	defer rows.Close()
	var out []meta.Share
	for rows.Next() {
		sh, err := metasql.ScanShare(rows)
		if err != nil {
			return nil, classify(err, "list shares")
		}
		out = append(out, sh)
	}
	return out, classify(rows.Err(), "list shares")
}

// SetShareExpiry implements meta.Store.
func (s *Store) SetShareExpiry(ctx context.Context, id string, expires time.Time) (meta.Share, error) {
	if err := meta.CheckShareExpiry(expires); err != nil {
		return meta.Share{}, err
	}
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, "UPDATE shares SET expires_at = ? WHERE id = ?", metasql.ToNanos(expires), id)
		if err != nil {
			return classify(err, "share expiry %q", id)
		}
		return mustAffect(res, meta.ErrNoShare())
	})
	if err != nil {
		return meta.Share{}, err
	}
	return s.GetShare(ctx, id)
}

// RevokeShare implements meta.Store.
func (s *Store) RevokeShare(ctx context.Context, id string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, "UPDATE shares SET revoked = 1 WHERE id = ?", id)
		if err != nil {
			return classify(err, "revoke share %q", id)
		}
		return mustAffect(res, meta.ErrNoShare())
	})
}

// DeleteShare implements meta.Store.
func (s *Store) DeleteShare(ctx context.Context, id string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, "DELETE FROM shares WHERE id = ?", id)
		if err != nil {
			return classify(err, "delete share %q", id)
		}
		return mustAffect(res, meta.ErrNoShare())
	})
}

// DeleteSpentGrants implements meta.Store.
func (s *Store) DeleteSpentGrants(ctx context.Context, ownerID string, now time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, metasql.DeleteSpentGrantsSQL(func(int) string { return "?" }), ownerID, metasql.ToNanos(now))
		if err != nil {
			return classify(err, "delete spent grants")
		}
		n, err = res.RowsAffected()
		return classify(err, "delete spent grants")
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
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		used = false
		res, err := c.ExecContext(ctx, metasql.UseShareSQL(q), metasql.UseShareArgs(id, download, now)...)
		if err != nil {
			return classify(err, "use share")
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return classify(err, "use share")
		}
		used = true
		if d == nil {
			return nil
		}
		_, err = c.ExecContext(ctx, metasql.ShareDownloadUpsertSQL(q), metasql.ShareDownloadUpsertArgs(*d)...)
		return classify(err, "record share download")
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
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		resumed = false
		res, err := c.ExecContext(ctx, metasql.ResumeShareDownloadSQL(q), metasql.ResumeShareDownloadArgs(d, maxResumes, now)...)
		if err != nil {
			return classify(err, "resume share download")
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return classify(err, "resume share download")
		}
		resumed = true
		_, err = c.ExecContext(ctx, metasql.TouchShareSQL(q), metasql.ToNanos(now), d.ShareID)
		return classify(err, "use share")
	})
	return resumed && err == nil, err
}

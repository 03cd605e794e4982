package sqlite

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var (
	insertShareSQL         = metasql.InsertShareSQL(ph)
	getShareSQL            = metasql.GetShareSQL("id", ph)
	getShareByHashSQL      = metasql.GetShareSQL("hash", ph)
	listSharesSQL          = metasql.ListSharesSQL(ph)
	deleteSpentGrantsSQL   = metasql.DeleteSpentGrantsSQL(ph)
	useShareSQL            = metasql.UseShareSQL(ph)
	shareDownloadUpsertSQL = metasql.ShareDownloadUpsertSQL(ph)
	resumeShareDownloadSQL = metasql.ResumeShareDownloadSQL(ph)
	touchShareSQL          = metasql.TouchShareSQL(ph)
)

// CreateShare implements meta.Store.
func (s *Store) CreateShare(ctx context.Context, sh meta.Share) error {
	sh, err := meta.CheckShare(sh, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, insertShareSQL, metasql.ShareArgs(sh)...)
		return classify(err, "share %q", sh.ID)
	})
}

// GetShare implements meta.Store.
func (s *Store) GetShare(ctx context.Context, id string) (meta.Share, error) {
	return get(ctx, s, "get share", metasql.ScanShare, meta.ErrNoShare(), getShareSQL, id)
}

// GetShareByHash implements meta.Store.
func (s *Store) GetShareByHash(ctx context.Context, hash string) (meta.Share, error) {
	return get(ctx, s, "get share", metasql.ScanShare, meta.ErrNoShare(), getShareByHashSQL, hash)
}

// ListShares implements meta.Store.
func (s *Store) ListShares(ctx context.Context, ownerID string) ([]meta.Share, error) {
	return list(ctx, s, "list shares", metasql.ScanShare, listSharesSQL, ownerID)
}

// SetShareExpiry implements meta.Store.
func (s *Store) SetShareExpiry(ctx context.Context, id string, expires time.Time) (meta.Share, error) {
	if err := meta.CheckShareExpiry(expires); err != nil {
		return meta.Share{}, err
	}
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrNoShare(), "share expiry", "UPDATE shares SET expires_at = ? WHERE id = ?", metasql.ToNanos(expires), id)
	})
	if err != nil {
		return meta.Share{}, err
	}
	return s.GetShare(ctx, id)
}

// RevokeShare implements meta.Store.
func (s *Store) RevokeShare(ctx context.Context, id string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrNoShare(), "revoke share", "UPDATE shares SET revoked = 1 WHERE id = ?", id)
	})
}

// DeleteShare implements meta.Store.
func (s *Store) DeleteShare(ctx context.Context, id string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrNoShare(), "delete share", "DELETE FROM shares WHERE id = ?", id)
	})
}

// DeleteSpentGrants implements meta.Store.
func (s *Store) DeleteSpentGrants(ctx context.Context, ownerID string, now time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		var err error
		n, err = execN(ctx, c, deleteSpentGrantsSQL, ownerID, metasql.ToNanos(now))
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
		n, err := execN(ctx, c, useShareSQL, metasql.UseShareArgs(id, download, now)...)
		used = n == 1 && err == nil
		if !used || d == nil {
			return classify(err, "use share")
		}
		_, err = c.ExecContext(ctx, shareDownloadUpsertSQL, metasql.ShareDownloadUpsertArgs(*d)...)
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
		n, err := execN(ctx, c, resumeShareDownloadSQL, metasql.ResumeShareDownloadArgs(d, maxResumes, now)...)
		resumed = n == 1 && err == nil
		if !resumed {
			return classify(err, "resume share download")
		}
		_, err = c.ExecContext(ctx, touchShareSQL, metasql.ToNanos(now), d.ShareID)
		return classify(err, "use share")
	})
	return resumed && err == nil, err
}

package postgres

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
	return s.write(ctx, "create share", func(t *txn) error {
		t.exec(insertShareSQL, metasql.ShareArgs(sh)...)
		return nil
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
		t.execN(affected(&n), deleteSpentGrantsSQL, ownerID, metasql.ToNanos(now))
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
	var n int64
	err := s.write(ctx, "use share", func(t *txn) error {
		t.execN(affected(&n), useShareSQL, metasql.UseShareArgs(id, download, now)...)
		if d == nil {
			return nil
		}
		if err := t.flush(); err != nil || n != 1 {
			return err
		}
		t.exec(shareDownloadUpsertSQL, metasql.ShareDownloadUpsertArgs(*d)...)
		return nil
	})
	if err != nil || n == 1 {
		return err
	}
	return meta.ShareRefusal(ctx, s.GetShare, id, now)
}

// ResumeShareDownload implements meta.Store.
func (s *Store) ResumeShareDownload(ctx context.Context, d meta.ShareDownload, maxResumes int, now time.Time) (bool, error) {
	now = meta.OrNow(now, time.Now())
	var n int64
	err := s.write(ctx, "resume share download", func(t *txn) error {
		t.execN(affected(&n), resumeShareDownloadSQL, metasql.ResumeShareDownloadArgs(d, maxResumes, now)...)
		if err := t.flush(); err != nil || n != 1 {
			return err
		}
		t.exec(touchShareSQL, metasql.ToNanos(now), d.ShareID)
		return nil
	})
	return n == 1 && err == nil, err
}

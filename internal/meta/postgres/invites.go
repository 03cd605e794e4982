package postgres

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var (
	insertInviteSQL    = metasql.InsertInviteSQL(ph)
	getInviteByHashSQL = metasql.GetInviteByHashSQL(ph)
	redeemInviteSQL    = metasql.RedeemInviteSQL(ph)
)

// CreateInvite implements meta.Store.
func (s *Store) CreateInvite(ctx context.Context, inv meta.Invite) error {
	inv, err := meta.CheckInvite(inv, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, "create invite", func(t *txn) error {
		t.exec(insertInviteSQL, metasql.InviteArgs(inv)...)
		return nil
	})
}

// GetInviteByHash implements meta.Store.
func (s *Store) GetInviteByHash(ctx context.Context, hash string) (meta.Invite, error) {
	return get(ctx, s, "get invite", metasql.ScanInvite, meta.ErrNoInvite(), getInviteByHashSQL, hash)
}

// ListInvites implements meta.Store.
func (s *Store) ListInvites(ctx context.Context) ([]meta.Invite, error) {
	return list(ctx, s, "list invites", metasql.ScanInvite, metasql.ListInvitesSQL)
}

// RevokeInvite implements meta.Store.
func (s *Store) RevokeInvite(ctx context.Context, id string) error {
	return s.write(ctx, "revoke invite", func(t *txn) error {
		t.execN(mustAffect(meta.ErrNoInvite()), "UPDATE invites SET revoked = true WHERE id = $1", id)
		return nil
	})
}

// CreateInvitedUser implements meta.Store: the conditional UPDATE that
// takes the invite's use is flushed (and checked) first, then the user is
// created in the same transaction, so a failed creation rolls the use
// back. A concurrent redemption of the same invite waits on its row lock
// and re-evaluates the condition after this one commits.
func (s *Store) CreateInvitedUser(ctx context.Context, u meta.User, b meta.Bucket, inviteHash string, now time.Time) error {
	now = meta.OrNow(now, time.Now())
	return s.createUser(ctx, u, b, func(t *txn) error {
		t.execN(mustAffect(meta.ErrInviteInvalid()), redeemInviteSQL, metasql.RedeemInviteArgs(inviteHash, u.Email, now)...)
		return t.flush()
	})
}

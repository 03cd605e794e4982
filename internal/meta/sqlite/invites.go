package sqlite

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
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, insertInviteSQL, metasql.InviteArgs(inv)...)
		return classify(err, "invite %q", inv.ID)
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
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrNoInvite(), "revoke invite", "UPDATE invites SET revoked = 1 WHERE id = ?", id)
	})
}

// CreateInvitedUser implements meta.Store: the invite's use is taken by
// the conditional UPDATE in the savepoint that then creates the user, so
// a failed creation rolls the use back with it.
func (s *Store) CreateInvitedUser(ctx context.Context, u meta.User, b meta.Bucket, inviteHash string, now time.Time) error {
	now = meta.OrNow(now, time.Now())
	return s.createUser(ctx, u, b, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrInviteInvalid(), "redeem invite", redeemInviteSQL, metasql.RedeemInviteArgs(inviteHash, u.Email, now)...)
	})
}

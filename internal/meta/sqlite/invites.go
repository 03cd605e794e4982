package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// CreateInvite implements meta.Store.
func (s *Store) CreateInvite(ctx context.Context, inv meta.Invite) error {
	inv, err := meta.CheckInvite(inv, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, "INSERT INTO invites ("+metasql.InviteCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", metasql.InviteArgs(inv)...)
		return classify(err, "invite %q", inv.ID)
	})
}

// GetInviteByHash implements meta.Store.
func (s *Store) GetInviteByHash(ctx context.Context, hash string) (meta.Invite, error) {
	if err := s.ready(); err != nil {
		return meta.Invite{}, err
	}
	inv, err := metasql.ScanInvite(s.read().QueryRowContext(ctx, "SELECT "+metasql.InviteCols+" FROM invites WHERE hash = ?", hash))
	if errors.Is(err, sql.ErrNoRows) {
		return meta.Invite{}, meta.ErrNoInvite()
	}
	if err != nil {
		return meta.Invite{}, classify(err, "get invite")
	}
	return inv, nil
}

// ListInvites implements meta.Store.
func (s *Store) ListInvites(ctx context.Context) ([]meta.Invite, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	rows, err := s.read().QueryContext(ctx, "SELECT "+metasql.InviteCols+" FROM invites ORDER BY created_at DESC, id")
	if err != nil {
		return nil, classify(err, "list invites")
	}
	defer rows.Close()
	var out []meta.Invite
	for rows.Next() {
		inv, err := metasql.ScanInvite(rows)
		if err != nil {
			return nil, classify(err, "list invites")
		}
		out = append(out, inv)
	}
	return out, classify(rows.Err(), "list invites")
}

// RevokeInvite implements meta.Store.
func (s *Store) RevokeInvite(ctx context.Context, id string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, "UPDATE invites SET revoked = 1 WHERE id = ?", id)
		if err != nil {
			return classify(err, "revoke invite %q", id)
		}
		return mustAffect(res, meta.ErrNoInvite())
	})
}

// CreateInvitedUser implements meta.Store: the invite's use is taken by
// the conditional UPDATE in the savepoint that then creates the user, so
// a failed creation rolls the use back with it.
func (s *Store) CreateInvitedUser(ctx context.Context, u meta.User, b meta.Bucket, inviteHash string, now time.Time) error {
	now = meta.OrNow(now, time.Now())
	return s.createUser(ctx, u, b, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, metasql.RedeemInviteSQL(func(int) string { return "?" }), metasql.RedeemInviteArgs(inviteHash, u.Email, now)...)
		if err != nil {
			return classify(err, "redeem invite")
		}
		return mustAffect(res, meta.ErrInviteInvalid())
	})
}

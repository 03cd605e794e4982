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

// CreateInvite implements meta.Store.
func (s *Store) CreateInvite(ctx context.Context, inv meta.Invite) error {
	inv, err := meta.CheckInvite(inv, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, "create invite", func(t *txn) error {
		t.exec("INSERT INTO invites ("+metasql.InviteCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)", metasql.InviteArgs(inv)...)
		return nil
	})
}

// GetInviteByHash implements meta.Store.
func (s *Store) GetInviteByHash(ctx context.Context, hash string) (meta.Invite, error) {
	var inv meta.Invite
	err := s.queryRow(ctx, "get invite", func(r pgx.Row) (err error) {
		inv, err = metasql.ScanInvite(r)
		if errors.Is(err, pgx.ErrNoRows) {
			return meta.ErrNoInvite()
		}
		return err
	}, "SELECT "+metasql.InviteCols+" FROM invites WHERE hash = $1", hash)
	if err != nil {
		return meta.Invite{}, err
	}
	return inv, nil
}

// ListInvites implements meta.Store.
func (s *Store) ListInvites(ctx context.Context) ([]meta.Invite, error) {
	var out []meta.Invite
	err := s.read(ctx, "list invites", func(c *pgx.Conn) error {
		out = nil
		rows, err := c.Query(ctx, "SELECT "+metasql.InviteCols+" FROM invites ORDER BY created_at DESC, id")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			inv, err := metasql.ScanInvite(rows)
			if err != nil {
				return err
			}
			out = append(out, inv)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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
		t.execN(mustAffect(meta.ErrInviteInvalid()), metasql.RedeemInviteSQL(func(n int) string { return "$" + strconv.Itoa(n) }),
			metasql.RedeemInviteArgs(inviteHash, u.Email, now)...)
		return t.flush()
	})
}

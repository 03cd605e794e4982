package metasql

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// inviteCols are the columns of an invite, in the order scanInvite reads
// them.
const inviteCols = "id, hash, email, uses, uses_left, created_by, created_at, expires_at, revoked"

// scanInvite reads an invite selected with inviteCols.
func scanInvite(r Row) (meta.Invite, error) {
	var inv meta.Invite
	var created, expires int64
	err := r.Scan(&inv.ID, &inv.Hash, &inv.Email, &inv.Uses, &inv.UsesLeft, &inv.CreatedBy, &created, &expires, &inv.Revoked)
	inv.CreatedAt, inv.ExpiresAt = FromNanos(created), FromNanos(expires)
	return inv, err
}

// insertInviteSQL inserts an invite: arguments inviteArgs.
func insertInviteSQL(ph PH) string {
	return "INSERT INTO invites (" + inviteCols + ") VALUES (" + values(ph, 1, 9) + ")"
}

// listInvitesSQL lists every invite, newest first (scanInvite).
const listInvitesSQL = "SELECT " + inviteCols + " FROM invites ORDER BY created_at DESC, id"

// inviteArgs are insertInviteSQL's arguments for an invite
// meta.CheckInvite returned.
func inviteArgs(inv meta.Invite) []any {
	return []any{inv.ID, inv.Hash, inv.Email, inv.Uses, inv.UsesLeft, inv.CreatedBy, ToNanos(inv.CreatedAt), ToNanos(inv.ExpiresAt), inv.Revoked}
}

// redeemInviteSQL is the conditional UPDATE that takes one use of an
// invite, with arguments redeemInviteArgs and placeholders made by ph: it
// changes one row exactly when the invite is meta.Invite.Redeemable, and
// none otherwise. Being one statement on one row, two concurrent
// redemptions of the last use cannot both change it (the second sees
// uses_left = 0 once the first commits: SQLite runs one writer; PostgreSQL
// re-evaluates the WHERE on the updated row at READ COMMITTED).
func redeemInviteSQL(ph PH) string {
	return "UPDATE invites SET uses_left = uses_left - 1 WHERE hash = " + ph(1) +
		" AND uses_left > 0 AND NOT revoked AND expires_at > " + ph(2) + " AND (email = '' OR email = " + ph(3) + ")"
}

// redeemInviteArgs are the arguments of redeemInviteSQL.
func redeemInviteArgs(hash, email string, now time.Time) []any {
	return []any{hash, ToNanos(now), email}
}

// GetInviteByHash implements meta.Invites.
func (o inviteOps) GetInviteByHash(ctx context.Context, hash string) (meta.Invite, error) {
	return Get(ctx, o.run, "get invite", scanInvite, func() error { return meta.ErrNoInvite() }, o.sql.invites.getByHash, hash)
}

// ListInvites implements meta.Invites.
func (o inviteOps) ListInvites(ctx context.Context) ([]meta.Invite, error) {
	return List(ctx, o.run, "list invites", scanInvite, listInvitesSQL)
}

// CreateInvite implements meta.Invites.
func (o inviteOps) CreateInvite(ctx context.Context, inv meta.Invite) error {
	inv, err := meta.CheckInvite(inv, time.Now())
	if err != nil {
		return err
	}
	return o.exec(ctx, "create invite", o.sql.invites.insert, inviteArgs(inv)...)
}

// RevokeInvite implements meta.Invites.
func (o inviteOps) RevokeInvite(ctx context.Context, id string) error {
	return o.mustChange(ctx, "revoke invite", meta.ErrNoInvite(), o.sql.invites.revoke, id)
}

// inviteSQL are the invites statements of Ops.
type inviteSQL struct {
	getByHash, insert, revoke, redeem string
}

func newInviteSQL(ph PH) inviteSQL {
	return inviteSQL{
		getByHash: "SELECT " + inviteCols + " FROM invites WHERE hash = " + ph(1),
		insert:    insertInviteSQL(ph),
		revoke:    "UPDATE invites SET revoked = true WHERE id = " + ph(1),
		redeem:    redeemInviteSQL(ph),
	}
}

// CreateInvitedUser implements meta.Accounts: the conditional UPDATE that
// takes the invite's use runs first, then the user is created in the same
// transaction, so a failed creation rolls the use back. A concurrent
// redemption of the same invite waits for this one (SQLite's single
// writer; PostgreSQL's row lock, after which it re-evaluates the
// condition).
func (o inviteOps) CreateInvitedUser(ctx context.Context, u meta.User, b meta.Bucket, inviteHash string, now time.Time) error {
	now = meta.OrNow(now, time.Now())
	return o.createUser(ctx, u, b, func(w Writer) error {
		n, err := w.Exec(o.sql.invites.redeem, redeemInviteArgs(inviteHash, u.Email, now)...)
		if err == nil && n == 0 {
			err = meta.ErrInviteInvalid()
		}
		return err
	})
}

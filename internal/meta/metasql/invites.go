package metasql

import (
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// InviteCols are the columns of an invite, in the order ScanInvite reads
// them.
const InviteCols = "id, hash, email, uses, uses_left, created_by, created_at, expires_at, revoked"

// ScanInvite reads an invite selected with InviteCols.
func ScanInvite(r Row) (meta.Invite, error) {
	var inv meta.Invite
	var created, expires int64
	err := r.Scan(&inv.ID, &inv.Hash, &inv.Email, &inv.Uses, &inv.UsesLeft, &inv.CreatedBy, &created, &expires, &inv.Revoked)
	inv.CreatedAt, inv.ExpiresAt = FromNanos(created), FromNanos(expires)
	return inv, err
}

// InsertInviteSQL inserts an invite: arguments InviteArgs.
func InsertInviteSQL(ph PH) string {
	return "INSERT INTO invites (" + InviteCols + ") VALUES (" + Values(ph, 1, 9) + ")"
}

// GetInviteByHashSQL reads the invite of hash ph(1) (ScanInvite).
func GetInviteByHashSQL(ph PH) string {
	return "SELECT " + InviteCols + " FROM invites WHERE hash = " + ph(1)
}

// ListInvitesSQL lists every invite, newest first (ScanInvite).
const ListInvitesSQL = "SELECT " + InviteCols + " FROM invites ORDER BY created_at DESC, id"

// InviteArgs are InsertInviteSQL's arguments for an invite
// meta.CheckInvite returned.
func InviteArgs(inv meta.Invite) []any {
	return []any{inv.ID, inv.Hash, inv.Email, inv.Uses, inv.UsesLeft, inv.CreatedBy, ToNanos(inv.CreatedAt), ToNanos(inv.ExpiresAt), inv.Revoked}
}

// RedeemInviteSQL is the conditional UPDATE that takes one use of an
// invite, with arguments RedeemInviteArgs and placeholders made by ph: it
// changes one row exactly when the invite is meta.Invite.Redeemable, and
// none otherwise. Being one statement on one row, two concurrent
// redemptions of the last use cannot both change it (the second sees
// uses_left = 0 once the first commits: SQLite runs one writer; PostgreSQL
// re-evaluates the WHERE on the updated row at READ COMMITTED).
func RedeemInviteSQL(ph PH) string {
	return "UPDATE invites SET uses_left = uses_left - 1 WHERE hash = " + ph(1) +
		" AND uses_left > 0 AND NOT revoked AND expires_at > " + ph(2) + " AND (email = '' OR email = " + ph(3) + ")"
}

// RedeemInviteArgs are the arguments of RedeemInviteSQL.
func RedeemInviteArgs(hash, email string, now time.Time) []any {
	return []any{hash, ToNanos(now), email}
}

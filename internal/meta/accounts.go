package meta

import (
	"context"
	"time"
)

// Accounts keeps the user accounts (the records; package auth holds the
// rules). Part of Stores, like every role; all methods are safe for
// concurrent use.
type Accounts interface {
	// CreateUser creates u and its default bucket b (b.OwnerID == u.ID) in
	// one transaction. AlreadyExists if the email or bucket name is taken.
	CreateUser(ctx context.Context, u User, b Bucket) error
	// CreateInvitedUser is CreateUser that redeems one use of the invite
	// whose code has hash inviteHash, in the same transaction: the use is
	// taken only if the invite is Redeemable(u.Email, now), by a
	// conditional update, so of concurrent signups on its last use exactly
	// one succeeds. ErrInviteInvalid if it is not redeemable (nothing
	// changes); if the user cannot be created (AlreadyExists, ...) the use
	// is not taken either.
	CreateInvitedUser(ctx context.Context, u User, b Bucket, inviteHash string, now time.Time) error
	GetUser(ctx context.Context, id string) (User, error)
	// GetUserByEmail looks up by normalised email; NotFound if none.
	GetUserByEmail(ctx context.Context, email string) (User, error)
	// SetQuota sets a user's quota in bytes (0 = unlimited).
	SetQuota(ctx context.Context, userID string, quotaBytes int64) error
	// UpdateUser applies the non-nil fields of upd in one statement and
	// returns the user as it is after; NotFound if there is no such user,
	// InvalidArgument for a negative quota or an empty update. With
	// upd.RevokeRefreshTokens, every refresh token of the user is revoked
	// in the same transaction.
	UpdateUser(ctx context.Context, userID string, upd UserUpdate) (User, error)
	// ListUsers returns a page of users in email order and whether more
	// exist (continue with After = the last email).
	ListUsers(ctx context.Context, opts ListUsersOptions) ([]User, bool, error)
	// DeleteUser deletes the user, its access keys and refresh tokens and
	// its empty buckets, in one transaction. Without purge, a user whose
	// buckets hold objects or multipart uploads in progress is refused
	// with Conflict (Detail: "reason" = "user_owns_data", "objects",
	// "uploads", "buckets" — the names of the buckets holding them, at
	// most 10) and nothing changes. With purge, every bucket of the user
	// goes with its objects and uploads, the user's stagings are deleted,
	// and every blob they point at is queued for reclamation (the
	// janitor re-checks each before deleting it). NotFound if there is no
	// such user.
	DeleteUser(ctx context.Context, userID string, purge bool) (DeleteUserResult, error)
	// Counts returns totals over the store.
	Counts(ctx context.Context) (Counts, error)
}

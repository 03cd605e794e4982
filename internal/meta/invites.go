package meta

import (
	"context"
)

// Invites keeps the invitations of the "invite" signup policy; a signup
// redeems one with Accounts.CreateInvitedUser.
type Invites interface {
	// CreateInvite stores inv with UsesLeft = Uses (a given UsesLeft is
	// ignored) and Revoked false. A zero CreatedAt is set to now.
	// InvalidArgument without an ID, a hash or an expiry, or with Uses < 1;
	// AlreadyExists if the ID or the hash is taken.
	CreateInvite(ctx context.Context, inv Invite) error
	// GetInviteByHash returns the invite whose code has hash; NotFound if
	// none.
	GetInviteByHash(ctx context.Context, hash string) (Invite, error)
	// ListInvites returns every invite, newest CreatedAt first (ties by
	// ID), used up, expired and revoked ones included.
	ListInvites(ctx context.Context) ([]Invite, error)
	// RevokeInvite revokes the invite with id; NotFound if there is none.
	// Revoking a revoked invite succeeds.
	RevokeInvite(ctx context.Context, id string) error
}

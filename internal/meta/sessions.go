package meta

import (
	"context"
	"time"
)

// Sessions keeps the rotating refresh tokens of logins (see RefreshToken).
type Sessions interface {
	CreateRefreshToken(ctx context.Context, t RefreshToken) error
	// RotateRefreshToken consumes the token with hash oldHash and stores
	// next in its place (next.UserID and next.Family are taken from the old
	// token), returning the stored next. Unauthenticated if the old token
	// is unknown, expired or revoked, if its user is disabled, or if it
	// was created before its user's SessionsAfter; all of it is judged
	// in the transaction of the rotation, so a rotation concurrent with an
	// UpdateUser that disables the user or revokes its tokens either
	// fails or happens before it (and its token is then revoked too). If
	// it was already used, the whole family is revoked (reuse detection)
	// and Unauthenticated is returned. Exactly one of many concurrent
	// rotations of one token succeeds.
	RotateRefreshToken(ctx context.Context, oldHash string, next RefreshToken, now time.Time) (RefreshToken, error)
	// RevokeRefreshFamily revokes every token of the family that the token
	// with hash belongs to. NotFound if the hash is unknown.
	RevokeRefreshFamily(ctx context.Context, hash string) error
	// DeleteExpiredRefreshTokens removes tokens that expired before t.
	DeleteExpiredRefreshTokens(ctx context.Context, before time.Time) (int, error)
}

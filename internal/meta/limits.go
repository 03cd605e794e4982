package meta

import (
	"context"
	"time"
)

// UserLimits is an administrator's rate limit override for one user:
// Requests and Bytes per Window (0: the server's default for that part).
type UserLimits struct {
	UserID          string
	Requests, Bytes int64
	Window          time.Duration
}

// Limits keeps the administrators' per-user rate limit overrides and the
// blocks of cluster-wide rate limits.
type Limits interface {
	// SetUserLimits stores l (replacing any); with Requests and Bytes both
	// 0 it removes the override. NotFound if there is no such user;
	// InvalidArgument for negative numbers or a window under a second.
	SetUserLimits(ctx context.Context, l UserLimits) error
	// GetUserLimits returns the override of user id; NotFound if none.
	GetUserLimits(ctx context.Context, id string) (UserLimits, error)
	// ReserveRate takes up to block tokens of (dim, key)'s limit in the
	// fixed window starting at windowStart (Unix ms), and returns how many
	// it got (0 when the window's limit is spent).
	ReserveRate(ctx context.Context, dim, key string, windowStart, block, limit int64) (int64, error)
}

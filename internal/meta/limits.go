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
	// UpdateThrottles reads the states of keys (in their order; the zero
	// state for a key without one, or whose state expired before now),
	// hands them to fn, and stores what fn returns, in one transaction
	// that holds the keys locked, so that the updates of a key by every
	// process sharing the store are serialised. fn may run more than once
	// (a retried transaction) and must only compute; it returns one state
	// per key, or nil to store nothing. A state whose Expires is not after
	// now is forgotten. keys must not repeat, and are text without NUL.
	UpdateThrottles(ctx context.Context, now time.Time, keys []string, fn func(states []ThrottleState) []ThrottleState) error
}

// ThrottleState is what a shared store keeps of one throttle key (the
// login and signup throttles of package auth), to the millisecond.
type ThrottleState struct {
	Start   time.Time     // the fixed window's start
	Count   int64         // attempts counted in it
	Delay   time.Duration // a back-off's current delay
	Until   time.Time     // the end of the back-off's delay
	Expires time.Time     // when the state may be forgotten
}

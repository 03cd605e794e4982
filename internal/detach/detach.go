// Package detach runs work that must outlive the request that started it:
// a metadata commit after the blob is durable, the abort of a backend
// upload, the release of a reservation, a cache fill other readers wait
// for. Such work must not stop when the client goes away (what it may
// already have acknowledged by side effect must stay consistent), and must
// not hang forever on a stuck store either: it keeps the request's values
// (its logger, trace and announcement context) but neither its
// cancellation nor its deadline, and gets a bound of its own.
//
// Every such place in Coffer calls this package; none writes
// context.WithoutCancel by hand.
package detach

import (
	"context"
	"time"
)

// Timeout bounds detached work that names no other bound: long enough for
// a commit or an abort on a loaded store, short enough that a store that
// stopped answering does not hold a goroutine for good.
const Timeout = 30 * time.Second

// Context returns a context with ctx's values, cancelled only by the
// returned function or after Timeout.
func Context(ctx context.Context) (context.Context, context.CancelFunc) {
	return WithTimeout(ctx, Timeout)
}

// WithTimeout is Context with the bound d.
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

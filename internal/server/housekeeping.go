package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// housekeeping is the part of every node's janitor that deletes metadata
// rows nothing will use again (the object service's janitor reclaims
// blobs and expired uploads): refresh tokens and share links that expired
// grace ago (config.Config.DeadRowGrace, docs/operations.md, "What the
// janitor deletes"). Until then a refresh token that was used already
// still trips reuse detection (presenting it revokes its family), and a
// share link's owner still sees it ended — expired, revoked or used up
// (every link expires) — and may extend an expired one. Nodes sharing a
// store may run it at once: a row goes once, whoever deletes it.
type housekeeping struct {
	sessions meta.Sessions
	shares   meta.Shares
	grace    time.Duration
	log      *slog.Logger
	now      func() time.Time
}

// run calls once now and then every interval until ctx is done.
func (h housekeeping) run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		h.once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// once deletes what expired before now - grace.
func (h housekeeping) once(ctx context.Context) {
	before := h.now().Add(-h.grace)
	for _, p := range []struct {
		what  string
		purge func(context.Context, time.Time) (int, error)
	}{
		{"refresh tokens", h.sessions.DeleteExpiredRefreshTokens},
		{"share links", h.shares.DeleteExpiredShares},
	} {
		if n, err := p.purge(ctx, before); err != nil && ctx.Err() == nil {
			h.log.Warn("deleting expired "+p.what+" failed", "err", err)
		} else if n > 0 {
			h.log.Info("deleted expired "+p.what, "count", n, "expired_before", before)
		}
	}
}

package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
)

// deadRowGrace is the default config.Config.DeadRowGrace (30 days).
var deadRowGrace = config.Defaults().DeadRowGrace

// deadAndLive records, in m, a refresh token and a share link that
// expired deadRowGrace and an hour before now (dead), and one of each
// that expired deadRowGrace less an hour before now (within the grace),
// and returns the hashes of the tokens and the IDs of the shares.
func deadAndLive(t *testing.T, m meta.Stores, now time.Time) (deadToken, liveToken, deadShare, liveShare string) {
	t.Helper()
	ctx := t.Context()
	if err := m.Accounts.CreateUser(ctx, meta.User{ID: "u1", Email: "u1@example.com", CreatedAt: now},
		meta.Bucket{Name: "u1-home", OwnerID: "u1", Visibility: meta.Private, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	for i, exp := range []time.Time{now.Add(-deadRowGrace - time.Hour), now.Add(-deadRowGrace + time.Hour)} {
		tok := meta.RefreshToken{Hash: fmt.Sprintf("token-%d", i), UserID: "u1", Family: fmt.Sprintf("f%d", i),
			CreatedAt: exp.Add(-time.Hour), ExpiresAt: exp}
		if err := m.Sessions.CreateRefreshToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		sh := meta.Share{ID: fmt.Sprintf("share-%d", i), Hash: fmt.Sprintf("%064x", i), OwnerID: "u1", Bucket: "u1-home", Key: "k",
			CreatedAt: exp.Add(-time.Hour), ExpiresAt: exp}
		if err := m.Shares.CreateShare(ctx, sh); err != nil {
			t.Fatal(err)
		}
	}
	return "token-0", "token-1", "share-0", "share-1"
}

// gone reports whether the refresh token with hash is no longer stored.
func tokenGone(t *testing.T, m meta.Stores, hash string) bool {
	t.Helper()
	err := m.Sessions.RevokeRefreshFamily(t.Context(), hash)
	if err != nil && !errcode.Is(err, errcode.NotFound) {
		t.Fatal(err)
	}
	return errcode.Is(err, errcode.NotFound)
}

// shareGone reports whether the share link id is no longer stored.
func shareGone(t *testing.T, m meta.Stores, id string) bool {
	t.Helper()
	_, err := m.Shares.GetShare(t.Context(), id)
	if err != nil && !errcode.Is(err, errcode.NotFound) {
		t.Fatal(err)
	}
	return errcode.Is(err, errcode.NotFound)
}

// TestHousekeeping: one pass of the janitor's housekeeping deletes the
// refresh tokens and share links that expired more than deadRowGrace ago,
// and keeps those within it.
func TestHousekeeping(t *testing.T) {
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meta.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := db.Stores()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	deadTok, liveTok, deadShare, liveShare := deadAndLive(t, m, now)
	h := housekeeping{sessions: m.Sessions, shares: m.Shares, grace: deadRowGrace, log: slog.New(slog.DiscardHandler), now: func() time.Time { return now }}
	h.once(t.Context())
	if !tokenGone(t, m, deadTok) || !shareGone(t, m, deadShare) {
		t.Error("a refresh token or share link that expired deadRowGrace ago is still stored")
	}
	if tokenGone(t, m, liveTok) || shareGone(t, m, liveShare) {
		t.Error("a refresh token or share link that expired within deadRowGrace was deleted")
	}
}

// TestRunStartsHousekeeping: a running server's janitor does the
// housekeeping (it was never called: refresh tokens and share links
// stayed forever).
func TestRunStartsHousekeeping(t *testing.T) {
	cfg := config.Defaults()
	cfg.Data = t.TempDir()
	cfg.Listen, cfg.S3Listen = "127.0.0.1:0", "off"
	s, err := New(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	deadTok, liveTok, deadShare, liveShare := deadAndLive(t, s.meta, time.Now())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, io.Discard) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	for deadline := time.Now().Add(time.Minute); !tokenGone(t, s.meta, deadTok) || !shareGone(t, s.meta, deadShare); {
		if time.Now().After(deadline) {
			t.Fatal("the running server did not delete a refresh token and a share link that expired deadRowGrace ago")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if tokenGone(t, s.meta, liveTok) || shareGone(t, s.meta, liveShare) {
		t.Error("the running server deleted a refresh token or share link that expired within deadRowGrace")
	}
}

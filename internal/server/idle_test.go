package server

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
)

// TestIdleTrim: once the node has gone --idle-trim without a request, it
// gives its free memory back (SQLite's page caches, the Go heap's free
// pages) once, and again only after a request has come and gone; with
// --idle-trim 0 it never does.
func TestIdleTrim(t *testing.T) {
	cfg := config.Defaults()
	cfg.Data, cfg.IdleTrim = t.TempDir(), time.Millisecond
	s, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.stores.ReleaseMemory == nil {
		t.Fatal("the SQLite store offers no ReleaseMemory")
	}
	if err := s.stores.ReleaseMemory(t.Context()); err != nil {
		t.Fatalf("ReleaseMemory: %v", err)
	}
	waitTrims := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); s.idleTrims.Load() < n; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d idle trims, want %d", s.idleTrims.Load(), n)
			}
		}
	}
	waitTrims(1) // quiet since the start
	s.handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/me", nil))
	waitTrims(2)

	cfg.Data, cfg.IdleTrim = t.TempDir(), 0
	u, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if u.admission.Config().OnIdle != nil {
		t.Error("--idle-trim 0: an idle hook is set")
	}
}

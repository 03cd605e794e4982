package server

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/exemap"
	"github.com/coffer-storage/coffer/internal/gcfloor"
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

// TestIdleTrimReleasesExecutable: the idle trim unmaps the executable's
// read-only pages that this process had mapped (the inits' and the
// requests' code), which the next request maps back as it runs them.
func TestIdleTrimReleasesExecutable(t *testing.T) {
	if runtime.GOOS != "linux" || exemap.Report().Off {
		t.Skip("exemap does nothing here")
	}
	cfg := config.Defaults()
	cfg.Data, cfg.IdleTrim = t.TempDir(), 300*time.Millisecond
	s, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/me", nil))
	before, err := exemap.Resident()
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); s.idleTrims.Load() < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no idle trim")
		}
	}
	after, err := exemap.Resident()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the executable's read-only pages mapped: %d KiB before the trim, %d KiB after", before>>10, after>>10)
	if after > before/2 {
		t.Errorf("after the idle trim %d KiB of the executable still mapped (before: %d KiB)", after>>10, before>>10)
	}
}

// TestHeapFloor: the node arms the heap floor (--heap-floor, package
// gcfloor) with its first request, not at start (a node that has served
// nothing keeps its start-up heap small) nor with a probe (they come to
// idle nodes too), and the idle trim disarms it
// before its collections; --heap-floor 0 never arms it.
func TestHeapFloor(t *testing.T) {
	defer gcfloor.Disarm()
	gcfloor.Disarm()
	cfg := config.Defaults()
	cfg.Data, cfg.IdleTrim, cfg.HeapFloor = t.TempDir(), 300*time.Millisecond, 48<<20
	s, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/readyz", nil))
	if got := gcfloor.Armed(); got != 0 {
		t.Fatalf("armed at %d before any request but a probe", got)
	}
	s.handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/me", nil))
	if got := gcfloor.Armed(); got != 48<<20 {
		t.Fatalf("after a request: armed at %d, want %d", got, 48<<20)
	}
	for deadline := time.Now().Add(time.Minute); s.idleTrims.Load() < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no idle trim")
		}
	}
	if got := gcfloor.Armed(); got != 0 {
		t.Fatalf("after the idle trim: armed at %d", got)
	}

	cfg.Data, cfg.HeapFloor = t.TempDir(), 0
	u, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	u.handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/me", nil))
	if got := gcfloor.Armed(); got != 0 {
		t.Fatalf("--heap-floor 0: armed at %d", got)
	}
}

package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"
)

func TestParseAt(t *testing.T) {
	for in, want := range map[string]time.Time{
		"":                            {},
		"latest":                      {},
		"2026-11-28T04:05:06Z":        time.Date(2026, 11, 28, 4, 5, 6, 0, time.UTC),
		"2026-11-28T05:05:06.5+01:00": time.Date(2026, 11, 28, 4, 5, 6, 5e8, time.UTC),
		"1795000000":                  time.Unix(1795000000, 0),
	} {
		got, err := parseAt(in)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseAt(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-5", "2026-11-28"} {
		if _, err := parseAt(bad); err == nil {
			t.Errorf("parseAt(%q) accepted", bad)
		}
	}
}

// TestRestoreUsage: missing flags and a bad --at are usage errors (2); a
// missing replica is an error (1).
func TestRestoreUsage(t *testing.T) {
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"restore", "--data", dir},
		{"restore", "--from", dir},
		{"restore", "--from", dir, "--data", filepath.Join(dir, "x"), "--at", "soon"},
	} {
		if code := Run(context.Background(), args, env); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, errb.String())
		}
	}
	if code := Run(context.Background(), []string{"restore", "--from", filepath.Join(dir, "missing"), "--data", filepath.Join(dir, "new")}, env); code != 1 {
		t.Errorf("missing replica: exit %d, want 1: %s", code, errb.String())
	}
}

// FuzzParseAt: --at never panics, and what it accepts is latest (the
// zero time) or a time it prints back as the same instant.
func FuzzParseAt(f *testing.F) {
	for _, s := range []string{"latest", "", "2026-11-28T04:05:06Z", "2026-11-28T04:05:06.123456789+01:00", "1764302706", "1764302706.5", "-1", "1e400", "NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		at, err := parseAt(s)
		if err != nil || at.IsZero() {
			return
		}
		if at.Year() < 1970 {
			t.Fatalf("parseAt(%q) = %v: before the epoch", s, at)
		}
	})
}

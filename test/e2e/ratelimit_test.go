package e2e

import (
	"encoding/json"
	"io"
	"strconv"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestRateLimits: each dimension (user, S3 access key, anonymous client
// address) has its own token bucket; every limited response carries the
// RateLimit-Policy and RateLimit fields; the one over the limit gets 429
// problem+json (file API) or SlowDown (S3) with Retry-After; probes are
// never limited.
func TestRateLimits(t *testing.T) {
	srv := testenv.Start(t, "--rate-user", "3/h", "--rate-key", "3/h", "--rate-anonymous", "6/h")
	a := srv.NewUser(t) // signup + login: 2 anonymous requests
	b := srv.NewUser(t) // 2 more
	s3u := newS3User(t, srv)

	t.Run("user", func(t *testing.T) {
		for i := range 3 {
			resp := a.Do(t, "GET", "/api/v1/me", nil)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("request %d: %d", i+1, resp.StatusCode)
			}
			if got, want := resp.Header.Get("RateLimit-Policy"), `"requests";q=3;w=3600`; got != want {
				t.Errorf("RateLimit-Policy %q, want %q", got, want)
			}
			if got, want := resp.Header.Get("RateLimit"), `"requests";r=`+strconv.Itoa(2-i)+`;t=`; len(got) < len(want) || got[:len(want)] != want {
				t.Errorf("request %d: RateLimit %q, want prefix %q", i+1, got, want)
			}
		}
		resp := a.Do(t, "GET", "/api/v1/me", nil)
		defer resp.Body.Close()
		var p struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		}
		json.NewDecoder(resp.Body).Decode(&p)
		if resp.StatusCode != 429 || p.Status != 429 || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("over the limit: %d %q %+v, want 429 problem+json", resp.StatusCode, resp.Header.Get("Content-Type"), p)
		}
		if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < 1 {
			t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
		}
		if got := resp.Header.Get("RateLimit"); got == "" || got[:len(`"requests";r=0`)] != `"requests";r=0` {
			t.Errorf("RateLimit on the refusal %q", got)
		}
		// Another user has a bucket of its own.
		if st := b.JSON(t, "GET", "/api/v1/me", nil, nil); st != 200 {
			t.Errorf("another user: %d", st)
		}
	})

	t.Run("probes are never limited", func(t *testing.T) {
		anon := testenv.NewClient(srv.URL)
		for range 10 {
			for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
				resp := anon.Do(t, "GET", p, nil)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || resp.Header.Get("RateLimit") != "" {
					t.Fatalf("%s: %d, RateLimit %q", p, resp.StatusCode, resp.Header.Get("RateLimit"))
				}
			}
		}
	})

	t.Run("S3 access key", func(t *testing.T) {
		for i := range 3 {
			if r := s3u.s3(t, "GET", "/", nil, ""); r.status != 200 || r.header.Get("RateLimit") == "" {
				t.Fatalf("request %d: %d, RateLimit %q", i+1, r.status, r.header.Get("RateLimit"))
			}
		}
		r := s3u.s3(t, "GET", "/", nil, "")
		if r.code != "SlowDown" || r.header.Get("Retry-After") == "" {
			t.Errorf("over the limit: %d %s, Retry-After %q; want SlowDown", r.status, r.code, r.header.Get("Retry-After"))
		}
	})

	t.Run("anonymous client address", func(t *testing.T) {
		// Signups and logins took the 6 anonymous requests.
		anon := testenv.NewClient(srv.URL)
		resp := anon.Do(t, "GET", testenv.FileURL(a.Bucket, "x"), nil)
		resp.Body.Close()
		if resp.StatusCode != 429 || resp.Header.Get("RateLimit-Policy") != `"requests";q=6;w=3600` {
			t.Errorf("anonymous over the limit: %d, RateLimit-Policy %q", resp.StatusCode, resp.Header.Get("RateLimit-Policy"))
		}
	})
}

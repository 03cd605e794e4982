package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
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

// TestRateLimitOverride: an administrator raises one user's request quota
// above the default (bad bodies and unknown users refused); it applies and
// shows in the headers.
func TestRateLimitOverride(t *testing.T) {
	srv := testenv.Start(t, "--rate-user", "7/h") // the admin's 6 requests fit
	admin := newAdmin(t, srv)
	u := srv.NewUser(t)
	var uid struct{ ID string }
	// Set the override before the user's first limited request (which
	// would cache "no override" for 10 s), finding the user by email.
	var list struct {
		Users []struct {
			ID    string `json:"id"`
			Email string `json:"email"`
		} `json:"users"`
	}
	if st := admin.JSON(t, "GET", "/api/v1/admin/users?q="+u.Email, nil, &list); st != 200 || len(list.Users) != 1 {
		t.Fatalf("admin list: %d %+v", st, list)
	}
	uid.ID = list.Users[0].ID
	path := "/api/v1/admin/users/" + uid.ID + "/limits"
	for _, bad := range []map[string]any{{"requests": -1, "bytes": 0}, {"requests": 1}, {"requests": 1, "bytes": 0, "window_seconds": 0}} {
		if st := admin.JSON(t, "PUT", path, bad, nil); st != 400 {
			t.Errorf("PUT %v: %d, want 400", bad, st)
		}
	}
	if st := admin.JSON(t, "PUT", "/api/v1/admin/users/nobody/limits", map[string]any{"requests": 1, "bytes": 0}, nil); st != 404 {
		t.Errorf("PUT limits of nobody: %d, want 404", st)
	}
	var got struct {
		Requests      int64 `json:"requests"`
		WindowSeconds int64 `json:"window_seconds"`
		Override      bool  `json:"override"`
	}
	if st := admin.JSON(t, "PUT", path, map[string]any{"requests": 8, "bytes": 0, "window_seconds": 3600}, &got); st != 200 || got.Requests != 8 || !got.Override || got.WindowSeconds != 3600 {
		t.Fatalf("PUT limits: %d %+v", st, got)
	}
	for i := range 8 {
		resp := u.Do(t, "GET", "/api/v1/me", nil)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d of 8: %d", i+1, resp.StatusCode)
		}
		if got, want := resp.Header.Get("RateLimit-Policy"), `"requests";q=8;w=3600`; got != want {
			t.Fatalf("RateLimit-Policy %q, want %q", got, want)
		}
	}
	resp := u.Do(t, "GET", "/api/v1/me", nil)
	resp.Body.Close()
	if resp.StatusCode != 429 {
		t.Errorf("request 9: %d, want 429", resp.StatusCode)
	}
}

// TestShareRateLimit: requests through a link are charged to the link
// (--rate-share): the fourth of a 3/h link is refused with the headers,
// while another link of the same owner is unaffected.
func TestShareRateLimit(t *testing.T) {
	srv := testenv.Start(t, "--rate-share", "3/h")
	a := srv.NewUser(t)
	var links [2]struct {
		URL string `json:"url"`
	}
	for i, k := range []string{"one.txt", "two.txt"} {
		resp := a.Do(t, "PUT", testenv.FileURL(a.Bucket, k), strings.NewReader("shared "+k))
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("put %s: %d", k, resp.StatusCode)
		}
		if st := a.JSON(t, "POST", "/api/v1/shares", map[string]any{"bucket": a.Bucket, "key": k}, &links[i]); st != 201 {
			t.Fatalf("share %s: %d", k, st)
		}
	}
	anon := testenv.NewClient(srv.URL)
	get := func(url string) *http.Response {
		resp := anon.Do(t, "GET", url, nil)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i := range 3 {
		if resp := get(links[0].URL); resp.StatusCode != 200 || resp.Header.Get("RateLimit-Policy") != `"requests";q=3;w=3600` {
			t.Fatalf("download %d through the link: %d, RateLimit-Policy %q", i+1, resp.StatusCode, resp.Header.Get("RateLimit-Policy"))
		}
	}
	resp := get(links[0].URL)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("fourth download through a 3/h link: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := get(links[1].URL); resp.StatusCode != 200 {
		t.Errorf("another link of the same owner: %d, want 200", resp.StatusCode)
	}
}

package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSignupLimitFailsFast: a server that refuses signups with a long
// Retry-After (its per-address signup limit) or with 403 (its signup
// policy) fails the setup at once with a hint, instead of retrying for an
// hour.
func TestSignupLimitFailsFast(t *testing.T) {
	for _, tc := range []struct {
		status     int
		retryAfter string
		hint       string
	}{
		{429, "3540", "--signup-rate 0"},
		{403, "", "--signup open"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tc.retryAfter != "" {
				w.Header().Set("Retry-After", tc.retryAfter)
			}
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(tc.status)
			io.WriteString(w, `{"code":"x"}`)
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var counters byteCounters
		d := &retrier{c: &caller{client: newHTTPClient(4, 5*time.Second, &counters), timeout: 5 * time.Second}}
		start := time.Now()
		err := createAccount(ctx, d, srv.URL, "", &user{email: "a@example.com", password: "correct horse battery"})
		if err == nil || !strings.Contains(err.Error(), tc.hint) {
			t.Errorf("%d: err = %v, want a hint %q", tc.status, err, tc.hint)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%d: gave up after %v", tc.status, took)
		}
		cancel()
		srv.Close()
	}
}

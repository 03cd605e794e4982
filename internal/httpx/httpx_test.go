package httpx

import (
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func TestParseRange(t *testing.T) {
	tests := []struct {
		h          string
		size       int64
		res        RangeResult
		start, len int64
	}{
		{"", 10, RangeNone, 0, 0},
		{"bytes=0-0", 10, RangeOK, 0, 1},
		{"bytes=2-5", 10, RangeOK, 2, 4},
		{"bytes=2-", 10, RangeOK, 2, 8},
		{"bytes=2-100", 10, RangeOK, 2, 8},
		{"bytes=-3", 10, RangeOK, 7, 3},
		{"bytes=-30", 10, RangeOK, 0, 10},
		{"BYTES=1-1", 10, RangeOK, 1, 1},
		{" bytes=1-1 ", 10, RangeOK, 1, 1}, // the field value's own whitespace
		// RFC 9110's grammar has no whitespace inside the specifier: not
		// a range, so the whole representation (S3 answers 200 too).
		{"bytes= -1", 10, RangeNone, 0, 0},
		{"bytes=0 -1", 10, RangeNone, 0, 0},
		{"bytes=1- 2", 10, RangeNone, 0, 0},
		{"bytes =1-1", 10, RangeNone, 0, 0},
		{"bytes=\t1-1", 10, RangeNone, 0, 0},
		{"bytes=--1", 10, RangeNone, 0, 0},
		{"bytes=0--1", 10, RangeNone, 0, 0},
		{"bytes=10-", 10, RangeUnsatisfiable, 0, 0},
		{"bytes=10-20", 10, RangeUnsatisfiable, 0, 0},
		{"bytes=-0", 10, RangeUnsatisfiable, 0, 0},
		{"bytes=0-", 0, RangeUnsatisfiable, 0, 0},
		{"bytes=-5", 0, RangeUnsatisfiable, 0, 0},
		{"bytes=5-2", 10, RangeNone, 0, 0},
		{"bytes=0-1,3-4", 10, RangeNone, 0, 0},
		{"items=0-1", 10, RangeNone, 0, 0},
		{"bytes=a-b", 10, RangeNone, 0, 0},
		{"bytes=+1-2", 10, RangeNone, 0, 0},
		{"bytes=1", 10, RangeNone, 0, 0},
		{"bytes=99999999999999999999-", 10, RangeNone, 0, 0},
	}
	for _, tc := range tests {
		res, s, n := ParseRange(tc.h, tc.size)
		if res != tc.res || s != tc.start || n != tc.len {
			t.Errorf("ParseRange(%q, %d) = %v %d %d, want %v %d %d", tc.h, tc.size, res, s, n, tc.res, tc.start, tc.len)
		}
	}
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-0", "bytes=-5", "bytes=5-", "bytes=1-2,3-4", "bytes=99999999999999999-", "bytes= 1 - 2 "} {
		f.Add(s, int64(100))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size < 0 {
			size = -size
		}
		if size < 0 {
			return
		}
		res, s, n := ParseRange(h, size)
		if res == RangeOK {
			if s < 0 || n <= 0 || s+n > size {
				t.Fatalf("ParseRange(%q, %d) = %d+%d out of bounds", h, size, s, n)
			}
		}
	})
}

func TestMatchETag(t *testing.T) {
	tests := []struct {
		list, etag string
		strong     bool
		want       bool
	}{
		{`"abc"`, "abc", true, true},
		{`"x", "abc"`, "abc", true, true},
		{`W/"abc"`, "abc", true, false},
		{`W/"abc"`, "abc", false, true},
		{`*`, "abc", true, true},
		{`abc`, "abc", true, true},
		{`"ab`, "ab", true, false},
		{`"x","y"`, "abc", false, false},
	}
	for _, tc := range tests {
		if got := MatchETag(tc.list, tc.etag, tc.strong); got != tc.want {
			t.Errorf("MatchETag(%q, %q, %v) = %v", tc.list, tc.etag, tc.strong, got)
		}
	}
}

func FuzzMatchETag(f *testing.F) {
	f.Add(`"a", W/"b", c`, "a")
	f.Fuzz(func(t *testing.T, list, etag string) {
		MatchETag(list, etag, true)
		MatchETag(list, etag, false)
	})
}

func TestCheckPreconditions(t *testing.T) {
	mod := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	v := Validators{ETag: "e1", ModTime: mod, Exists: true}
	before := mod.Add(-time.Hour).Format(http.TimeFormat)
	at := mod.Format(http.TimeFormat)
	tests := []struct {
		method string
		hdr    []string
		want   int
	}{
		{"GET", nil, Proceed},
		{"GET", []string{"If-Match", `"e1"`}, Proceed},
		{"GET", []string{"If-Match", `"e2"`}, FailedPrecon},
		{"GET", []string{"If-Unmodified-Since", before}, FailedPrecon},
		{"GET", []string{"If-Unmodified-Since", at}, Proceed},
		{"GET", []string{"If-Match", `"e1"`, "If-Unmodified-Since", before}, Proceed}, // If-Match wins
		{"GET", []string{"If-None-Match", `"e1"`}, NotModified},
		{"HEAD", []string{"If-None-Match", `W/"e1"`}, NotModified},
		{"PUT", []string{"If-None-Match", `"e1"`}, FailedPrecon},
		{"GET", []string{"If-None-Match", `"e2"`}, Proceed},
		{"GET", []string{"If-Modified-Since", at}, NotModified},
		{"GET", []string{"If-Modified-Since", before}, Proceed},
		{"GET", []string{"If-None-Match", `"e2"`, "If-Modified-Since", at}, Proceed}, // INM wins
	}
	for _, tc := range tests {
		r := httptest.NewRequest(tc.method, "/", nil)
		for i := 0; i < len(tc.hdr); i += 2 {
			r.Header.Set(tc.hdr[i], tc.hdr[i+1])
		}
		if got := CheckPreconditions(r, v); got != tc.want {
			t.Errorf("%s %v = %d, want %d", tc.method, tc.hdr, got, tc.want)
		}
	}
}

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	tests := []struct {
		remote, xff string
		trusted     []netip.Prefix
		want        string
	}{
		{"1.2.3.4:5", "9.9.9.9", nil, "1.2.3.4"},      // untrusted peer: XFF ignored
		{"10.0.0.1:5", "9.9.9.9", trusted, "9.9.9.9"}, // trusted proxy
		{"10.0.0.1:5", "6.6.6.6, 9.9.9.9", trusted, "9.9.9.9"},
		{"10.0.0.1:5", "9.9.9.9, 10.0.0.2", trusted, "9.9.9.9"},
		{"1.2.3.4:5", "9.9.9.9", trusted, "1.2.3.4"},
		{"10.0.0.1:5", "garbage", trusted, "10.0.0.1"},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		r.Header.Set("X-Forwarded-For", tc.xff)
		if got := ClientIP(r, tc.trusted).String(); got != tc.want {
			t.Errorf("ClientIP(%s, %q) = %s, want %s", tc.remote, tc.xff, got, tc.want)
		}
	}
}

// TestRateReaderCutsSlowloris serves a real HTTP server and sends a body
// far slower than the minimum rate: the handler must see errcode.Timeout
// long before the body would have finished.
func TestRateReaderCutsSlowloris(t *testing.T) {
	got := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rr := NewRateReader(w, r.Body, MinRate{BytesPerSec: 10_000, Grace: 200 * time.Millisecond, Idle: time.Second})
		_, err := io.Copy(io.Discard, rr)
		got <- err
	}))
	defer srv.Close()
	pr, pw := io.Pipe()
	go func() {
		for range 100 {
			if _, err := pw.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		pw.Close()
	}()
	start := time.Now()
	req, _ := http.NewRequest("PUT", srv.URL, pr)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case err := <-got:
		if !errcode.Is(err, errcode.Timeout) {
			t.Fatalf("err = %v, want errcode.Timeout", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("cut off after %v", d)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("slow body was not cut off")
	}
	pw.CloseWithError(errors.New("done"))
}

func TestRateReaderLetsFastBodiesThrough(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rr := NewRateReader(w, r.Body, MinRate{BytesPerSec: 1000, Grace: 100 * time.Millisecond})
		n, err := io.Copy(io.Discard, rr)
		if err != nil || n != 1<<20 {
			http.Error(w, err.Error(), 500)
		}
	}))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/octet-stream", strings.NewReader(strings.Repeat("y", 1<<20)))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", err, resp)
	}
	resp.Body.Close()
}

func TestActiveContent(t *testing.T) {
	tests := []struct {
		ct   string
		want bool
	}{
		{"text/html", true},
		{"text/html; charset=utf-8", true},
		{"TEXT/HTML", true},
		{"application/xhtml+xml", true},
		{"image/svg+xml", true},
		{"text/xml", true},
		{"application/xml", true},
		{"application/rss+xml", true},
		{"text/xsl", true},
		{"text/javascript", true},
		{"application/javascript", true},
		{"application/x-javascript", true},
		{"application/ecmascript", true},
		{"multipart/x-mixed-replace; boundary=x", true},
		{"", true},
		{"text/html;;;===", true},
		{"nonsense", true},
		{"text/plain", false},
		{"text/plain; charset=utf-8", false},
		{"image/png", false},
		{"image/jpeg", false},
		{"application/pdf", false},
		{"application/json", false},
		{"application/octet-stream", false},
		{"video/mp4", false},
		{"text/csv", false},
	}
	// Twice: decided, then remembered.
	for range 2 {
		for _, tc := range tests {
			if got := ActiveContent(tc.ct); got != tc.want {
				t.Errorf("ActiveContent(%q) = %v, want %v", tc.ct, got, tc.want)
			}
		}
	}
}

// TestActiveContentRemembered: a content type seen before is answered
// without mime.ParseMediaType's allocation; at most maxActiveKnown types
// are kept, and types past that bound are still decided right.
func TestActiveContentRemembered(t *testing.T) {
	ActiveContent("application/octet-stream")
	if n := testing.AllocsPerRun(100, func() { ActiveContent("application/octet-stream") }); n != 0 {
		t.Errorf("a known content type: %.0f allocations", n)
	}
	for i := range 2 * maxActiveKnown {
		ct := "application/x-type" + strconv.Itoa(i)
		if ActiveContent(ct) || !ActiveContent(ct+"+xml") {
			t.Fatalf("%s decided wrong", ct)
		}
	}
	if n := activeKnown.Len(); n == 0 || n > maxActiveKnown {
		t.Errorf("%d content types kept, bound %d", n, maxActiveKnown)
	}
	if !ActiveContent("text/html") || ActiveContent("text/plain") {
		t.Error("known types decided wrong past the bound")
	}
}

// TestNewRequestID: 16 upper-case hex digits, as before (one allocation).
func TestNewRequestID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewRequestID()
		if len(id) != 16 || strings.ToUpper(id) != id || !validRequestID(id) {
			t.Fatalf("NewRequestID() = %q", id)
		}
		if _, err := hex.DecodeString(id); err != nil {
			t.Fatalf("NewRequestID() = %q: %v", id, err)
		}
		if seen[id] {
			t.Fatalf("NewRequestID() repeated %q", id)
		}
		seen[id] = true
	}
}

// TestNewRequestIDAllocs: one allocation, the string. Skipped under -short:
// the test command runs allocation counts without the race detector, which
// adds its own.
func TestNewRequestIDAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts run without -short (and without the race detector)")
	}
	if n := testing.AllocsPerRun(100, func() { _ = NewRequestID() }); n > 1 {
		t.Errorf("NewRequestID: %.0f allocations, want 1", n)
	}
}

func TestSetContentSafety(t *testing.T) {
	for _, tc := range []struct {
		ct, csp string
	}{
		{"text/html", SandboxCSP},
		{"image/svg+xml", SandboxCSP},
		{"image/png", ""},
	} {
		h := http.Header{"Content-Type": {tc.ct}, "Content-Security-Policy": {"stale"}}
		SetContentSafety(h)
		if got, want := h.Get("X-Content-Type-Options"), "nosniff"; got != want {
			t.Errorf("%s: X-Content-Type-Options %q, want %q", tc.ct, got, want)
		}
		if got, want := h.Get("Content-Security-Policy"), tc.csp; got != want {
			t.Errorf("%s: Content-Security-Policy %q, want %q", tc.ct, got, want)
		}
	}
}

// TestMinRateDefaults: the rate is the server's (--min-upload-rate, from
// config.Defaults()), taken as given; only the grace and the idle bound,
// which no setting governs, default.
func TestMinRateDefaults(t *testing.T) {
	if m := (MinRate{}).withDefaults(); m.BytesPerSec != 0 || m.Grace != 10*time.Second || m.Idle != time.Minute {
		t.Errorf("MinRate{} with defaults: %+v", m)
	}
	if m := (MinRate{BytesPerSec: 4096}).withDefaults(); m.BytesPerSec != 4096 {
		t.Errorf("BytesPerSec changed: %+v", m)
	}
}

package httpapi

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// The file API's behaviour that test/e2e's TestEndToEnd, TestBadInput and
// TestPublicBucket prove through the binary, in-process over a fake of the
// services (fake_test.go): downloads (validators, conditionals, ranges,
// caching, disposition, digests, content safety), upload digests and
// conditions, authentication and problem+json errors, each refusal shown to
// change nothing.

// TestFileDownload: GET and HEAD of /files/{key}.
func TestFileDownload(t *testing.T) {
	sum := md5.Sum(testData)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	before, at := testMod.Add(-time.Hour).Format(http.TimeFormat), testMod.Format(http.TimeFormat)
	digest := "sha-256=:" + base64.StdEncoding.EncodeToString(func() []byte { s := sha256.Sum256(testData); return s[:] }()) + ":"
	for _, tc := range []struct {
		name         string
		target       string
		token        string
		hdr          []string
		status       int
		code         string
		from, to     int    // the bytes sent
		contentRange string // "" none
	}{
		{"whole", "/b/files/docs/report.txt", "tok-alice", nil, 200, "", 0, 100, ""},
		{"range", "/b/files/docs/report.txt", "tok-alice", []string{"Range", "bytes=10-19"}, 206, "", 10, 20, "bytes 10-19/100"},
		{"suffix range", "/b/files/docs/report.txt", "tok-alice", []string{"Range", "bytes=-10"}, 206, "", 90, 100, "bytes 90-99/100"},
		{"unsatisfiable range", "/b/files/docs/report.txt", "tok-alice", []string{"Range", "bytes=100-"}, 416, "range_not_satisfiable", 0, 0, "bytes */100"},
		{"If-Range stale", "/b/files/docs/report.txt", "tok-alice", []string{"Range", "bytes=0-9", "If-Range", `"stale"`}, 200, "", 0, 100, ""},
		{"If-None-Match", "/b/files/docs/report.txt", "tok-alice", []string{"If-None-Match", etag}, 304, "", 0, 0, ""},
		{"If-Modified-Since", "/b/files/docs/report.txt", "tok-alice", []string{"If-Modified-Since", at}, 304, "", 0, 0, ""},
		{"If-Match another", "/b/files/docs/report.txt", "tok-alice", []string{"If-Match", `"nope"`}, 412, "precondition_failed", 0, 0, ""},
		{"If-Unmodified-Since before", "/b/files/docs/report.txt", "tok-alice", []string{"If-Unmodified-Since", before}, 412, "precondition_failed", 0, 0, ""},
		{"missing", "/b/files/nope", "tok-alice", nil, 404, "not_found", 0, 0, ""},
		{"anonymous, public bucket", "/pub/files/index.html", "", nil, 200, "", 0, 100, ""},
		{"anonymous, private bucket", "/b/files/docs/report.txt", "", nil, 401, "unauthenticated", 0, 0, ""},
		{"another user's bucket", "/rb/files/k", "tok-alice", nil, 403, "permission_denied", 0, 0, ""},
		{"bad token on an optional route", "/pub/files/index.html", "tok-bogus", nil, 401, "unauthenticated", 0, 0, ""},
	} {
		for _, method := range []string{"GET", "HEAD"} {
			t.Run(method+" "+tc.name, func(t *testing.T) {
				e := newAPIEnv(t)
				e.f.add("b", "docs/report.txt", "text/plain", testData)
				e.f.add("pub", "index.html", "text/html", testData)
				e.f.add("rb", "k", "text/plain", testData)
				r := e.do(method, "/api/v1/buckets"+tc.target, tc.token, nil, tc.hdr...)
				status := tc.status
				if method == "HEAD" && status == 206 || method == "HEAD" && tc.name == "unsatisfiable range" {
					status, tc.from, tc.to = 200, 0, 100 // HEAD ignores Range
				}
				r.want(t, status, tc.code)
				if got := r.Header().Get("Content-Range"); status != 200 && got != tc.contentRange {
					t.Errorf("Content-Range %q, want %q", got, tc.contentRange)
				}
				if status >= 300 {
					if status == 304 && (r.Body.Len() != 0 || r.Header().Get("ETag") != etag) {
						t.Errorf("304 with %d bytes, ETag %q", r.Body.Len(), r.Header().Get("ETag"))
					}
					if bytes.Contains(r.Body.Bytes(), testData[:20]) {
						t.Errorf("sent the object: %s", r.Body)
					}
					return
				}
				if r.Header().Get("ETag") != etag || r.Header().Get("Last-Modified") != at || r.Header().Get("Accept-Ranges") != "bytes" ||
					r.Header().Get("Content-Length") != fmt.Sprint(tc.to-tc.from) || r.Header().Get("X-Content-Type-Options") != "nosniff" {
					t.Errorf("headers %v", r.Header())
				}
				if method == "GET" && !bytes.Equal(r.Body.Bytes(), testData[tc.from:tc.to]) {
					t.Errorf("sent %q, want bytes %d-%d", r.Body, tc.from, tc.to)
				}
				// The whole object's digest, never a range's.
				wantDigest := map[bool]string{true: digest, false: ""}[status == 200]
				if got := r.Header().Get("Repr-Digest"); got != wantDigest || (r.Header().Get("X-Checksum-Sha256") != "") != (status == 200) {
					t.Errorf("Repr-Digest %q X-Checksum-Sha256 %q (status %d)", got, r.Header().Get("X-Checksum-Sha256"), status)
				}
				public := strings.HasPrefix(tc.target, "/pub/")
				wantCC := map[bool]string{true: "public, max-age=90", false: "private, no-cache"}[public]
				if got := r.Header().Get("Cache-Control"); got != wantCC {
					t.Errorf("Cache-Control %q, want %q", got, wantCC)
				}
				// HTML is served sandboxed, text is not.
				if got := strings.Contains(r.Header().Get("Content-Security-Policy"), "sandbox"); got != public {
					t.Errorf("Content-Security-Policy %q", r.Header().Get("Content-Security-Policy"))
				}
			})
		}
	}
	t.Run("disposition", func(t *testing.T) {
		e := newAPIEnv(t)
		e.f.add("b", "docs/report.pdf", "application/pdf", testData)
		for target, want := range map[string]string{
			"/api/v1/buckets/b/files/docs/report.pdf":            "inline; filename=report.pdf",
			"/api/v1/buckets/b/files/docs/report.pdf?download=1": "attachment; filename=report.pdf",
		} {
			r := e.do("GET", target, "tok-alice", nil)
			if got := r.Header().Get("Content-Disposition"); got != want || r.Header().Get("Content-Type") != "application/pdf" {
				t.Errorf("%s: Content-Disposition %q, want %q", target, got, want)
			}
		}
	})
}

// TestFileUpload: PUT /files/{key}: the digests a client announces reach
// the service, which checks them; write conditions; refusals store
// nothing.
func TestFileUpload(t *testing.T) {
	data := []byte("hello")
	sha := sha256.Sum256(data)
	md := md5.Sum(data)
	contentDigest := "sha-256=:" + base64.StdEncoding.EncodeToString(sha[:]) + ":"
	other := sha256.Sum256([]byte("other"))
	for _, tc := range []struct {
		name   string
		key    string
		hdr    []string
		status int
		code   string
	}{
		{"plain", "new.txt", nil, 201, ""},
		{"Content-Digest", "new.txt", []string{"Content-Digest", "sha-512=:AAAA:, " + contentDigest}, 201, ""},
		{"X-Checksum-Sha256", "new.txt", []string{"X-Checksum-Sha256", hex.EncodeToString(sha[:])}, 201, ""},
		{"Content-MD5", "new.txt", []string{"Content-MD5", base64.StdEncoding.EncodeToString(md[:])}, 201, ""},
		{"Content-Digest mismatch", "new.txt", []string{"Content-Digest", "sha-256=:" + base64.StdEncoding.EncodeToString(other[:]) + ":"}, 400, "checksum_mismatch"},
		{"X-Checksum-Sha256 mismatch", "new.txt", []string{"X-Checksum-Sha256", hex.EncodeToString(other[:])}, 400, "checksum_mismatch"},
		{"Content-MD5 mismatch", "new.txt", []string{"Content-MD5", base64.StdEncoding.EncodeToString(other[:16])}, 400, "checksum_mismatch"},
		{"digests disagree", "new.txt", []string{"Content-Digest", contentDigest, "X-Checksum-Sha256", hex.EncodeToString(other[:])}, 400, "invalid_argument"},
		{"malformed X-Checksum-Sha256", "new.txt", []string{"X-Checksum-Sha256", "zz"}, 400, "invalid_argument"},
		{"malformed Content-Digest", "new.txt", []string{"Content-Digest", "sha-256=AAAA"}, 400, "invalid_argument"},
		{"malformed Content-MD5", "new.txt", []string{"Content-MD5", "AAAA"}, 400, "invalid_argument"},
		{"malformed Content-Type", "new.txt", []string{"Content-Type", "text/plain; ="}, 400, "invalid_argument"},
		{"If-None-Match * on a key in use", "k", []string{"If-None-Match", "*"}, 412, "precondition_failed"},
		{"If-None-Match * on a new key", "new.txt", []string{"If-None-Match", "*"}, 201, ""},
		{"If-None-Match an ETag", "k", []string{"If-None-Match", `"abc"`}, 400, "invalid_argument"},
		{"If-Match another", "k", []string{"If-Match", `"abc"`}, 412, "precondition_failed"},
		{"If-Match a weak tag of the ETag", "k", []string{"If-Match", `W/"` + hex.EncodeToString(func() []byte { s := md5.Sum(testData); return s[:] }()) + `"`}, 412, "precondition_failed"},
		{"If-Match a list", "k", []string{"If-Match", `"a", "b"`}, 400, "invalid_argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newAPIEnv(t)
			e.f.add("b", "k", "text/plain", testData)
			r := e.do("PUT", "/api/v1/buckets/b/files/"+tc.key, "tok-alice", data, tc.hdr...)
			r.want(t, tc.status, tc.code)
			if tc.status >= 300 {
				e.noWrites(t)
				if got := e.f.Objects["b/k"].Data; !bytes.Equal(got, testData) {
					t.Errorf("b/k changed to %q", got)
				}
				return
			}
			if got := e.f.Objects["b/"+tc.key].Data; !bytes.Equal(got, data) {
				t.Errorf("stored %q", got)
			}
			if r.Header().Get("ETag") != `"`+hex.EncodeToString(md[:])+`"` || !strings.Contains(r.Body.String(), hex.EncodeToString(sha[:])) {
				t.Errorf("response %v %s", r.Header(), r.Body)
			}
		})
	}
	t.Run("form-urlencoded is no file type", func(t *testing.T) {
		e := newAPIEnv(t)
		e.do("PUT", "/api/v1/buckets/b/files/x.txt", "tok-alice", data, "Content-Type", "application/x-www-form-urlencoded").want(t, 201, "")
		if e.f.LastPut.ContentType != "" {
			t.Errorf("content type %q passed on", e.f.LastPut.ContentType)
		}
	})
	t.Run("delete conditions", func(t *testing.T) {
		e := newAPIEnv(t)
		e.f.add("b", "k", "text/plain", testData)
		e.do("DELETE", "/api/v1/buckets/b/files/k", "tok-alice", nil, "If-Match", `"abc"`).want(t, 412, "precondition_failed")
		e.do("DELETE", "/api/v1/buckets/b/files/k", "tok-alice", nil, "If-None-Match", `"abc"`).want(t, 400, "invalid_argument")
		e.noWrites(t)
		e.do("DELETE", "/api/v1/buckets/b/files/k", "tok-alice", nil).want(t, 204, "")
		e.do("DELETE", "/api/v1/buckets/b/files/k", "tok-alice", nil).want(t, 404, "not_found")
	})
	// In a versioned bucket a delete of a file that is not there (never
	// was, or its latest version is a delete marker) is 404 and writes no
	// marker: S3's DeleteObject adds one whatever is there, the file API
	// does not.
	t.Run("delete in a versioned bucket", func(t *testing.T) {
		e := newAPIEnv(t)
		b := e.f.Buckets["b"]
		b.Versioning = meta.VersioningEnabled
		e.f.Buckets["b"] = b
		e.do("DELETE", "/api/v1/buckets/b/files/missing", "tok-alice", nil).want(t, 404, "not_found")
		e.noWrites(t)
		e.f.add("b", "k", "text/plain", testData)
		e.do("DELETE", "/api/v1/buckets/b/files/k", "tok-alice", nil).want(t, 204, "")
		n := len(e.f.Writes)
		e.do("DELETE", "/api/v1/buckets/b/files/k", "tok-alice", nil).want(t, 404, "not_found")
		if len(e.f.Writes) != n {
			t.Errorf("a delete of a deleted file wrote: %v", e.f.Writes[n:])
		}
		e.do("DELETE", "/api/v1/buckets/b/files/k", "tok-alice", nil, "If-Match", "*").want(t, 412, "precondition_failed")
		// The batch delete likewise: a key not there is not_found, no marker.
		n = len(e.f.Writes)
		r := e.do("POST", "/api/v1/buckets/b/delete", "tok-alice", []byte(`{"keys":["k","never"]}`), "Content-Type", "application/json")
		if r.Code != 200 || strings.Count(r.Body.String(), `"status":"not_found"`) != 2 || len(e.f.Writes) != n {
			t.Errorf("batch delete: %d %s, wrote %v", r.Code, r.Body, e.f.Writes[n:])
		}
	})
}

// TestProblems: authentication, routing and input errors answer RFC 9457
// problems with the request's ID, before any write.
func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name, method, target, token string
		body                        string
		hdr                         []string
		status                      int
		code                        string
	}{
		{"no token", "GET", "/api/v1/buckets/b/files", "", "", nil, 401, "unauthenticated"},
		{"bad token", "GET", "/api/v1/buckets/b/files", "tok-bogus", "", nil, 401, "unauthenticated"},
		{"not a bearer token", "GET", "/api/v1/buckets/b/files", "", "", []string{"Authorization", "Basic YTpi"}, 401, "unauthenticated"},
		{"anonymous write to a public bucket", "PUT", "/api/v1/buckets/pub/files/x", "", "x", nil, 401, "unauthenticated"},
		{"not an administrator", "GET", "/api/v1/admin/invites", "tok-alice", "", nil, 403, "permission_denied"},
		{"unknown route", "GET", "/api/v1/nope", "tok-alice", "", nil, 404, "not_found"},
		{"empty key", "GET", "/api/v1/buckets/b/files/", "tok-alice", "", nil, 404, "not_found"},
		{"wrong method", "PATCH", "/api/v1/me", "tok-alice", "", nil, 405, "method_not_allowed"},
		{"bad json", "POST", "/api/v1/buckets", "tok-alice", "{", []string{"Content-Type", "application/json"}, 400, "invalid_argument"},
		{"empty json", "POST", "/api/v1/buckets", "tok-alice", "", nil, 400, "invalid_argument"},
		{"unknown json field", "POST", "/api/v1/buckets", "tok-alice", `{"name":"abc-def","color":1}`, nil, 400, "invalid_argument"},
		{"trailing json", "POST", "/api/v1/buckets", "tok-alice", `{"name":"abc-def"} {}`, nil, 400, "invalid_argument"},
		{"json of another type", "POST", "/api/v1/buckets", "tok-alice", `{"name":"abc-def"}`, []string{"Content-Type", "text/plain"}, 400, "invalid_argument"},
		{"huge json", "POST", "/api/v1/buckets", "tok-alice", `{"name":"` + strings.Repeat("a", 70000) + `"}`, nil, 413, "too_large"},
		{"bad limit", "GET", "/api/v1/buckets/b/files?limit=0", "tok-alice", "", nil, 400, "invalid_argument"},
		{"limit too high", "GET", "/api/v1/buckets/b/files?limit=1001", "tok-alice", "", nil, 400, "invalid_argument"},
		{"bad cursor", "GET", "/api/v1/buckets/b/files?cursor=%25%25%25", "tok-alice", "", nil, 400, "invalid_argument"},
		{"bad query", "GET", "/api/v1/buckets/b/files?prefix=%zz", "tok-alice", "", nil, 400, "invalid_argument"},
		{"long delimiter", "GET", "/api/v1/buckets/b/files?delimiter=" + strings.Repeat("/", 33), "tok-alice", "", nil, 400, "invalid_argument"},
		{"not a form", "POST", "/api/v1/buckets/b/files", "tok-alice", "x", []string{"Content-Type", "text/plain"}, 400, "invalid_argument"},
		{"list another user's bucket", "GET", "/api/v1/buckets/rb/files", "tok-alice", "", nil, 403, "permission_denied"},
		{"list a missing bucket", "GET", "/api/v1/buckets/nob/files", "tok-alice", "", nil, 404, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newAPIEnv(t)
			r := e.do(tc.method, tc.target, tc.token, []byte(tc.body), tc.hdr...)
			r.want(t, tc.status, tc.code)
			if tc.status == 401 && r.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if tc.status == 405 && r.Header().Get("Allow") == "" {
				t.Error("405 without Allow")
			}
			e.noWrites(t)
		})
	}
}

// TestListFilesNoParts: a page of files asks the store for no parts of
// multipart objects (meta.ListOptions.NoParts): it shows none of them.
func TestListFilesNoParts(t *testing.T) {
	e := newAPIEnv(t)
	e.do("GET", "/api/v1/buckets/b/files?prefix=x", "tok-alice", nil).want(t, 200, "")
	if o := e.f.LastList; !o.NoParts || o.Prefix != "x" {
		t.Errorf("listed with %+v, want NoParts", o)
	}
}

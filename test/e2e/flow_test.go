// Package e2e holds black-box end-to-end tests: each starts the real coffer
// binary on a loopback port and talks to it over HTTP only.
package e2e

import (
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

type fileJSON struct {
	Bucket       string    `json:"bucket"`
	Key          string    `json:"key"`
	Size         int64     `json:"size"`
	SHA256       string    `json:"sha256"`
	ETag         string    `json:"etag"`
	ContentType  string    `json:"content_type"`
	LastModified time.Time `json:"last_modified"`
}

type listJSON struct {
	Files      []fileJSON `json:"files"`
	Folders    []string   `json:"folders"`
	NextCursor string     `json:"next_cursor"`
}

func randBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func put(t *testing.T, c *testenv.Client, bucket, key string, data []byte, hdr ...string) (int, fileJSON, testenv.Problem) {
	t.Helper()
	resp := c.Do(t, "PUT", testenv.FileURL(bucket, key), bytes.NewReader(data), hdr...)
	defer resp.Body.Close()
	var f fileJSON
	var p testenv.Problem
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 300 {
		mustJSON(t, body, &f)
	} else {
		mustJSON(t, body, &p)
		if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("error Content-Type = %q, want application/problem+json", ct)
		}
	}
	return resp.StatusCode, f, p
}

func get(t *testing.T, c *testenv.Client, bucket, key string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	resp := c.Do(t, "GET", testenv.FileURL(bucket, key), nil, hdr...)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return resp, body
}

func list(t *testing.T, c *testenv.Client, bucket, query string) listJSON {
	t.Helper()
	var l listJSON
	if st := c.JSON(t, "GET", "/api/v1/buckets/"+bucket+"/files?"+query, nil, &l); st != 200 {
		t.Fatalf("list %q: status %d", query, st)
	}
	return l
}

func keysOf(l listJSON) []string {
	var ks []string
	for _, f := range l.Files {
		ks = append(ks, f.Key)
	}
	return ks
}

func TestEndToEnd(t *testing.T) {
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	b := c.Bucket

	// Raw upload with a matching client checksum (both header styles).
	data := randBytes(t, 300_000)
	digest := sha256.Sum256(data)
	st, f, _ := put(t, c, b, "docs/report.pdf", data,
		"Content-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(digest[:])+":")
	if st != 201 {
		t.Fatalf("PUT status = %d, want 201", st)
	}
	m := md5.Sum(data)
	if f.SHA256 != sha(data) || f.Size != int64(len(data)) || f.ETag != hex.EncodeToString(m[:]) || f.ContentType != "application/pdf" {
		t.Fatalf("PUT returned %+v", f)
	}
	if st, _, _ := put(t, c, b, "docs/notes.txt", []byte("hello"), "X-Checksum-Sha256", sha([]byte("hello"))); st != 201 {
		t.Fatalf("PUT with X-Checksum-Sha256: status %d", st)
	}

	// Chunked upload (no Content-Length).
	resp, err := c.DoErr(t.Context(), "PUT", testenv.FileURL(b, "chunked.bin"), io.MultiReader(bytes.NewReader(data[:1000]), bytes.NewReader(data[1000:5000])), -1)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("chunked PUT: %v %v", err, resp)
	}
	resp.Body.Close()

	// Multipart form upload of two files with a prefix.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("prefix", "photos/")
	a := randBytes(t, 70_000)
	w1, _ := mw.CreateFormFile("file", "a.jpg")
	w1.Write(a)
	w2, _ := mw.CreateFormFile("file", "b.txt")
	w2.Write([]byte("bee"))
	mw.Close()
	var up struct{ Files []fileJSON }
	resp = c.Do(t, "POST", "/api/v1/buckets/"+b+"/files", &form, "Content-Type", mw.FormDataContentType())
	mustJSONResp(t, resp, &up)
	if resp.StatusCode != 201 || len(up.Files) != 2 || up.Files[0].Key != "photos/a.jpg" || up.Files[0].SHA256 != sha(a) || up.Files[1].ContentType != "text/plain; charset=utf-8" {
		t.Fatalf("form upload: %d %+v", resp.StatusCode, up)
	}

	// List with delimiter, then paging.
	l := list(t, c, b, "delimiter=/")
	if got, want := strings.Join(l.Folders, ","), "docs/,photos/"; got != want {
		t.Errorf("folders = %q, want %q", got, want)
	}
	if got, want := strings.Join(keysOf(l), ","), "chunked.bin"; got != want {
		t.Errorf("files = %q, want %q", got, want)
	}
	var all []string
	cursor := ""
	for range 10 {
		l := list(t, c, b, "limit=2&cursor="+cursor)
		all = append(all, keysOf(l)...)
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
	}
	if got, want := strings.Join(all, ","), "chunked.bin,docs/notes.txt,docs/report.pdf,photos/a.jpg,photos/b.txt"; got != want {
		t.Errorf("paged keys = %q, want %q", got, want)
	}

	// Full download with validators, then Range and conditionals.
	resp, body := get(t, c, b, "docs/report.pdf")
	if resp.StatusCode != 200 || sha(body) != sha(data) {
		t.Fatalf("GET: %d, sha match %v", resp.StatusCode, sha(body) == sha(data))
	}
	etag := resp.Header.Get("ETag")
	lastMod := resp.Header.Get("Last-Modified")
	for h, want := range map[string]string{
		"ETag": `"` + f.ETag + `"`, "Accept-Ranges": "bytes", "Content-Type": "application/pdf",
		"Cache-Control": "private, no-cache", "Content-Length": fmt.Sprint(len(data)),
		"Content-Disposition": "inline; filename=report.pdf", "X-Content-Type-Options": "nosniff",
	} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if lastMod == "" {
		t.Error("no Last-Modified")
	}
	resp, body = get(t, c, b, "docs/report.pdf", "Range", "bytes=1000-1999")
	if resp.StatusCode != 206 || !bytes.Equal(body, data[1000:2000]) || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 1000-1999/%d", len(data)) {
		t.Errorf("range: %d %q len %d", resp.StatusCode, resp.Header.Get("Content-Range"), len(body))
	}
	resp, body = get(t, c, b, "docs/report.pdf", "Range", "bytes=-10")
	if resp.StatusCode != 206 || !bytes.Equal(body, data[len(data)-10:]) {
		t.Errorf("suffix range: %d", resp.StatusCode)
	}
	resp, _ = get(t, c, b, "docs/report.pdf", "Range", fmt.Sprintf("bytes=%d-", len(data)))
	if resp.StatusCode != 416 || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(data)) {
		t.Errorf("unsatisfiable range: %d %q", resp.StatusCode, resp.Header.Get("Content-Range"))
	}
	resp, body = get(t, c, b, "docs/report.pdf", "If-None-Match", etag)
	if resp.StatusCode != 304 || len(body) != 0 || resp.Header.Get("ETag") != etag {
		t.Errorf("If-None-Match: %d", resp.StatusCode)
	}
	resp, _ = get(t, c, b, "docs/report.pdf", "If-Modified-Since", lastMod)
	if resp.StatusCode != 304 {
		t.Errorf("If-Modified-Since: %d", resp.StatusCode)
	}
	resp, _ = get(t, c, b, "docs/report.pdf", "If-Match", `"nope"`)
	if resp.StatusCode != 412 {
		t.Errorf("If-Match mismatch: %d", resp.StatusCode)
	}
	resp, _ = get(t, c, b, "docs/report.pdf", "If-Unmodified-Since", "Mon, 01 Jan 2001 00:00:00 GMT")
	if resp.StatusCode != 412 {
		t.Errorf("If-Unmodified-Since: %d", resp.StatusCode)
	}
	resp, body = get(t, c, b, "docs/report.pdf", "Range", "bytes=0-9", "If-Range", `"stale"`)
	if resp.StatusCode != 200 || len(body) != len(data) {
		t.Errorf("If-Range stale should send the whole file: %d", resp.StatusCode)
	}
	resp = c.Do(t, "HEAD", testenv.FileURL(b, "docs/report.pdf"), nil)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Length") != fmt.Sprint(len(data)) {
		t.Errorf("HEAD: %d %q", resp.StatusCode, resp.Header.Get("Content-Length"))
	}
	resp, _ = get(t, c, b, "docs/report.pdf?download=1")
	_ = resp
	r2 := c.Do(t, "GET", testenv.FileURL(b, "docs/report.pdf")+"?download=1", nil)
	io.Copy(io.Discard, r2.Body)
	r2.Body.Close()
	if got := r2.Header.Get("Content-Disposition"); got != "attachment; filename=report.pdf" {
		t.Errorf("download=1 disposition = %q", got)
	}

	// Create-only.
	if st, _, p := put(t, c, b, "docs/notes.txt", []byte("x"), "If-None-Match", "*"); st != 412 || p.Code != "precondition_failed" {
		t.Errorf("If-None-Match: * on existing: %d %q", st, p.Code)
	}

	// Move, then copy across buckets.
	var moved fileJSON
	if st := c.JSON(t, "POST", "/api/v1/buckets/"+b+"/move", map[string]any{"from": "docs/report.pdf", "to": "archive/report.pdf"}, &moved); st != 200 || moved.SHA256 != sha(data) {
		t.Fatalf("move: %d %+v", st, moved)
	}
	if resp, _ := get(t, c, b, "docs/report.pdf"); resp.StatusCode != 404 {
		t.Errorf("moved source still readable: %d", resp.StatusCode)
	}
	if st := c.JSON(t, "POST", "/api/v1/buckets/"+b+"/move", map[string]any{"from": "docs/notes.txt", "to": "archive/report.pdf"}, nil); st != 412 {
		t.Errorf("move onto existing without overwrite: %d, want 412", st)
	}
	second := "second-" + strings.ToLower(hex.EncodeToString(randBytes(t, 4)))
	if st := c.JSON(t, "POST", "/api/v1/buckets", map[string]any{"name": second}, nil); st != 201 {
		t.Fatalf("create bucket: %d", st)
	}
	if st := c.JSON(t, "POST", "/api/v1/buckets/"+b+"/copy", map[string]any{"from": "archive/report.pdf", "to": "copy.pdf", "to_bucket": second}, nil); st != 201 {
		t.Fatalf("copy: %d", st)
	}
	if resp, body := get(t, c, second, "copy.pdf"); resp.StatusCode != 200 || sha(body) != sha(data) {
		t.Fatalf("copied file: %d", resp.StatusCode)
	}

	// Delete, and a non-empty bucket cannot be deleted.
	if st := c.JSON(t, "DELETE", "/api/v1/buckets/"+second, nil, nil); st != 409 {
		t.Errorf("delete non-empty bucket: %d, want 409", st)
	}
	if resp := c.Do(t, "DELETE", testenv.FileURL(second, "copy.pdf"), nil); resp.StatusCode != 204 {
		t.Errorf("delete: %d", resp.StatusCode)
	}
	if resp, _ := get(t, c, second, "copy.pdf"); resp.StatusCode != 404 {
		t.Errorf("deleted file readable: %d", resp.StatusCode)
	}
	if st := c.JSON(t, "DELETE", "/api/v1/buckets/"+second, nil, nil); st != 204 {
		t.Errorf("delete empty bucket: %d", st)
	}

	// Usage in /me matches what is stored.
	var me struct {
		UsageBytes int64 `json:"usage_bytes"`
	}
	c.JSON(t, "GET", "/api/v1/me", nil, &me)
	want := int64(len(data) + 5 + 5000 + len(a) + 3)
	if me.UsageBytes != want {
		t.Errorf("usage = %d, want %d", me.UsageBytes, want)
	}
}

func TestChecksumMismatchStoresNothing(t *testing.T) {
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	data := randBytes(t, 100_000)
	wrong := sha256.Sum256([]byte("something else"))
	cases := map[string][]string{
		"content-digest": {"Content-Digest", "sha-256=:" + base64.StdEncoding.EncodeToString(wrong[:]) + ":"},
		"x-checksum":     {"X-Checksum-Sha256", hex.EncodeToString(wrong[:])},
		"content-md5":    {"Content-MD5", base64.StdEncoding.EncodeToString(make([]byte, 16))},
	}
	for name, hdr := range cases {
		t.Run(name, func(t *testing.T) {
			st, _, p := put(t, c, c.Bucket, "bad-"+name, data, hdr...)
			if st != 400 || p.Code != "checksum_mismatch" {
				t.Fatalf("status %d code %q, want 400 checksum_mismatch", st, p.Code)
			}
			if resp, _ := get(t, c, c.Bucket, "bad-"+name); resp.StatusCode != 404 {
				t.Errorf("mismatched upload is readable: %d", resp.StatusCode)
			}
		})
	}
	// An overwrite with a bad checksum keeps the old object.
	put(t, c, c.Bucket, "keep", []byte("original"))
	if st, _, _ := put(t, c, c.Bucket, "keep", data, "X-Checksum-Sha256", hex.EncodeToString(wrong[:])); st != 400 {
		t.Fatalf("bad overwrite: %d", st)
	}
	if _, body := get(t, c, c.Bucket, "keep"); string(body) != "original" {
		t.Errorf("old object changed to %q", body)
	}
	if l := list(t, c, c.Bucket, ""); len(l.Files) != 1 {
		t.Errorf("listed %v, want only keep", keysOf(l))
	}
	var me struct {
		UsageBytes int64 `json:"usage_bytes"`
	}
	c.JSON(t, "GET", "/api/v1/me", nil, &me)
	if me.UsageBytes != int64(len("original")) {
		t.Errorf("usage = %d, want %d", me.UsageBytes, len("original"))
	}
}

func TestQuotaExceededStoresNothing(t *testing.T) {
	srv := testenv.Start(t, "--default-quota", "100000")
	c := srv.NewUser(t)
	if st, _, _ := put(t, c, c.Bucket, "fits", randBytes(t, 60_000)); st != 201 {
		t.Fatalf("first upload: %d", st)
	}
	// Known size: refused before the body is read.
	st, _, p := put(t, c, c.Bucket, "too-big", randBytes(t, 50_000))
	if st != 507 || p.Code != "quota_exceeded" {
		t.Fatalf("over quota: %d %q, want 507 quota_exceeded", st, p.Code)
	}
	// Unknown size (chunked): refused when the limit is crossed.
	resp, err := c.DoErr(t.Context(), "PUT", testenv.FileURL(c.Bucket, "too-big-chunked"), io.MultiReader(bytes.NewReader(randBytes(t, 30_000)), bytes.NewReader(randBytes(t, 30_000))), -1)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 507 {
		t.Fatalf("chunked over quota: %d, want 507", resp.StatusCode)
	}
	l := list(t, c, c.Bucket, "")
	if got := strings.Join(keysOf(l), ","); got != "fits" {
		t.Errorf("listed %q, want only fits", got)
	}
	// Overwriting with a smaller object is allowed at the edge.
	if st, _, _ := put(t, c, c.Bucket, "fits", randBytes(t, 90_000)); st != 201 {
		t.Errorf("overwrite within quota: %d", st)
	}
	var me struct {
		UsageBytes int64 `json:"usage_bytes"`
		QuotaBytes int64 `json:"quota_bytes"`
	}
	c.JSON(t, "GET", "/api/v1/me", nil, &me)
	if me.UsageBytes != 90_000 || me.QuotaBytes != 100_000 {
		t.Errorf("me = %+v", me)
	}
}

func TestSessions(t *testing.T) {
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	var s1 struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if st := c.JSON(t, "POST", "/api/v1/auth/refresh", map[string]string{"refresh_token": c.Refresh}, &s1); st != 200 || s1.RefreshToken == "" || s1.RefreshToken == c.Refresh {
		t.Fatalf("refresh: %d", st)
	}
	// The new access token works.
	c2 := testenv.NewClient(srv.URL)
	c2.Token = s1.AccessToken
	if st := c2.JSON(t, "GET", "/api/v1/me", nil, nil); st != 200 {
		t.Fatalf("me with refreshed token: %d", st)
	}
	// Reusing the old refresh token is refused and revokes the family.
	if st := c.JSON(t, "POST", "/api/v1/auth/refresh", map[string]string{"refresh_token": c.Refresh}, nil); st != 401 {
		t.Fatalf("reuse: %d, want 401", st)
	}
	if st := c.JSON(t, "POST", "/api/v1/auth/refresh", map[string]string{"refresh_token": s1.RefreshToken}, nil); st != 401 {
		t.Fatalf("family not revoked after reuse: %d", st)
	}
	// Logout revokes.
	c.Login(t, "correct horse battery")
	if st := c.JSON(t, "POST", "/api/v1/auth/logout", map[string]string{"refresh_token": c.Refresh}, nil); st != 204 {
		t.Fatalf("logout: %d", st)
	}
	if st := c.JSON(t, "POST", "/api/v1/auth/refresh", map[string]string{"refresh_token": c.Refresh}, nil); st != 401 {
		t.Fatalf("refresh after logout: %d", st)
	}
	// Wrong password, bad token, no token.
	var p testenv.Problem
	if st := c.JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": c.Email, "password": "wrong password"}, &p); st != 401 || p.Code != "unauthenticated" {
		t.Errorf("wrong password: %d %q", st, p.Code)
	}
	bad := testenv.NewClient(srv.URL)
	bad.Token = "not.a.jwt"
	if st := bad.JSON(t, "GET", "/api/v1/me", nil, nil); st != 401 {
		t.Errorf("bad token: %d", st)
	}
	if st := testenv.NewClient(srv.URL).JSON(t, "GET", "/api/v1/me", nil, nil); st != 401 {
		t.Errorf("no token: %d", st)
	}
	// Duplicate signup.
	if st := testenv.NewClient(srv.URL).JSON(t, "POST", "/api/v1/auth/signup", map[string]string{"email": strings.ToUpper(c.Email), "password": "another password"}, &p); st != 409 {
		t.Errorf("duplicate signup: %d", st)
	}
}

func TestFailedLoginThrottle(t *testing.T) {
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	var last int
	var retry string
	for range 12 {
		resp := c.Do(t, "POST", "/api/v1/auth/login", strings.NewReader(`{"email":"`+c.Email+`","password":"wrong password"}`), "Content-Type", "application/json")
		resp.Body.Close()
		last, retry = resp.StatusCode, resp.Header.Get("Retry-After")
	}
	if last != 429 || retry == "" {
		t.Fatalf("after 12 failures: %d Retry-After %q, want 429 with Retry-After", last, retry)
	}
	// Even the right password is refused while throttled.
	resp := c.Do(t, "POST", "/api/v1/auth/login", strings.NewReader(`{"email":"`+c.Email+`","password":"correct horse battery"}`), "Content-Type", "application/json")
	resp.Body.Close()
	if resp.StatusCode != 429 {
		t.Fatalf("right password while throttled: %d", resp.StatusCode)
	}
}

func TestBadInput(t *testing.T) {
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	long := strings.Repeat("k", 1025)
	cases := []struct {
		name, method, path string
		body               string
		hdr                []string
		status             int
		code               string
	}{
		{"key too long", "PUT", testenv.FileURL(c.Bucket, long), "x", nil, 400, "invalid_argument"},
		{"dotdot segment", "PUT", "/api/v1/buckets/" + c.Bucket + "/files/a/../b", "x", nil, 400, "invalid_argument"},
		{"NUL in key", "PUT", "/api/v1/buckets/" + c.Bucket + "/files/a%00b", "x", nil, 400, "invalid_argument"},
		{"bad utf8 key", "PUT", "/api/v1/buckets/" + c.Bucket + "/files/a%FFb", "x", nil, 400, "invalid_argument"},
		{"bad digest header", "PUT", testenv.FileURL(c.Bucket, "x"), "x", []string{"X-Checksum-Sha256", "zz"}, 400, "invalid_argument"},
		{"bad json", "POST", "/api/v1/buckets", "{", []string{"Content-Type", "application/json"}, 400, "invalid_argument"},
		{"unknown json field", "POST", "/api/v1/buckets", `{"name":"abc-def","color":1}`, []string{"Content-Type", "application/json"}, 400, "invalid_argument"},
		{"huge json", "POST", "/api/v1/buckets", `{"name":"` + strings.Repeat("a", 70000) + `"}`, []string{"Content-Type", "application/json"}, 413, "too_large"},
		{"bad bucket name", "POST", "/api/v1/buckets", `{"name":"Bad_Name"}`, []string{"Content-Type", "application/json"}, 400, "invalid_argument"},
		{"bad visibility", "POST", "/api/v1/buckets", `{"name":"good-name-123","visibility":"world"}`, []string{"Content-Type", "application/json"}, 400, "invalid_argument"},
		{"bad limit", "GET", "/api/v1/buckets/" + c.Bucket + "/files?limit=0", "", nil, 400, "invalid_argument"},
		{"bad cursor", "GET", "/api/v1/buckets/" + c.Bucket + "/files?cursor=%%%", "", nil, 400, "invalid_argument"},
		{"unknown route", "GET", "/api/v1/nope", "", nil, 404, "not_found"},
		{"wrong method", "PATCH", "/api/v1/me", "", nil, 405, "method_not_allowed"},
		{"form without files", "POST", "/api/v1/buckets/" + c.Bucket + "/files", "--x--\r\n", []string{"Content-Type", "multipart/form-data; boundary=x"}, 400, "invalid_argument"},
		{"not a form", "POST", "/api/v1/buckets/" + c.Bucket + "/files", "x", []string{"Content-Type", "text/plain"}, 400, "invalid_argument"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			resp := c.Do(t, tc.method, tc.path, body, tc.hdr...)
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var p testenv.Problem
			mustJSON(t, raw, &p)
			if resp.StatusCode != tc.status || p.Code != tc.code || p.Status != tc.status || p.RequestID == "" || p.Type == "" {
				t.Errorf("got %d %+v, want %d %s", resp.StatusCode, p, tc.status, tc.code)
			}
			if resp.Header.Get("X-Request-Id") != p.RequestID {
				t.Errorf("X-Request-Id %q != body request_id %q", resp.Header.Get("X-Request-Id"), p.RequestID)
			}
		})
	}
	if l := list(t, c, c.Bucket, ""); len(l.Files) != 0 {
		t.Errorf("bad input stored %v", keysOf(l))
	}
}

func TestPublicBucket(t *testing.T) {
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	name := "pub-" + hex.EncodeToString(randBytes(t, 4))
	if st := c.JSON(t, "POST", "/api/v1/buckets", map[string]any{"name": name, "visibility": "public-read"}, nil); st != 201 {
		t.Fatalf("create: %d", st)
	}
	put(t, c, name, "index.html", []byte("<script>alert(1)</script>"))
	anon := testenv.NewClient(srv.URL)
	resp, body := get(t, anon, name, "index.html")
	if resp.StatusCode != 200 || string(body) != "<script>alert(1)</script>" {
		t.Fatalf("anonymous GET of public object: %d", resp.StatusCode)
	}
	if cc := resp.Header.Get("Cache-Control"); !strings.HasPrefix(cc, "public, max-age=") {
		t.Errorf("Cache-Control = %q", cc)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") {
		t.Errorf("HTML served without sandbox CSP: %q", csp)
	}
	// Anonymous may not list, write or delete.
	if st := anon.JSON(t, "GET", "/api/v1/buckets/"+name+"/files", nil, nil); st != 401 {
		t.Errorf("anonymous list: %d", st)
	}
	if st, _, _ := put(t, anon, name, "x", []byte("x")); st != 401 {
		t.Errorf("anonymous put: %d", st)
	}
	if resp := anon.Do(t, "DELETE", testenv.FileURL(name, "index.html"), nil); resp.StatusCode != 401 {
		t.Errorf("anonymous delete: %d", resp.StatusCode)
	}
	// Private again: anonymous reads stop.
	if st := c.JSON(t, "PATCH", "/api/v1/buckets/"+name, map[string]any{"visibility": "private"}, nil); st != 200 {
		t.Fatalf("patch: %d", st)
	}
	if resp, _ := get(t, anon, name, "index.html"); resp.StatusCode != 401 {
		t.Errorf("anonymous GET of private object: %d", resp.StatusCode)
	}
}

func TestOperability(t *testing.T) {
	srv := testenv.Start(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", p, err, resp)
		}
		resp.Body.Close()
	}
	c := srv.NewUser(t)
	put(t, c, c.Bucket, "m", []byte("metrics"))
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`coffer_http_requests_total{api="file",code="201",route="PUT /api/v1/buckets/{bucket}/files/{key...}"} 1`,
		"coffer_http_request_duration_seconds_bucket",
		`coffer_http_request_bytes_total{api="file"}`,
		"coffer_http_in_flight_requests",
		"go_goroutines",
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// Request IDs are echoed.
	req, _ := http.NewRequest("GET", srv.URL+"/healthz", nil)
	req.Header.Set("X-Request-Id", "my-id-123")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got != "my-id-123" {
		t.Errorf("X-Request-Id = %q", got)
	}
}

func mustJSONResp(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	mustJSON(t, raw, v)
}

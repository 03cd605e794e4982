package server

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/httpapi"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// shareEnv is a whole server (SQLite + disk, every guard) on a loopback
// listener, with two users, A and B.
type shareEnv struct {
	s    *Server
	url  string
	a, b shareUser
	anon *http.Client
	t    *testing.T
}

type shareUser struct {
	id, bucket, token string
}

func newShareEnv(t *testing.T) *shareEnv {
	t.Helper()
	return newShareEnvWith(t, nil, slog.New(slog.DiscardHandler))
}

// newShareEnvWith is newShareEnv with the config changed by mod (if not
// nil) and the server's log going to log.
func newShareEnvWith(t *testing.T, mod func(*config.Config), log *slog.Logger) *shareEnv {
	t.Helper()
	cfg := config.Defaults()
	cfg.Data = t.TempDir()
	cfg.Argon2Memory, cfg.Argon2Time = 8192, 1
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	e := &shareEnv{s: s, url: ts.URL, anon: &http.Client{}, t: t}
	e.a, e.b = e.user("a@example.com"), e.user("b@example.com")
	return e
}

// newProxiedShareEnv is newShareEnv behind a trusted proxy: requests name
// their client in X-Forwarded-For.
func newProxiedShareEnv(t *testing.T) *shareEnv {
	t.Helper()
	return newShareEnvWith(t, func(c *config.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}, slog.New(slog.DiscardHandler))
}

func (e *shareEnv) user(email string) shareUser {
	e.t.Helper()
	ctx := context.Background()
	u, bk, err := e.s.auth.Signups.Signup(ctx, email, "share password")
	if err != nil {
		e.t.Fatal(err)
	}
	sess, err := e.s.auth.Sessions.Login(ctx, email, "share password", "127.0.0.1")
	if err != nil {
		e.t.Fatal(err)
	}
	return shareUser{id: u.ID, bucket: bk.Name, token: sess.AccessToken}
}

// do sends a request with an exact (unclean) path; token "" is
// anonymous. hdr are name, value pairs.
func (e *shareEnv) do(base, method, path, token string, body []byte, hdr ...string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, base+"/", bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	p, rq, _ := strings.Cut(path, "?")
	req.URL.Opaque, req.URL.RawQuery = strings.TrimPrefix(base, "http:")+p, rq
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil && method != "PUT" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.anon.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

func (e *shareEnv) put(u shareUser, key string, data []byte) {
	e.t.Helper()
	if resp, b := e.do(e.url, "PUT", "/api/v1/buckets/"+u.bucket+"/files/"+key, u.token, data); resp.StatusCode != 201 {
		e.t.Fatalf("put %s: %d %s", key, resp.StatusCode, b)
	}
}

type shareOut struct {
	ID           string     `json:"id"`
	Token        string     `json:"token"`
	URL          string     `json:"url"`
	Downloads    int64      `json:"downloads"`
	MaxDownloads int64      `json:"max_downloads"`
	LastAccess   *time.Time `json:"last_access"`
	ExpiresAt    time.Time  `json:"expires_at"`
	State        string     `json:"state"`
	Password     bool       `json:"password"`
}

func (e *shareEnv) share(u shareUser, body map[string]any) shareOut {
	e.t.Helper()
	if _, ok := body["bucket"]; !ok {
		body["bucket"] = u.bucket
	}
	raw, _ := json.Marshal(body)
	resp, b := e.do(e.url, "POST", "/api/v1/shares", u.token, raw)
	if resp.StatusCode != 201 {
		e.t.Fatalf("create share %v: %d %s", body, resp.StatusCode, b)
	}
	var out shareOut
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *shareEnv) inspect(u shareUser, id string) shareOut {
	e.t.Helper()
	resp, b := e.do(e.url, "GET", "/api/v1/shares/"+id, u.token, nil)
	if resp.StatusCode != 200 {
		e.t.Fatalf("inspect share: %d %s", resp.StatusCode, b)
	}
	var out shareOut
	json.Unmarshal(b, &out)
	return out
}

// wantUnavailable checks a refusal of a link that exists but is unusable.
func wantUnavailable(t *testing.T, what string, resp *http.Response, body []byte, state string) {
	t.Helper()
	var p struct {
		Type  string         `json:"type"`
		Extra map[string]any `json:"extra"`
	}
	json.Unmarshal(body, &p)
	if resp.StatusCode != 404 || !strings.HasSuffix(p.Type, "#share_unavailable") || p.Extra["state"] != state {
		t.Errorf("%s: %d %s, want 404 share_unavailable state %s", what, resp.StatusCode, body, state)
	}
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestShareFileDownloadRangeConditional(t *testing.T) {
	e := newShareEnv(t)
	data := []byte("0123456789 shared file body")
	e.put(e.a, "docs/report.txt", data)
	sh := e.share(e.a, map[string]any{"key": "docs/report.txt"})
	if len(sh.Token) < 40 || sh.URL != "/s/"+sh.Token || sh.State != "active" {
		t.Fatalf("share = %+v", sh)
	}
	if d := time.Until(sh.ExpiresAt); d < 7*24*time.Hour-time.Minute || d > 7*24*time.Hour {
		t.Errorf("default expiry in %v, want 7 days", d)
	}
	resp, body := e.do(e.url, "GET", sh.URL, "", nil)
	if resp.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Fatalf("GET link: %d %q", resp.StatusCode, body)
	}
	if got, want := resp.Header.Get("Content-Disposition"), `inline; filename=report.txt`; got != want {
		t.Errorf("Content-Disposition = %q, want %q", got, want)
	}
	etag := resp.Header.Get("ETag")
	for k, vs := range resp.Header {
		for _, v := range vs {
			if strings.Contains(v, e.a.bucket) || strings.Contains(v, "docs/") || strings.Contains(v, e.a.id) {
				t.Errorf("header %s: %q names the owner's bucket, prefix or account", k, v)
			}
		}
	}
	resp, body = e.do(e.url, "GET", sh.URL, "", nil, "Range", "bytes=2-5")
	if resp.StatusCode != 206 || string(body) != "2345" || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 2-5/%d", len(data)) {
		t.Errorf("Range: %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Range"))
	}
	resp, _ = e.do(e.url, "GET", sh.URL, "", nil, "If-None-Match", etag)
	if resp.StatusCode != 304 {
		t.Errorf("If-None-Match: %d, want 304", resp.StatusCode)
	}
	resp, _ = e.do(e.url, "GET", sh.URL, "", nil, "If-Match", `"nope"`)
	if resp.StatusCode != 412 {
		t.Errorf("If-Match other: %d, want 412", resp.StatusCode)
	}
	resp, body = e.do(e.url, "HEAD", sh.URL, "", nil)
	if resp.StatusCode != 200 || len(body) != 0 {
		t.Errorf("HEAD: %d", resp.StatusCode)
	}
	resp, body = e.do(e.url, "GET", sh.URL+"/other.txt", "", nil)
	if resp.StatusCode != 404 || bytes.Contains(body, []byte(e.a.bucket)) {
		t.Errorf("a path under a file link: %d %s", resp.StatusCode, body)
	}
	// One download: the ranged GET from byte 2, the 304, the 412 and
	// the HEAD are not downloads.
	got := e.inspect(e.a, sh.ID)
	if got.Downloads != 1 || got.LastAccess == nil {
		t.Errorf("inspect: downloads %d last access %v, want 1 and set", got.Downloads, got.LastAccess)
	}
}

func TestShareDownloadLimit(t *testing.T) {
	e := newShareEnv(t)
	e.put(e.a, "f.bin", []byte("limited"))
	sh := e.share(e.a, map[string]any{"key": "f.bin", "max_downloads": 2})
	for i := range 2 {
		if resp, _ := e.do(e.url, "GET", sh.URL, "", nil); resp.StatusCode != 200 {
			t.Fatalf("download %d: %d", i+1, resp.StatusCode)
		}
	}
	resp, body := e.do(e.url, "GET", sh.URL, "", nil)
	wantUnavailable(t, "third download", resp, body, "used_up")
	if got := e.inspect(e.a, sh.ID); got.Downloads != 2 || got.State != "used_up" {
		t.Errorf("inspect: %+v, want 2 downloads, used_up", got)
	}
}

func TestShareRevokeExpireAndRefusals(t *testing.T) {
	e := newShareEnv(t)
	e.put(e.a, "f.txt", []byte("x"))
	sh := e.share(e.a, map[string]any{"key": "f.txt"})
	if resp, _ := e.do(e.url, "DELETE", "/api/v1/shares/"+sh.ID, e.a.token, nil); resp.StatusCode != 204 {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	resp, body := e.do(e.url, "GET", sh.URL, "", nil)
	wantUnavailable(t, "revoked", resp, body, "revoked")

	short := e.share(e.a, map[string]any{"key": "f.txt", "expires_in": 1})
	time.Sleep(1100 * time.Millisecond)
	resp, body = e.do(e.url, "GET", short.URL, "", nil)
	wantUnavailable(t, "expired", resp, body, "expired")
	// Extending the expiry brings it back.
	if resp, b := e.do(e.url, "PATCH", "/api/v1/shares/"+short.ID, e.a.token, []byte(`{"expires_in": 3600}`)); resp.StatusCode != 200 {
		t.Fatalf("PATCH expiry: %d %s", resp.StatusCode, b)
	}
	if resp, _ := e.do(e.url, "GET", short.URL, "", nil); resp.StatusCode != 200 {
		t.Errorf("after extending: %d", resp.StatusCode)
	}

	gone := e.share(e.a, map[string]any{"key": "f.txt"})
	if resp, _ := e.do(e.url, "DELETE", "/api/v1/buckets/"+e.a.bucket+"/files/f.txt", e.a.token, nil); resp.StatusCode != 204 {
		t.Fatal("delete")
	}
	resp, body = e.do(e.url, "GET", gone.URL, "", nil)
	wantUnavailable(t, "object gone", resp, body, "gone")

	e.put(e.a, "g.txt", []byte("y"))
	owner := e.share(e.a, map[string]any{"key": "g.txt"})
	if _, err := e.s.auth.Users.Disable(context.Background(), e.a.id); err != nil {
		t.Fatal(err)
	}
	resp, body = e.do(e.url, "GET", owner.URL, "", nil)
	wantUnavailable(t, "owner disabled", resp, body, "unavailable")

	for _, tc := range []struct {
		name, path string
		want       int
	}{
		{"unknown token", "/s/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 404},
		{"no token", "/s/", 404},
	} {
		if resp, _ := e.do(e.url, "GET", tc.path, "", nil); resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
}

func TestShareCreateRefusals(t *testing.T) {
	e := newShareEnv(t)
	e.put(e.a, "f.txt", []byte("x"))
	for _, tc := range []struct {
		name string
		body string
		want int
	}{
		{"neither key nor prefix", `{"bucket":"%s"}`, 400},
		{"both", `{"bucket":"%s","key":"f.txt","prefix":"d/"}`, 400},
		{"missing file", `{"bucket":"%s","key":"nope.txt"}`, 404},
		{"expiry too long", `{"bucket":"%s","key":"f.txt","expires_in":99999999}`, 400},
		{"expiry in the past", `{"bucket":"%s","key":"f.txt","expires_at":"2001-01-01T00:00:00Z"}`, 400},
		{"negative limit", `{"bucket":"%s","key":"f.txt","max_downloads":-1}`, 400},
		{"drop box on a file", `{"bucket":"%s","key":"f.txt","allow_upload":true}`, 400},
		{"dot-dot prefix", `{"bucket":"%s","prefix":"a/../"}`, 400},
	} {
		resp, b := e.do(e.url, "POST", "/api/v1/shares", e.a.token, fmt.Appendf(nil, tc.body, e.a.bucket))
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, b, tc.want)
		}
	}
	// B: not on A's bucket, and A's shares do not exist for B.
	sh := e.share(e.a, map[string]any{"key": "f.txt"})
	if resp, _ := e.do(e.url, "POST", "/api/v1/shares", e.b.token, fmt.Appendf(nil, `{"bucket":"%s","key":"f.txt"}`, e.a.bucket)); resp.StatusCode != 403 {
		t.Errorf("B sharing A's file: %d, want 403", resp.StatusCode)
	}
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		if resp, _ := e.do(e.url, m, "/api/v1/shares/"+sh.ID, e.b.token, []byte(`{"expires_in":60}`)); resp.StatusCode != 404 {
			t.Errorf("B %s A's share: %d, want 404", m, resp.StatusCode)
		}
	}
	resp, b := e.do(e.url, "GET", "/api/v1/shares", e.b.token, nil)
	if resp.StatusCode != 200 || bytes.Contains(b, []byte(sh.ID)) {
		t.Errorf("B's list: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do(e.url, "GET", "/api/v1/shares", e.a.token, nil)
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(sh.ID)) || bytes.Contains(b, []byte(sh.Token)) {
		t.Errorf("A's list: %d %s (must list the share, never its token)", resp.StatusCode, b)
	}
	if resp, _ := e.do(e.url, "GET", sh.URL, "", nil); resp.StatusCode != 200 {
		t.Errorf("A's share still works: %d", resp.StatusCode)
	}
}

func TestSharePassword(t *testing.T) {
	e := newShareEnv(t)
	e.put(e.a, "p.txt", []byte("protected"))
	sh := e.share(e.a, map[string]any{"key": "p.txt", "password": "open sesame"})
	other := e.share(e.a, map[string]any{"key": "p.txt", "password": "open sesame"})
	if !sh.Password {
		t.Error("share does not say it has a password")
	}
	resp, body := e.do(e.url, "GET", sh.URL, "", nil)
	if resp.StatusCode != 401 || !bytes.Contains(body, []byte("#share_locked")) || bytes.Contains(body, []byte("protected")) {
		t.Fatalf("locked: %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.do(e.url, "POST", sh.URL+"/unlock", "", []byte(`{"password":"wrong"}`)); resp.StatusCode != 401 {
		t.Errorf("wrong password: %d, want 401", resp.StatusCode)
	}
	resp, body = e.do(e.url, "POST", sh.URL+"/unlock", "", []byte(`{"password":"open sesame"}`))
	if resp.StatusCode != 200 {
		t.Fatalf("unlock: %d %s", resp.StatusCode, body)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "coffer_share" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != sh.URL {
		t.Fatalf("cookie = %+v, want HttpOnly, SameSite=Strict, Path=%s", cookie, sh.URL)
	}
	var grant struct {
		Grant string `json:"grant"`
	}
	json.Unmarshal(body, &grant)
	if resp, b := e.do(e.url, "GET", sh.URL, "", nil, "Cookie", cookie.Name+"="+cookie.Value); resp.StatusCode != 200 || string(b) != "protected" {
		t.Errorf("with the cookie: %d %q", resp.StatusCode, b)
	}
	if resp, _ := e.do(e.url, "GET", sh.URL, "", nil, "X-Share-Grant", grant.Grant); resp.StatusCode != 200 {
		t.Errorf("with X-Share-Grant: %d", resp.StatusCode)
	}
	// A grant opens only its own link.
	if resp, _ := e.do(e.url, "GET", other.URL, "", nil, "X-Share-Grant", grant.Grant); resp.StatusCode != 401 {
		t.Errorf("another link with this grant: %d, want 401", resp.StatusCode)
	}
	if resp, _ := e.do(e.url, "GET", sh.URL, "", nil, "X-Share-Grant", grant.Grant+"x"); resp.StatusCode != 401 {
		t.Errorf("a forged grant: %d, want 401", resp.StatusCode)
	}
}

func TestShareFolderConfinement(t *testing.T) {
	e := newShareEnv(t)
	files := map[string][]byte{
		"docs/a.txt":     []byte("file a"),
		"docs/sub/b.txt": []byte("file b in sub"),
		"docs/c.jpg":     bytes.Repeat([]byte{0xff, 0xd8}, 5000),
	}
	for k, v := range files {
		e.put(e.a, k, v)
	}
	secret := []byte("A's secret, outside the share")
	e.put(e.a, "secret.txt", secret)
	e.put(e.a, "docs2/x.txt", secret)
	e.put(e.a, "docs%2e%2e/y.txt", secret)
	sh := e.share(e.a, map[string]any{"prefix": "docs", "note": "hello"})

	// Listing, paged.
	var names []string
	cursor := ""
	for range 10 {
		q := "?limit=2"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		resp, body := e.do(e.url, "GET", sh.URL+q, "", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("list: %d %s", resp.StatusCode, body)
		}
		if bytes.Contains(body, []byte(e.a.bucket)) || bytes.Contains(body, []byte("docs/")) {
			t.Errorf("listing names the bucket or the prefix: %s", body)
		}
		var page struct {
			Files []struct {
				Name string `json:"name"`
			} `json:"files"`
			Note       string `json:"note"`
			NextCursor string `json:"next_cursor"`
		}
		json.Unmarshal(body, &page)
		for _, f := range page.Files {
			names = append(names, f.Name)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if got, want := strings.Join(names, ","), "a.txt,c.jpg,sub/b.txt"; got != want {
		t.Errorf("listing = %s, want %s", got, want)
	}
	for name, data := range map[string][]byte{"a.txt": files["docs/a.txt"], "sub/b.txt": files["docs/sub/b.txt"], "sub%2Fb.txt": files["docs/sub/b.txt"]} {
		if resp, body := e.do(e.url, "GET", sh.URL+"/"+name, "", nil); resp.StatusCode != 200 || !bytes.Equal(body, data) {
			t.Errorf("GET %s: %d", name, resp.StatusCode)
		}
	}
	for _, p := range []string{
		"/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/..%2Fsecret.txt", "/%2e%2e%2fsecret.txt",
		"/sub/../../secret.txt", "/sub/%2e%2e/%2e%2e/secret.txt", "/../docs2/x.txt", "/%2e%2e%2fdocs2%2fx.txt",
		"/%252e%252e/secret.txt", "/%252e%252e%252fsecret.txt", "/./a.txt", "/%2e/a.txt", "//secret.txt",
		"/%2Fsecret.txt", "/\\..\\secret.txt", "/..", "/%2e%2e", "/sub/..", "/y.txt", "/%00",
	} {
		resp, body := e.do(e.url, "GET", sh.URL+p, "", nil)
		if resp.StatusCode == 200 || bytes.Contains(body, secret) || bytes.Contains(body, []byte(e.a.bucket)) {
			t.Errorf("GET %s%s: %d %q — must not reach outside the share", "/s/…", p, resp.StatusCode, body)
		}
		resp, _ = e.do(e.url, "PUT", sh.URL+p, "", []byte("planted"))
		if resp.StatusCode < 400 {
			t.Errorf("PUT %s: %d — a link without allow_upload took an upload", p, resp.StatusCode)
		}
	}
	// Cursors stay inside too.
	if resp, body := e.do(e.url, "GET", sh.URL+"?cursor=Li4v", "", nil); resp.StatusCode != 200 || bytes.Contains(body, []byte("secret")) {
		t.Errorf("cursor ../: %d %s", resp.StatusCode, body)
	}

	// The zip of the folder, entry by entry.
	resp, body := e.do(e.url, "GET", sh.URL+"?zip=1", "", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/zip" {
		t.Fatalf("zip: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	checkZip(t, body, map[string][]byte{"a.txt": files["docs/a.txt"], "sub/b.txt": files["docs/sub/b.txt"], "c.jpg": files["docs/c.jpg"]})
	if got := e.inspect(e.a, sh.ID); got.Downloads != 4 {
		t.Errorf("downloads after the zip = %d, want 4 (three file GETs and the zip; listings do not count)", got.Downloads)
	}
}

// checkZip checks that the archive holds exactly want, by SHA-256.
func checkZip(t *testing.T, body []byte, want map[string][]byte) *zip.Reader {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("zip: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("open %s: %v", f.Name, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("read %s: %v", f.Name, err)
		}
		w, ok := want[f.Name]
		if !ok {
			if f.Name != "_errors.txt" {
				t.Errorf("unexpected entry %q", f.Name)
			}
			continue
		}
		seen[f.Name] = true
		if sum(got) != sum(w) {
			t.Errorf("entry %s: sha256 %s, want %s", f.Name, sum(got), sum(w))
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("entry %s missing", name)
		}
	}
	return zr
}

func TestShareDropBox(t *testing.T) {
	e := newShareEnv(t)
	box := e.share(e.a, map[string]any{"prefix": "inbox/", "allow_upload": true})
	resp, body := e.do(e.url, "PUT", box.URL+"/from-b.txt", "", []byte("dropped"))
	if resp.StatusCode != 201 || bytes.Contains(body, []byte(e.a.bucket)) {
		t.Fatalf("drop: %d %s", resp.StatusCode, body)
	}
	if resp, b := e.do(e.url, "GET", "/api/v1/buckets/"+e.a.bucket+"/files/inbox/from-b.txt", e.a.token, nil); resp.StatusCode != 200 || string(b) != "dropped" {
		t.Errorf("the owner reads the drop: %d %q", resp.StatusCode, b)
	}
	// Refusals name neither the shared prefix nor the owner's account.
	if resp, b := e.do(e.url, "PUT", box.URL+"/from-b.txt", "", []byte("replaced")); resp.StatusCode != 412 || bytes.Contains(b, []byte("inbox")) {
		t.Errorf("a drop replacing a file: %d %s, want 412 without the prefix", resp.StatusCode, b)
	}
	if _, err := e.s.auth.Users.SetQuota(context.Background(), e.a.id, 10); err != nil {
		t.Fatal(err)
	}
	if resp, b := e.do(e.url, "PUT", box.URL+"/big.bin", "", bytes.Repeat([]byte("x"), 100)); resp.StatusCode != 507 || bytes.Contains(b, []byte("quota_bytes")) || bytes.Contains(b, []byte("usage")) {
		t.Errorf("a drop over the owner's quota: %d %s, want 507 without the owner's quota or usage", resp.StatusCode, b)
	}
	plain := e.share(e.a, map[string]any{"prefix": "inbox/"})
	if resp, _ := e.do(e.url, "PUT", plain.URL+"/x.txt", "", []byte("x")); resp.StatusCode != 403 {
		t.Errorf("a drop into a folder link without allow_upload: %d, want 403", resp.StatusCode)
	}
}

func TestZipAndBatchDelete(t *testing.T) {
	e := newShareEnv(t)
	files := map[string][]byte{
		"p/one.txt":     bytes.Repeat([]byte("one "), 1000),
		"p/two/2.txt":   []byte("two"),
		"solo.txt":      []byte("solo"),
		"p/photo.png":   bytes.Repeat([]byte{0x89, 'P'}, 3000),
		"q/skip.txt":    []byte("not asked for"),
		"gone-soon.txt": []byte("deleted mid-zip"),
	}
	for k, v := range files {
		e.put(e.a, k, v)
	}
	zipPath := "/api/v1/buckets/" + e.a.bucket + "/zip"
	resp, body := e.do(e.url, "POST", zipPath, e.a.token, []byte(`{"keys":["solo.txt"],"prefixes":["p/"],"compress":true}`))
	if resp.StatusCode != 200 {
		t.Fatalf("zip: %d %s", resp.StatusCode, body)
	}
	zr := checkZip(t, body, map[string][]byte{"solo.txt": files["solo.txt"], "one.txt": files["p/one.txt"], "two/2.txt": files["p/two/2.txt"], "photo.png": files["p/photo.png"]})
	for _, f := range zr.File {
		want := map[string]uint16{"one.txt": zip.Deflate, "photo.png": zip.Store}[f.Name]
		if want != 0 || f.Name == "photo.png" {
			if f.Method != want {
				t.Errorf("%s: method %d, want %d", f.Name, f.Method, want)
			}
		}
	}
	// B cannot zip A's files.
	if resp, _ := e.do(e.url, "POST", zipPath, e.b.token, []byte(`{"keys":["solo.txt"]}`)); resp.StatusCode != 403 {
		t.Errorf("B zipping A's files: %d, want 403", resp.StatusCode)
	}
	if resp, _ := e.do(e.url, "POST", zipPath, e.a.token, []byte(`{"keys":["missing.txt"]}`)); resp.StatusCode != 404 {
		t.Errorf("zip of a missing key: %d, want 404", resp.StatusCode)
	}

	// Limits refuse before streaming; an object deleted mid-zip is
	// skipped and listed in _errors.txt.
	cfg := httpapi.ConfigFrom(config.Defaults())
	cfg.MaxZipEntries = 3
	cfg.BeforeZipEntry = func(key string) {
		if key == "gone-soon.txt" {
			e.s.objects.Delete(context.Background(), object.Actor{UserID: e.a.id}, e.a.bucket, key, meta.Cond{})
		}
	}
	api := httpapi.New(e.s.apiServices(), cfg, nil)
	ts := httptest.NewServer(api.Handler())
	defer ts.Close()
	resp, body = e.do(ts.URL, "POST", zipPath, e.a.token, []byte(`{"prefixes":["p/"],"keys":["solo.txt"]}`))
	if resp.StatusCode != 413 || !bytes.Contains(body, []byte("#zip_too_large")) {
		t.Errorf("over max entries: %d %s, want 413 zip_too_large", resp.StatusCode, body)
	}
	resp, body = e.do(ts.URL, "POST", zipPath, e.a.token, []byte(`{"keys":["solo.txt","gone-soon.txt","p/two/2.txt"]}`))
	if resp.StatusCode != 200 {
		t.Fatalf("zip with a deletion: %d %s", resp.StatusCode, body)
	}
	zr = checkZip(t, body, map[string][]byte{"solo.txt": files["solo.txt"], "p/two/2.txt": files["p/two/2.txt"]})
	last := zr.File[len(zr.File)-1]
	rc, _ := last.Open()
	errs, _ := io.ReadAll(rc)
	if last.Name != "_errors.txt" || !bytes.Contains(errs, []byte("gone-soon.txt")) {
		t.Errorf("last entry %s = %q, want _errors.txt naming gone-soon.txt", last.Name, errs)
	}

	// Batch delete: by keys, then by prefix.
	delPath := "/api/v1/buckets/" + e.a.bucket + "/delete"
	if resp, _ := e.do(e.url, "POST", delPath, e.b.token, []byte(`{"keys":["solo.txt"]}`)); resp.StatusCode != 403 {
		t.Errorf("B deleting A's files: %d, want 403", resp.StatusCode)
	}
	if resp, _ := e.do(e.url, "POST", delPath, e.a.token, []byte(`{"keys":["solo.txt"],"prefix":"p/"}`)); resp.StatusCode != 400 {
		t.Errorf("keys and prefix: %d, want 400", resp.StatusCode)
	}
	resp, body = e.do(e.url, "POST", delPath, e.a.token, []byte(`{"keys":["solo.txt","nope.txt","a/../b"]}`))
	lines := ndjson(t, body)
	if resp.StatusCode != 200 || len(lines) != 4 || lines[0]["status"] != "deleted" || lines[1]["status"] != "not_found" || lines[2]["status"] != "error" ||
		lines[3]["done"] != true || lines[3]["deleted"] != 1.0 || lines[3]["not_found"] != 1.0 || lines[3]["errors"] != 1.0 {
		t.Errorf("delete by keys: %d %s", resp.StatusCode, body)
	}
	for i := range 1100 {
		e.put(e.a, fmt.Sprintf("many/%04d", i), []byte("m"))
	}
	resp, body = e.do(e.url, "POST", delPath, e.a.token, []byte(`{"prefix":"many/"}`))
	lines = ndjson(t, body)
	if resp.StatusCode != 200 || len(lines) != 1101 || lines[1100]["deleted"] != 1100.0 {
		t.Errorf("delete by prefix: %d, %d lines, last %v", resp.StatusCode, len(lines), lines[len(lines)-1])
	}
	resp, body = e.do(e.url, "GET", "/api/v1/buckets/"+e.a.bucket+"/files?prefix=many/", e.a.token, nil)
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"files":[]`)) {
		t.Errorf("after the prefix delete: %s", body)
	}
	if resp, _ := e.do(e.url, "GET", "/api/v1/buckets/"+e.a.bucket+"/files/q/skip.txt", e.a.token, nil); resp.StatusCode != 200 {
		t.Errorf("a file outside the prefix went: %d", resp.StatusCode)
	}
}

func ndjson(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("ndjson: %v in %s", err, body)
		}
		out = append(out, m)
	}
	return out
}

// TestShareDownloadLimitCountsRanges: a ranged GET through a link with a
// download limit is a download of its own (issue 18, N2: ten
// "Range: bytes=1-" requests on a limit-1 link each returned 999,999 of
// 1,000,000 bytes, and the link still showed 0 downloads).
func TestShareDownloadLimitCountsRanges(t *testing.T) {
	e := newProxiedShareEnv(t)
	data := bytes.Repeat([]byte("0123456789"), 100_000)
	e.put(e.a, "big.bin", data)
	sh := e.share(e.a, map[string]any{"key": "big.bin", "max_downloads": 1})
	a, b := []string{"X-Forwarded-For", "198.51.100.1"}, []string{"X-Forwarded-For", "198.51.100.2"}
	bodies := 0
	for i := range 10 {
		resp, body := e.do(e.url, "GET", sh.URL, "", nil, append(a, "Range", "bytes=1-")...)
		switch {
		case resp.StatusCode == 206 && bytes.Equal(body, data[1:]):
			bodies++
		case i > 0:
			wantUnavailable(t, fmt.Sprintf("ranged GET %d", i+1), resp, body[:min(len(body), 300)], "used_up")
		default:
			t.Fatalf("first ranged GET: %d, %d bytes", resp.StatusCode, len(body))
		}
	}
	if bodies != 1 {
		t.Errorf("%d of 10 ranged GETs returned the body, want 1", bodies)
	}
	if got := e.inspect(e.a, sh.ID); got.Downloads != 1 || got.State != "used_up" {
		t.Errorf("inspect: %d downloads, %s; want 1, used_up", got.Downloads, got.State)
	}
	// Anyone else's range, a suffix range, a plain GET, a conditional GET,
	// a HEAD: a used-up link answers nothing but a resume.
	for _, hdr := range [][]string{{"Range", "bytes=500000-"}, {"Range", "bytes=-10"}, {"Range", "bytes=0-0"}, nil, {"If-None-Match", `"x"`}} {
		resp, body := e.do(e.url, "GET", sh.URL, "", nil, append(b, hdr...)...)
		wantUnavailable(t, fmt.Sprintf("another client's GET %v", hdr), resp, body[:min(len(body), 300)], "used_up")
	}
	// The downloading client going back is a new download too.
	for _, hdr := range [][]string{{"Range", "bytes=0-0"}, nil} {
		resp, body := e.do(e.url, "GET", sh.URL, "", nil, append(a, hdr...)...)
		wantUnavailable(t, fmt.Sprintf("GET %v", hdr), resp, body[:min(len(body), 300)], "used_up")
	}
	resp, body := e.do(e.url, "HEAD", sh.URL, "", nil, a...)
	if resp.StatusCode != 404 || len(body) != 0 {
		t.Errorf("HEAD of a used-up link: %d", resp.StatusCode)
	}

	// A link without a limit still counts only GETs from the first byte
	// (a video seeking is not a download each time).
	free := e.share(e.a, map[string]any{"key": "big.bin"})
	for range 3 {
		if resp, _ := e.do(e.url, "GET", free.URL, "", nil, "Range", "bytes=1-"); resp.StatusCode != 206 {
			t.Fatalf("ranged GET of an unlimited link: %d", resp.StatusCode)
		}
	}
	if got := e.inspect(e.a, free.ID); got.Downloads != 0 {
		t.Errorf("unlimited link: %d downloads after ranged GETs, want 0", got.Downloads)
	}
}

// TestShareDownloadResumes: a client whose download through a limit-1
// link was cut off resumes it (curl -C - style: "Range: bytes=N-"; or a
// browser's, with If-Range), more than once; nobody else does, and a
// resume that does not move forward is a new download (refused).
func TestShareDownloadResumes(t *testing.T) {
	e := newProxiedShareEnv(t)
	data := bytes.Repeat([]byte("abcdefghij"), 100_000)
	e.put(e.a, "big.bin", data)
	client := func(ip string) []string { return []string{"X-Forwarded-For", ip} }

	// cutGET reads n bytes of the answer, then drops the connection.
	cutGET := func(t *testing.T, url string, n int, hdr ...string) ([]byte, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", e.url+url, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("GET %v: %d", hdr, resp.StatusCode)
		}
		got := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, got); err != nil {
			t.Fatal(err)
		}
		return got, resp.Header.Get("ETag")
	}

	t.Run("curl -C -", func(t *testing.T) {
		sh := e.share(e.a, map[string]any{"key": "big.bin", "max_downloads": 1})
		got, _ := cutGET(t, sh.URL, 300_000, client("198.51.100.1")...)
		// Someone else cannot take over the download.
		resp, body := e.do(e.url, "GET", sh.URL, "", nil, append(client("198.51.100.2"), "Range", "bytes=300000-")...)
		wantUnavailable(t, "another client's resume", resp, body, "used_up")
		part, _ := cutGET(t, sh.URL, 200_000, append(client("198.51.100.1"), "Range", "bytes=300000-")...)
		got = append(got, part...)
		resp, body = e.do(e.url, "GET", sh.URL, "", nil, append(client("198.51.100.1"), "Range", fmt.Sprintf("bytes=%d-", len(got)))...)
		if resp.StatusCode != 206 {
			t.Fatalf("second resume: %d %s", resp.StatusCode, body)
		}
		if got = append(got, body...); !bytes.Equal(got, data) {
			t.Errorf("resumed download: %d bytes, not the file", len(got))
		}
		// Once more from an offset already resumed from: a new download.
		resp, body = e.do(e.url, "GET", sh.URL, "", nil, append(client("198.51.100.1"), "Range", "bytes=500000-")...)
		wantUnavailable(t, "resume from the same offset again", resp, body, "used_up")
		if got := e.inspect(e.a, sh.ID); got.Downloads != 1 {
			t.Errorf("inspect: %d downloads, want 1", got.Downloads)
		}
	})

	t.Run("browser, If-Range", func(t *testing.T) {
		sh := e.share(e.a, map[string]any{"key": "big.bin", "max_downloads": 1})
		got, etag := cutGET(t, sh.URL, 123_456, client("2001:db8:5:6::10")...)
		// Another address of the same /64 (a privacy address) resumes.
		resp, body := e.do(e.url, "GET", sh.URL, "", nil, append(client("2001:db8:5:6::99"),
			"Range", "bytes=123456-", "If-Range", etag)...)
		if resp.StatusCode != 206 || !bytes.Equal(append(got, body...), data) {
			t.Fatalf("resume with If-Range: %d, %d bytes", resp.StatusCode, len(body))
		}
		// A stale If-Range would send the whole file: a new download.
		resp, body = e.do(e.url, "GET", sh.URL, "", nil, append(client("2001:db8:5:6::10"),
			"Range", "bytes=200000-", "If-Range", `"stale"`)...)
		wantUnavailable(t, "resume with a stale If-Range", resp, body, "used_up")
	})
}

// TestUsedUpFolderLinkOnlyResumes: a folder link with a download limit,
// used up by one file's download, still lets that download resume, but
// answers a listing or a zip, Range header or not, as used up (no
// planning, no sizes).
func TestUsedUpFolderLinkOnlyResumes(t *testing.T) {
	e := newShareEnv(t)
	data := bytes.Repeat([]byte("folder file "), 10_000)
	e.put(e.a, "dir/a.bin", data)
	e.put(e.a, "dir/b.bin", data)
	sh := e.share(e.a, map[string]any{"prefix": "dir/", "max_downloads": 1})
	if resp, body := e.do(e.url, "GET", sh.URL+"/a.bin", "", nil, "Range", "bytes=0-99"); resp.StatusCode != 206 || len(body) != 100 {
		t.Fatalf("first download: %d, %d bytes", resp.StatusCode, len(body))
	}
	if resp, body := e.do(e.url, "GET", sh.URL+"/a.bin", "", nil, "Range", "bytes=100-"); resp.StatusCode != 206 || !bytes.Equal(body, data[100:]) {
		t.Fatalf("resume: %d, %d bytes", resp.StatusCode, len(body))
	}
	for _, tc := range []struct{ path, rng string }{{"", "bytes=1-"}, {"?zip=1", "bytes=1-"}, {"?zip=1", ""}, {"/b.bin", "bytes=1-"}} {
		resp, body := e.do(e.url, "GET", sh.URL+tc.path, "", nil, "Range", tc.rng)
		wantUnavailable(t, "GET "+tc.path+" "+tc.rng, resp, body[:min(len(body), 300)], "used_up")
	}
}

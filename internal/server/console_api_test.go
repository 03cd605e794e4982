package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// The API features the web console needs (issue 17): download grants that
// stay out of the share list and go once spent, deleting links that no
// longer work, what a link is (?info=1), resuming a cookie session
// without an error when there is none, the admin flag of /me, and the
// bucket list's object counts.

func (e *shareEnv) shareIDs(u shareUser, query string) map[string]string {
	e.t.Helper()
	resp, b := e.do(e.url, "GET", "/api/v1/shares"+query, u.token, nil)
	if resp.StatusCode != 200 {
		e.t.Fatalf("list shares%s: %d %s", query, resp.StatusCode, b)
	}
	var l struct {
		Shares []struct {
			ID, State string
			Grant     bool
		} `json:"shares"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, sh := range l.Shares {
		out[sh.ID] = sh.State
		if sh.Grant {
			out[sh.ID] += "+grant"
		}
	}
	return out
}

func TestDownloadGrants(t *testing.T) {
	e := newShareEnv(t)
	e.put(e.a, "f.txt", []byte("grant me"))
	link := e.share(e.a, map[string]any{"key": "f.txt"})
	g1 := e.share(e.a, map[string]any{"key": "f.txt", "grant": true, "expires_in": 300, "max_downloads": 1})

	// A grant is left out of the list, and in it with ?grants=1.
	if got := e.shareIDs(e.a, ""); len(got) != 1 || got[link.ID] != "active" {
		t.Errorf("list = %v, want only the link", got)
	}
	if got := e.shareIDs(e.a, "?grants=1"); got[g1.ID] != "active+grant" || got[link.ID] != "active" {
		t.Errorf("list?grants=1 = %v, want the link and the grant", got)
	}
	if resp, _ := e.do(e.url, "GET", "/api/v1/shares?grants=maybe", e.a.token, nil); resp.StatusCode != 400 {
		t.Errorf("?grants=maybe: %d, want 400", resp.StatusCode)
	}

	// A grant is a download like any link: used up after one.
	if resp, b := e.do(e.url, "GET", g1.URL+"?download=1", "", nil); resp.StatusCode != 200 || string(b) != "grant me" ||
		!strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("download through the grant: %d %q %q", resp.StatusCode, b, resp.Header.Get("Content-Disposition"))
	}
	if got := e.inspect(e.a, g1.ID).State; got != "used_up" {
		t.Fatalf("grant after its download: %s", got)
	}

	// The next grant clears the spent one: it is gone, token and all.
	g2 := e.share(e.a, map[string]any{"key": "f.txt", "grant": true, "expires_in": 300, "max_downloads": 1})
	if got := e.shareIDs(e.a, "?grants=1"); len(got) != 2 || got[g2.ID] != "active+grant" {
		t.Errorf("after a second grant, list?grants=1 = %v, want the link and the new grant", got)
	}
	if resp, _ := e.do(e.url, "GET", "/api/v1/shares/"+g1.ID, e.a.token, nil); resp.StatusCode != 404 {
		t.Errorf("the spent grant: %d, want 404", resp.StatusCode)
	}
	if resp, b := e.do(e.url, "GET", g1.URL, "", nil); resp.StatusCode != 404 || strings.Contains(string(b), "grant me") {
		t.Errorf("the spent grant's token: %d %s", resp.StatusCode, b)
	}

	// Refused: a grant for longer than an hour, with a password, or a drop box.
	for name, body := range map[string]map[string]any{
		"two hours":  {"key": "f.txt", "grant": true, "expires_in": 7200},
		"password":   {"key": "f.txt", "grant": true, "expires_in": 60, "password": "secret12"},
		"upload":     {"prefix": "in/", "grant": true, "expires_in": 60, "allow_upload": true},
		"no expires": {"key": "f.txt", "grant": true},
	} {
		body["bucket"] = e.a.bucket
		raw, _ := json.Marshal(body)
		if resp, b := e.do(e.url, "POST", "/api/v1/shares", e.a.token, raw); resp.StatusCode != 400 {
			t.Errorf("grant with %s: %d %s, want 400", name, resp.StatusCode, b)
		}
	}
	// DELETE removes a grant at once, even an active one.
	if resp, b := e.do(e.url, "DELETE", "/api/v1/shares/"+g2.ID, e.a.token, nil); resp.StatusCode != 204 {
		t.Fatalf("delete grant: %d %s", resp.StatusCode, b)
	}
	if got := e.shareIDs(e.a, "?grants=1"); len(got) != 1 {
		t.Errorf("after deleting the grant, list?grants=1 = %v", got)
	}
}

func TestDeleteShareStates(t *testing.T) {
	e := newShareEnv(t)
	e.put(e.a, "f.txt", []byte("data"))
	del := func(id string) {
		t.Helper()
		if resp, b := e.do(e.url, "DELETE", "/api/v1/shares/"+id, e.a.token, nil); resp.StatusCode != 204 {
			t.Fatalf("DELETE %s: %d %s", id, resp.StatusCode, b)
		}
	}
	// Active: the first DELETE revokes (still listed), the second removes.
	active := e.share(e.a, map[string]any{"key": "f.txt"})
	del(active.ID)
	if got := e.shareIDs(e.a, "")[active.ID]; got != "revoked" {
		t.Errorf("after one DELETE: %q, want revoked", got)
	}
	del(active.ID)
	if _, listed := e.shareIDs(e.a, "")[active.ID]; listed {
		t.Errorf("a revoked link is still listed after DELETE")
	}
	if resp, _ := e.do(e.url, "DELETE", "/api/v1/shares/"+active.ID, e.a.token, nil); resp.StatusCode != 404 {
		t.Errorf("DELETE of a removed link: %d, want 404", resp.StatusCode)
	}
	// Used up and expired: removed by one DELETE.
	used := e.share(e.a, map[string]any{"key": "f.txt", "max_downloads": 1})
	if resp, _ := e.do(e.url, "GET", used.URL, "", nil); resp.StatusCode != 200 {
		t.Fatalf("download: %d", resp.StatusCode)
	}
	expired := e.share(e.a, map[string]any{"key": "f.txt"})
	if _, err := e.s.meta.Shares.SetShareExpiry(context.Background(), expired.ID, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := e.shareIDs(e.a, ""); got[used.ID] != "used_up" || got[expired.ID] != "expired" {
		t.Fatalf("states: %v", got)
	}
	// B cannot delete A's links.
	if resp, _ := e.do(e.url, "DELETE", "/api/v1/shares/"+used.ID, e.b.token, nil); resp.StatusCode != 404 {
		t.Errorf("B deletes A's link: %d, want 404", resp.StatusCode)
	}
	del(used.ID)
	del(expired.ID)
	if got := e.shareIDs(e.a, ""); len(got) != 0 {
		t.Errorf("after deleting them all: %v", got)
	}
}

func TestShareInfo(t *testing.T) {
	e := newShareEnv(t)
	e.put(e.a, "docs/report.pdf", []byte("%PDF-1.4 a report"))
	file := e.share(e.a, map[string]any{"key": "docs/report.pdf", "note": "for Q3", "max_downloads": 2})
	folder := e.share(e.a, map[string]any{"prefix": "docs/", "allow_upload": true})
	info := func(s shareOut) (int, map[string]any, string) {
		t.Helper()
		resp, b := e.do(e.url, "GET", s.URL+"?info=1", "", nil)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return resp.StatusCode, out, string(b)
	}
	st, got, raw := info(file)
	if st != 200 || got["kind"] != "file" || got["name"] != "report.pdf" || got["size"] != float64(17) ||
		got["note"] != "for Q3" || got["downloads_left"] != float64(2) || got["expires_at"] == nil {
		t.Errorf("file info: %d %s", st, raw)
	}
	if strings.Contains(raw, e.a.bucket) || strings.Contains(raw, "docs/") {
		t.Errorf("file info names the bucket or the key: %s", raw)
	}
	st, got, raw = info(folder)
	if _, limited := got["downloads_left"]; st != 200 || got["kind"] != "folder" || got["name"] != "docs" || got["allow_upload"] != true || limited {
		t.Errorf("folder info: %d %s", st, raw)
	}
	// Info is no download: two of them leave both downloads.
	if got := e.inspect(e.a, file.ID).Downloads; got != 0 {
		t.Errorf("downloads after info: %d, want 0", got)
	}
	for range 2 {
		if resp, _ := e.do(e.url, "GET", file.URL, "", nil); resp.StatusCode != 200 {
			t.Fatalf("download: %d", resp.StatusCode)
		}
	}
	// Used up: info says so, as every use of the link does.
	st, got, raw = info(file)
	if extra, _ := got["extra"].(map[string]any); st != 404 || extra["reason"] != "share_unavailable" || extra["state"] != "used_up" {
		t.Errorf("info of a used-up link: %d %s", st, raw)
	}
}

// TestShareInfoOfAGoneFolder: a folder link whose bucket is gone is
// refused by ?info=1 as by its listing (404 #share_unavailable, gone),
// also once another account has taken the bucket's name; the share page
// must not describe a folder nothing can be read from or dropped into.
func TestShareInfoOfAGoneFolder(t *testing.T) {
	e := newShareEnv(t)
	const bucket = "a-gone-folder"
	if resp, b := e.do(e.url, "POST", "/api/v1/buckets", e.a.token, []byte(`{"name":"`+bucket+`"}`)); resp.StatusCode != 201 {
		t.Fatalf("create bucket: %d %s", resp.StatusCode, b)
	}
	box := e.share(e.a, map[string]any{"bucket": bucket, "prefix": "inbox/", "allow_upload": true})
	if resp, b := e.do(e.url, "GET", box.URL+"?info=1", "", nil); resp.StatusCode != 200 {
		t.Fatalf("info: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do(e.url, "DELETE", "/api/v1/buckets/"+bucket, e.a.token, nil); resp.StatusCode != 204 {
		t.Fatalf("delete bucket: %d %s", resp.StatusCode, b)
	}
	resp, body := e.do(e.url, "GET", box.URL, "", nil)
	wantUnavailable(t, "the listing of a gone bucket", resp, body, "gone")
	resp, body = e.do(e.url, "GET", box.URL+"?info=1", "", nil)
	wantUnavailable(t, "the info of a gone bucket", resp, body, "gone")
	if resp, b := e.do(e.url, "POST", "/api/v1/buckets", e.b.token, []byte(`{"name":"`+bucket+`"}`)); resp.StatusCode != 201 {
		t.Fatalf("another account takes the name: %d %s", resp.StatusCode, b)
	}
	resp, body = e.do(e.url, "GET", box.URL+"?info=1", "", nil)
	wantUnavailable(t, "the info of a bucket another account took", resp, body, "gone")
	if strings.Contains(string(body), bucket) {
		t.Errorf("the refusal names the bucket: %s", body)
	}
}

func TestResumeSession(t *testing.T) {
	ts := newConsoleServer(t, true)
	post := func(path string, cookie *http.Cookie, header bool) (*http.Response, map[string]any) {
		t.Helper()
		return postSession(t, ts.URL+path, `{}`, cookie, header)
	}
	cookieOf := func(res *http.Response) *http.Cookie {
		for _, c := range res.Cookies() {
			if c.Name == "coffer_refresh" {
				return c
			}
		}
		return nil
	}
	signedOut := func(what string, res *http.Response, body map[string]any) {
		t.Helper()
		if res.StatusCode != 200 || body["signed_in"] != false || body["access_token"] != nil {
			t.Errorf("%s: %d %v, want 200 signed_in false", what, res.StatusCode, body)
		}
	}

	res, body := post("/api/v1/auth/resume", nil, true)
	signedOut("no cookie", res, body)
	if res, _ := post("/api/v1/auth/resume", nil, false); res.StatusCode != 400 {
		t.Errorf("resume without X-Coffer-Session: %d, want 400", res.StatusCode)
	}

	lres, _ := postSession(t, ts.URL+"/api/v1/auth/login", `{"email":"c@example.com","password":"console password"}`, nil, true)
	c := cookieOf(lres)
	if c == nil {
		t.Fatal("login set no cookie")
	}
	res, body = post("/api/v1/auth/resume", c, true)
	c2 := cookieOf(res)
	if res.StatusCode != 200 || body["signed_in"] != true || body["access_token"] == "" || body["refresh_token"] != "" || c2 == nil || c2.Value == c.Value {
		t.Fatalf("resume with the login's cookie: %d %v, cookie %v", res.StatusCode, body, c2)
	}
	// The old cookie was rotated: presenting it again ends the session
	// (reuse), quietly, and clears the cookie.
	res, body = post("/api/v1/auth/resume", c, true)
	signedOut("a rotated cookie", res, body)
	if cl := cookieOf(res); cl == nil || cl.MaxAge >= 0 {
		t.Errorf("a rotated cookie is not cleared: %q", res.Header.Values("Set-Cookie"))
	}
	res, body = post("/api/v1/auth/resume", c2, true)
	signedOut("the session that reuse ended", res, body)
	res, body = post("/api/v1/auth/resume", &http.Cookie{Name: "coffer_refresh", Value: "forged"}, true)
	signedOut("a forged cookie", res, body)
}

func TestMeAndBucketStats(t *testing.T) {
	e := newShareEnv(t)
	var me struct {
		Admin *bool `json:"admin"`
	}
	resp, b := e.do(e.url, "GET", "/api/v1/me", e.a.token, nil)
	if err := json.Unmarshal(b, &me); err != nil || resp.StatusCode != 200 || me.Admin == nil || *me.Admin {
		t.Errorf("/me of a user: %d %s, want admin false", resp.StatusCode, b)
	}
	u, err := e.s.meta.Accounts.GetUser(context.Background(), e.a.id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.meta.Accounts.UpdateUser(context.Background(), u.ID, meta.UserUpdate{Admin: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, b := e.do(e.url, "GET", "/api/v1/me", e.a.token, nil); json.Unmarshal(b, &me) != nil || me.Admin == nil || !*me.Admin {
		t.Errorf("/me of an administrator: %s, want admin true", b)
	}

	e.put(e.a, "one", []byte("12345"))
	e.put(e.a, "dir/two", []byte("678"))
	e.put(e.a, "dir/", nil) // a folder marker
	_, b = e.do(e.url, "GET", "/api/v1/buckets", e.a.token, nil)
	var l struct {
		Buckets []struct {
			Name           string
			Objects, Bytes *int64
		} `json:"buckets"`
	}
	if err := json.Unmarshal(b, &l); err != nil || len(l.Buckets) != 1 {
		t.Fatalf("bucket list: %s", b)
	}
	if bk := l.Buckets[0]; bk.Objects == nil || bk.Bytes == nil || *bk.Objects != 3 || *bk.Bytes != 8 {
		t.Errorf("bucket list: %s, want 3 objects, 8 bytes", b)
	}
	if _, b := e.do(e.url, "GET", "/api/v1/buckets/"+e.a.bucket, e.a.token, nil); strings.Contains(string(b), `"objects"`) {
		t.Errorf("GET of one bucket carries counts (only the list does): %s", b)
	}
}

func ptr[T any](v T) *T { return &v }

// TestShareOfAReusedBucketName: a link reads only its owner's bucket. Its
// bucket deleted and the name taken by another account that makes it
// public-read, a folder link (or a file link to a key the new bucket
// holds) must not serve the other account's files: the link's owner could
// read them as anyone can, but the link would then publish files its
// owner never shared.
func TestShareOfAReusedBucketName(t *testing.T) {
	e := newShareEnv(t)
	const bucket = "a-reused-name"
	if resp, b := e.do(e.url, "POST", "/api/v1/buckets", e.a.token, []byte(`{"name":"`+bucket+`"}`)); resp.StatusCode != 201 {
		t.Fatalf("create bucket: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do(e.url, "PUT", "/api/v1/buckets/"+bucket+"/files/docs/x.txt", e.a.token, []byte("alice's")); resp.StatusCode != 201 {
		t.Fatalf("alice's upload: %d %s", resp.StatusCode, b)
	}
	folder := e.share(e.a, map[string]any{"bucket": bucket, "prefix": "docs/"})
	file := e.share(e.a, map[string]any{"bucket": bucket, "key": "docs/x.txt"})
	if resp, b := e.do(e.url, "DELETE", "/api/v1/buckets/"+bucket+"/files/docs/x.txt", e.a.token, nil); resp.StatusCode != 204 {
		t.Fatalf("alice's delete: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do(e.url, "DELETE", "/api/v1/buckets/"+bucket, e.a.token, nil); resp.StatusCode != 204 {
		t.Fatalf("delete bucket: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do(e.url, "POST", "/api/v1/buckets", e.b.token, []byte(`{"name":"`+bucket+`","visibility":"public-read"}`)); resp.StatusCode != 201 {
		t.Fatalf("another account takes the name: %d %s", resp.StatusCode, b)
	}
	secret := []byte("bob's public file, never shared by alice")
	if resp, b := e.do(e.url, "PUT", "/api/v1/buckets/"+bucket+"/files/docs/x.txt", e.b.token, secret); resp.StatusCode != 201 {
		t.Fatalf("bob's upload: %d %s", resp.StatusCode, b)
	}
	for _, c := range []struct{ what, url string }{
		{"the folder link's file", folder.URL + "/x.txt"},
		{"the folder link's listing", folder.URL},
		{"the folder link's zip", folder.URL + "?zip=1"},
		{"the file link", file.URL},
		{"the file link's info", file.URL + "?info=1"},
	} {
		resp, body := e.do(e.url, "GET", c.url, "", nil)
		if resp.StatusCode < 400 || strings.Contains(string(body), string(secret)) || strings.Contains(string(body), "x.txt") {
			t.Errorf("%s through alice's old link: %d %.200s, want a refusal", c.what, resp.StatusCode, body)
		}
	}
}

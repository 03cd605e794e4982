package e2e

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/s3api/sigv2"
	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
	"github.com/coffer-storage/coffer/test/testenv"
)

// cli runs a coffer admin command on srv's stores and returns its output.
func cli(t *testing.T, srv *testenv.Server, args ...string) (string, error) {
	t.Helper()
	if !testenv.ScaleOut() {
		args = append(args, "--data", srv.Data)
	}
	out, err := srv.Command(args...).CombinedOutput()
	return string(out), err
}

// newAdmin creates an administrator with the real CLI and logs it in.
func newAdmin(t *testing.T, srv *testenv.Server) *testenv.Client {
	t.Helper()
	c := testenv.NewClient(srv.URL)
	c.Email = "admin-" + strings.ToLower(testenvID()) + "@example.com"
	if out, err := cli(t, srv, "user", "create", "--email", c.Email, "--password", "admin password", "--admin"); err != nil || !strings.Contains(out, "created administrator") {
		t.Fatalf("coffer user create --admin: %v\n%s", err, out)
	}
	c.Login(t, "admin password")
	return c
}

func testenvID() string { return strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", "") }

func userID(t *testing.T, c *testenv.Client) string {
	t.Helper()
	var me struct{ ID string }
	if st := c.JSON(t, "GET", "/api/v1/me", nil, &me); st != 200 {
		t.Fatalf("GET /me: %d", st)
	}
	return me.ID
}

// do sends a request without credentials (presigned URLs) and returns the
// status.
func status(t *testing.T, method, url string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// userCreds is everything a user holds: session, S3 key, presigned URLs,
// a direct-upload part URL.
type userCreds struct {
	u                  *s3User
	presignV4, presign string // GET URLs of u's object
	partURL            string // "" in the scale-out shape (the backend's own URL)
}

func newCredentials(t *testing.T, srv *testenv.Server) *userCreds {
	t.Helper()
	u := newS3User(t, srv)
	if r := u.s3(t, "PUT", "/"+u.Bucket+"/obj", []byte("hello"), ""); r.status != 200 {
		t.Fatalf("S3 PUT: %d %s", r.status, r.body)
	}
	c := &userCreds{u: u}
	var err error
	c.presignV4, err = sigv4.Presign("GET", srv.S3URL+"/"+u.Bucket+"/obj", nil, u.id, u.secret, "us-east-1", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c.presign, err = sigv2.Presign("GET", srv.S3URL+"/"+u.Bucket+"/obj", "", nil, u.id, u.secret, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !testenv.ScaleOut() {
		var s struct {
			Parts []struct {
				URL string `json:"url"`
			} `json:"parts"`
		}
		if st := u.JSON(t, "POST", "/api/v1/uploads", map[string]any{"bucket": u.Bucket, "key": "direct.bin", "size": 10}, &s); st != 201 || len(s.Parts) != 1 {
			t.Fatalf("direct upload: %d", st)
		}
		c.partURL = s.Parts[0].URL
	}
	return c
}

// check sends one request with each credential and fails unless each
// answers as want says (true: works; false: refused).
func (c *userCreds) check(t *testing.T, on *testenv.Server, token string, want bool, what string) {
	t.Helper()
	u := *c.u
	u.srv = on
	cl := *c.u.Client
	cl.Base, cl.Token = on.URL, token
	u.Client = &cl
	results := map[string][2]int{} // got, want
	add := func(name string, got, ok, refused int) {
		w := refused
		if want {
			w = ok
		}
		results[name] = [2]int{got, w}
	}
	add("access token", u.JSON(t, "GET", "/api/v1/me", nil, nil), 200, 401)
	add("SigV4 GET", u.s3(t, "GET", "/"+u.Bucket+"/obj", nil, "").status, 200, 403)
	add("SigV4 PUT", u.s3(t, "PUT", "/"+u.Bucket+"/obj", []byte("hello"), "").status, 200, 403)
	add("SigV4 list", u.s3(t, "GET", "/"+u.Bucket+"?list-type=2", nil, "").status, 200, 403)
	move := func(url string) string { return strings.Replace(url, c.u.srv.S3URL, on.S3URL, 1) }
	add("presigned SigV4 GET", status(t, "GET", move(c.presignV4), nil), 200, 403)
	add("presigned SigV2 GET", status(t, "GET", move(c.presign), nil), 200, 403)
	if c.partURL != "" {
		add("direct-upload part URL", status(t, "PUT", move(c.partURL), []byte("0123456789")), 200, 403)
	}
	for name, r := range results {
		if r[0] != r[1] {
			t.Errorf("%s: %s: status %d, want %d", what, name, r[0], r[1])
		}
	}
}

// TestDisableTakesEffect: an administrator disables a user; on the next
// request the user's access token, S3 key (SigV4 GET, PUT, list),
// presigned URLs (SigV4 and SigV2), direct-upload part URL, refresh token
// and login all fail. Enabling restores the login and the key; the old
// sessions stay dead. Three rounds, to catch ordering races.
func TestDisableTakesEffect(t *testing.T) {
	srv := testenv.Start(t)
	admin := newAdmin(t, srv)
	c := newCredentials(t, srv)
	id := userID(t, c.u.Client)
	first := *c.u.Client
	for round := range 3 {
		c.check(t, srv, c.u.Token, true, "before disable")
		var got struct{ Disabled bool }
		if st := admin.JSON(t, "POST", "/api/v1/admin/users/"+id+"/disable", nil, &got); st != 200 || !got.Disabled {
			t.Fatalf("round %d: disable: %d %+v", round, st, got)
		}
		c.check(t, srv, c.u.Token, false, "after disable")
		if st := c.u.JSON(t, "POST", "/api/v1/auth/refresh", map[string]string{"refresh_token": c.u.Refresh}, nil); st != 401 {
			t.Errorf("round %d: refresh after disable: %d, want 401", round, st)
		}
		if st := testenv.NewClient(srv.URL).JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": c.u.Email, "password": "correct horse battery"}, nil); st != 401 {
			t.Errorf("round %d: login after disable: %d, want 401", round, st)
		}
		if st := admin.JSON(t, "POST", "/api/v1/admin/users/"+id+"/enable", nil, &got); st != 200 || got.Disabled {
			t.Fatalf("round %d: enable: %d %+v", round, st, got)
		}
		for name, cl := range map[string]*testenv.Client{"this round's": c.u.Client, "the first": &first} {
			if st := cl.JSON(t, "GET", "/api/v1/me", nil, nil); st != 401 {
				t.Errorf("round %d: %s access token after enable: %d, want 401", round, name, st)
			}
			if st := cl.JSON(t, "POST", "/api/v1/auth/refresh", map[string]string{"refresh_token": cl.Refresh}, nil); st != 401 {
				t.Errorf("round %d: %s refresh token after enable: %d, want 401", round, name, st)
			}
		}
		c.u.Login(t, "correct horse battery")
	}
	c.check(t, srv, c.u.Token, true, "after the last enable")
}

// TestPasswordChangeAndReset: a password change ends the user's other
// sessions and returns a working one; the old password stops working; an
// administrator's reset ends every session.
func TestPasswordChangeAndReset(t *testing.T) {
	srv := testenv.Start(t)
	admin := newAdmin(t, srv)
	a := srv.NewUser(t)
	other := *a
	other.Login(t, "correct horse battery")
	if st := a.JSON(t, "POST", "/api/v1/me/password", map[string]string{"old_password": "wrong password", "new_password": "a new password"}, nil); st != 401 {
		t.Errorf("change with a wrong old password: %d, want 401", st)
	}
	var sess struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		TokenType    string `json:"token_type"`
	}
	if st := a.JSON(t, "POST", "/api/v1/me/password", map[string]string{"old_password": "correct horse battery", "new_password": "a new password"}, &sess); st != 200 || sess.AccessToken == "" || sess.TokenType != "Bearer" {
		t.Fatalf("change: %d %+v", st, sess)
	}
	for name, cl := range map[string]*testenv.Client{"the caller's old": a, "another": &other} {
		if st := cl.JSON(t, "GET", "/api/v1/me", nil, nil); st != 401 {
			t.Errorf("%s session after the change: %d, want 401", name, st)
		}
		if st := cl.JSON(t, "POST", "/api/v1/auth/refresh", map[string]string{"refresh_token": cl.Refresh}, nil); st != 401 {
			t.Errorf("%s refresh token after the change: %d, want 401", name, st)
		}
	}
	a.Token, a.Refresh = sess.AccessToken, sess.RefreshToken
	if st := a.JSON(t, "GET", "/api/v1/me", nil, nil); st != 200 {
		t.Errorf("the new session: %d", st)
	}
	if st := testenv.NewClient(srv.URL).JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": a.Email, "password": "correct horse battery"}, nil); st != 401 {
		t.Errorf("login with the old password: %d, want 401", st)
	}
	a.Login(t, "a new password")

	// An administrator's reset.
	if st := admin.JSON(t, "POST", "/api/v1/admin/users/"+userID(t, a)+"/password", map[string]string{"password": "short"}, nil); st != 400 {
		t.Errorf("reset to a too short password: %d, want 400", st)
	}
	if st := admin.JSON(t, "POST", "/api/v1/admin/users/"+userID(t, a)+"/password", map[string]string{"password": "reset by admin"}, nil); st != 204 {
		t.Fatalf("reset: %d", st)
	}
	if st := a.JSON(t, "GET", "/api/v1/me", nil, nil); st != 401 {
		t.Errorf("session after a reset: %d, want 401", st)
	}
	a.Login(t, "reset by admin")
}

// blobFiles counts the blob files of an embedded server's data folder.
func blobFiles(t *testing.T, srv *testenv.Server) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(srv.Data, "blobs", "blobs"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// TestAdminAPI walks the admin API: users (list, search, pages, create,
// get, quota), a user's buckets and keys, key revocation, server info,
// and deletion with and without purge (whose blobs the garbage collector
// reclaims, never the request).
func TestAdminAPI(t *testing.T) {
	srv := testenv.Start(t)
	admin := newAdmin(t, srv)
	adminID := userID(t, admin)

	// Create users, one of them an administrator with a quota.
	type userJSON struct {
		ID         string `json:"id"`
		Email      string `json:"email"`
		QuotaBytes int64  `json:"quota_bytes"`
		UsageBytes int64  `json:"usage_bytes"`
		Admin      bool   `json:"admin"`
		Disabled   bool   `json:"disabled"`
	}
	var made struct {
		User   userJSON `json:"user"`
		Bucket struct{ Name string }
	}
	if st := admin.JSON(t, "POST", "/api/v1/admin/users", map[string]any{"email": "Second.Admin@Example.com", "password": "second admin pw", "admin": true, "quota_bytes": 1 << 20}, &made); st != 201 ||
		made.User.Email != "second.admin@example.com" || !made.User.Admin || made.User.QuotaBytes != 1<<20 || made.Bucket.Name == "" {
		t.Fatalf("create user: %d %+v", st, made)
	}
	if st := admin.JSON(t, "POST", "/api/v1/admin/users", map[string]any{"email": "second.admin@example.com", "password": "another pw"}, nil); st != 409 {
		t.Errorf("create with a taken email: %d, want 409", st)
	}
	second := testenv.NewClient(srv.URL)
	second.Email = "second.admin@example.com"
	second.Login(t, "second admin pw")
	if st := second.JSON(t, "GET", "/api/v1/admin/server", nil, nil); st != 200 {
		t.Errorf("the created administrator on the admin API: %d", st)
	}

	u := newS3User(t, srv)
	uid := userID(t, u.Client)
	big := randBytes(t, 200_000) // a blob, not an inline object
	if st, _, _ := put(t, u.Client, u.Bucket, "big.bin", big); st != 201 {
		t.Fatal("put")
	}

	// Search and pages.
	var page struct {
		Users      []userJSON `json:"users"`
		NextCursor string     `json:"next_cursor"`
	}
	if st := admin.JSON(t, "GET", "/api/v1/admin/users?q="+strings.ToUpper(u.Email[:8]), nil, &page); st != 200 || len(page.Users) != 1 || page.Users[0].ID != uid || page.Users[0].UsageBytes != int64(len(big)) {
		t.Errorf("search: %d %+v", st, page)
	}
	var all []string
	cursor := ""
	for range 10 {
		page.NextCursor = ""
		if st := admin.JSON(t, "GET", "/api/v1/admin/users?limit=1&cursor="+cursor, nil, &page); st != 200 || len(page.Users) != 1 {
			t.Fatalf("page: %d %+v", st, page)
		}
		all = append(all, page.Users[0].Email)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(all) != 3 || !(all[0] < all[1] && all[1] < all[2]) {
		t.Errorf("pages of one user: %q", all)
	}
	for _, bad := range []string{"limit=0", "limit=x", "cursor=***"} {
		if st := admin.JSON(t, "GET", "/api/v1/admin/users?"+bad, nil, nil); st != 400 {
			t.Errorf("list with %s: %d, want 400", bad, st)
		}
	}

	// One user: get, quota, buckets, keys, revoke a key.
	var one userJSON
	if st := admin.JSON(t, "GET", "/api/v1/admin/users/"+uid, nil, &one); st != 200 || one.Email != u.Email || one.Admin || one.Disabled {
		t.Errorf("get: %d %+v", st, one)
	}
	if st := admin.JSON(t, "GET", "/api/v1/admin/users/nosuchuser", nil, nil); st != 404 {
		t.Errorf("get an unknown user: %d, want 404", st)
	}
	if st := admin.JSON(t, "PUT", "/api/v1/admin/users/"+uid+"/quota", map[string]any{"quota_bytes": 300_000}, &one); st != 200 || one.QuotaBytes != 300_000 {
		t.Errorf("set quota: %d %+v", st, one)
	}
	for _, bad := range []map[string]any{{"quota_bytes": -1}, {}, {"quota": 5}} {
		if st := admin.JSON(t, "PUT", "/api/v1/admin/users/"+uid+"/quota", bad, nil); st != 400 {
			t.Errorf("set quota %v: %d, want 400", bad, st)
		}
	}
	if st, _, _ := put(t, u.Client, u.Bucket, "over.bin", randBytes(t, 200_000)); st != 507 {
		t.Errorf("put over the quota the admin set: %d, want 507", st)
	}
	var bl struct{ Buckets []struct{ Name string } }
	if st := admin.JSON(t, "GET", "/api/v1/admin/users/"+uid+"/buckets", nil, &bl); st != 200 || len(bl.Buckets) != 1 || bl.Buckets[0].Name != u.Bucket {
		t.Errorf("buckets: %d %+v", st, bl)
	}
	var kl struct {
		Keys []struct {
			ID     string `json:"access_key_id"`
			Secret string `json:"secret_access_key"`
		} `json:"keys"`
	}
	if st := admin.JSON(t, "GET", "/api/v1/admin/users/"+uid+"/keys", nil, &kl); st != 200 || len(kl.Keys) != 1 || kl.Keys[0].ID != u.id || kl.Keys[0].Secret != "" {
		t.Errorf("keys: %d %+v", st, kl)
	}
	if r := u.s3(t, "GET", "/"+u.Bucket+"/big.bin", nil, ""); r.status != 200 {
		t.Fatalf("S3 GET before the key is revoked: %d", r.status)
	}
	if st := admin.JSON(t, "DELETE", "/api/v1/admin/users/"+adminID+"/keys/"+u.id, nil, nil); st != 404 {
		t.Errorf("revoking the key under another user: %d, want 404", st)
	}
	if st := admin.JSON(t, "DELETE", "/api/v1/admin/users/"+uid+"/keys/"+u.id, nil, nil); st != 204 {
		t.Errorf("revoke key: %d", st)
	}
	if r := u.s3(t, "GET", "/"+u.Bucket+"/big.bin", nil, ""); r.status != 403 || r.code != "InvalidAccessKeyId" {
		t.Errorf("S3 GET with the revoked key: %d %s, want 403 InvalidAccessKeyId", r.status, r.code)
	}

	// Server info.
	var info struct {
		Version   string `json:"version"`
		Uptime    *int64 `json:"uptime_seconds"`
		MetaStore string `json:"meta_store"`
		BlobStore string `json:"blob_store"`
		Users     int64  `json:"users"`
		Buckets   int64  `json:"buckets"`
		Objects   int64  `json:"objects"`
		Bytes     int64  `json:"bytes"`
	}
	wantMeta, wantBlob := "sqlite", "disk"
	if testenv.ScaleOut() {
		wantMeta, wantBlob = "postgres", "s3"
	}
	if st := admin.JSON(t, "GET", "/api/v1/admin/server", nil, &info); st != 200 || info.Version == "" || info.Uptime == nil ||
		info.MetaStore != wantMeta || info.BlobStore != wantBlob || info.Users != 3 || info.Buckets != 3 || info.Objects != 1 || info.Bytes != int64(len(big)) {
		t.Errorf("server info: %d %+v", st, info)
	}

	// An administrator cannot disable or delete themselves here.
	if st := admin.JSON(t, "POST", "/api/v1/admin/users/"+adminID+"/disable", nil, nil); st != 409 {
		t.Errorf("disabling oneself: %d, want 409", st)
	}
	if st := admin.JSON(t, "DELETE", "/api/v1/admin/users/"+adminID, nil, nil); st != 409 {
		t.Errorf("deleting oneself: %d, want 409", st)
	}

	// Delete: refused while the user owns data, then purged.
	before := blobFiles(t, srv)
	var p testenv.Problem
	if st := admin.JSON(t, "DELETE", "/api/v1/admin/users/"+uid, nil, &p); st != 409 || p.Code != "conflict" || !strings.Contains(p.Detail, "purge") || !strings.Contains(p.Detail, u.Bucket) {
		t.Errorf("delete a user owning data: %d %+v", st, p)
	}
	if st := admin.JSON(t, "DELETE", "/api/v1/admin/users/"+uid+"?purge=maybe", nil, nil); st != 400 {
		t.Errorf("purge=maybe: %d, want 400", st)
	}
	if st := u.JSON(t, "GET", "/api/v1/me", nil, nil); st != 200 {
		t.Errorf("the user after a refused delete: %d", st)
	}
	if st := admin.JSON(t, "DELETE", "/api/v1/admin/users/"+uid+"?purge=true", nil, nil); st != 204 {
		t.Fatalf("delete with purge: %d", st)
	}
	if st := u.JSON(t, "GET", "/api/v1/me", nil, nil); st != 401 {
		t.Errorf("the deleted user's token: %d, want 401", st)
	}
	if st := admin.JSON(t, "GET", "/api/v1/admin/users/"+uid, nil, nil); st != 404 {
		t.Errorf("get a deleted user: %d, want 404", st)
	}
	if st := testenv.NewClient(srv.URL).JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": u.Email, "password": "correct horse battery"}, nil); st != 401 {
		t.Errorf("login of a deleted user: %d, want 401", st)
	}
	// The bucket name is free again.
	if st := admin.JSON(t, "POST", "/api/v1/buckets", map[string]any{"name": u.Bucket}, nil); st != 201 {
		t.Errorf("re-creating the purged bucket's name: %d", st)
	}
	if testenv.ScaleOut() {
		return
	}
	// The blob was queued, not deleted by the request; the garbage
	// collector reclaims it.
	if got := blobFiles(t, srv); got != before || got == 0 {
		t.Errorf("blob files after the purge: %d, want still %d (queued for the janitor)", got, before)
	}
	if err := srv.Term(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if out, err := cli(t, srv, "gc"); err != nil || !strings.Contains(out, "reclaimed 1 replaced/deleted blobs") {
		t.Errorf("coffer gc: %v\n%s", err, out)
	}
	if got := blobFiles(t, srv); got != 0 {
		t.Errorf("blob files after gc: %d, want 0", got)
	}
}

// TestDeleteMe is the self-service deletion (the contract coffer bench
// --cleanup relies on): the password is required, data refuses it unless
// purge is asked for.
func TestDeleteMe(t *testing.T) {
	srv := testenv.Start(t)
	a := srv.NewUser(t)
	if st, _, _ := put(t, a, a.Bucket, "f.txt", []byte("data")); st != 201 {
		t.Fatal("put")
	}
	if st := a.JSON(t, "DELETE", "/api/v1/me", map[string]any{"password": "wrong password", "purge": true}, nil); st != 401 {
		t.Errorf("wrong password: %d, want 401", st)
	}
	var p testenv.Problem
	if st := a.JSON(t, "DELETE", "/api/v1/me", map[string]any{"password": "correct horse battery", "purge": false}, &p); st != 409 || p.Extra["reason"] != "user_owns_data" {
		t.Errorf("without purge: %d %+v, want 409 user_owns_data", st, p)
	}
	if st := a.JSON(t, "DELETE", "/api/v1/me", map[string]any{"password": "correct horse battery", "purge": true}, nil); st != 204 {
		t.Fatalf("with purge: %d", st)
	}
	if st := a.JSON(t, "GET", "/api/v1/me", nil, nil); st != 401 {
		t.Errorf("token after DELETE /me: %d, want 401", st)
	}
	// An empty account goes without purge.
	b := srv.NewUser(t)
	if st := b.JSON(t, "DELETE", "/api/v1/me", map[string]any{"password": "correct horse battery"}, nil); st != 204 {
		t.Errorf("deleting an empty account: %d", st)
	}
}

// TestUserCommands runs the account commands of the real binary against a
// running server: on the embedded shape a separate process cannot notify
// the server, whose cache bound (1 s) makes the change visible.
func TestUserCommands(t *testing.T) {
	srv := testenv.Start(t)
	c := newCredentials(t, srv)
	within := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(1500 * time.Millisecond)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 1.5s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	run := func(want string, args ...string) {
		t.Helper()
		out, err := cli(t, srv, args...)
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("coffer %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	me := func(cl *testenv.Client) int { return cl.JSON(t, "GET", "/api/v1/me", nil, nil) }

	run("is disabled", "user", "disable", "--email", c.u.Email)
	within("token refused after coffer user disable", func() bool { return me(c.u.Client) == 401 })
	c.check(t, srv, c.u.Token, false, "after coffer user disable")
	run("is enabled", "user", "enable", "--email", c.u.Email)
	within("login after coffer user enable", func() bool {
		return testenv.NewClient(srv.URL).JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": c.u.Email, "password": "correct horse battery"}, nil) == 200
	})
	c.u.Login(t, "correct horse battery")
	within("new session accepted after coffer user enable", func() bool { return me(c.u.Client) == 200 })
	c.check(t, srv, c.u.Token, true, "after coffer user enable")

	run("password of", "user", "password", "--email", c.u.Email, "--password", "set by the cli")
	within("session refused after coffer user password", func() bool { return me(c.u.Client) == 401 })
	c.u.Login(t, "set by the cli")

	out, err := cli(t, srv, "user", "delete", "--email", c.u.Email)
	if err == nil || !strings.Contains(out, "purge") {
		t.Errorf("coffer user delete of a user owning data: %v\n%s", err, out)
	}
	run("deleted", "user", "delete", "--email", c.u.Email, "--purge")
	within("token refused after coffer user delete", func() bool { return me(c.u.Client) == 401 })
	if out, err := cli(t, srv, "user", "disable", "--email", c.u.Email); err == nil {
		t.Errorf("disabling a deleted user succeeded:\n%s", out)
	}
}

// TestHandSignedClaimTypes: access tokens signed with the server's real
// key (DATA/server.key) are accepted only with well-typed registered
// claims: an exp written as a JSON string (which jwt's NumericDate would
// read as a number) is 401, the same token with a number exp is 200.
func TestHandSignedClaimTypes(t *testing.T) {
	if testenv.ScaleOut() {
		t.Skip("the embedded shape's data folder holds the key; token checks do not depend on the shape")
	}
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	var me struct {
		ID string `json:"id"`
	}
	if st := c.JSON(t, "GET", "/api/v1/me", nil, &me); st != 200 || me.ID == "" {
		t.Fatalf("/me: %d %q", st, me.ID)
	}
	hexKey, err := os.ReadFile(filepath.Join(srv.Data, "server.key"))
	if err != nil {
		t.Fatal(err)
	}
	master, err := hex.DecodeString(strings.TrimSpace(string(hexKey)))
	if err != nil {
		t.Fatal(err)
	}
	key := auth.DeriveKey(master, "access-token")
	now := time.Now()
	for _, tc := range []struct {
		name string
		exp  any
		want int
	}{
		{"exp number", now.Add(time.Hour).Unix(), 200},
		{"exp string", fmt.Sprint(now.Add(time.Hour).Unix()), 401},
	} {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
			"iss": "coffer", "sub": me.ID, "typ": "access", "iat": now.Unix(), "exp": tc.exp,
		}).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		forged := testenv.NewClient(srv.URL)
		forged.Token = tok
		if got := forged.JSON(t, "GET", "/api/v1/me", nil, nil); got != tc.want {
			t.Errorf("%s: GET /me %d, want %d", tc.name, got, tc.want)
		}
	}
}

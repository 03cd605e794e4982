package e2e

import (
	"bytes"
	"io"
	"mime/multipart"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/httpapi"
	"github.com/coffer-storage/coffer/test/testenv"
)

// TestCrossUser checks that user B can neither read nor change anything of
// user A's through any route of the file API. The cases are keyed by the
// route table itself: a route added without a case here fails the test.
func TestCrossUser(t *testing.T) {
	srv := testenv.Start(t)
	a, b := srv.NewUser(t), srv.NewUser(t)
	secret := randBytes(t, 10_000)
	// A's bucket is versioned (through S3): secret.txt has an older
	// version, which B's requests must neither read nor remove, and B's
	// deletes must not bury under a delete marker.
	var aKey struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if st := a.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "a"}, &aKey); st != 201 {
		t.Fatal("setup key")
	}
	aS3 := testenv.S3Key{ID: aKey.ID, Secret: aKey.Secret}
	var aToken struct{ ID, Token string }
	if st := a.JSON(t, "POST", "/api/v1/tokens", map[string]string{"name": "a"}, &aToken); st != 201 {
		t.Fatal("setup app token")
	}
	testenv.MustS3(t, aS3, srv.S3URL, "PUT", "/"+a.Bucket+"?versioning", testenv.VersioningBody("Enabled"), 200)
	if st, _, _ := put(t, a, a.Bucket, "secret.txt", []byte("an older secret")); st != 201 {
		t.Fatal("setup put")
	}
	if st, _, _ := put(t, a, a.Bucket, "secret.txt", secret); st != 201 {
		t.Fatal("setup put")
	}
	secretVersions := testenv.ListVersions(t, aS3, []string{srv.S3URL}, "/"+a.Bucket, 1000)
	if len(secretVersions) != 2 {
		t.Fatalf("setup: versions %+v", secretVersions)
	}
	emptyA := "empty-" + strings.ToLower(a.Bucket)
	if st := a.JSON(t, "POST", "/api/v1/buckets", map[string]any{"name": emptyA}, nil); st != 201 {
		t.Fatal("setup bucket")
	}
	if st, _, _ := put(t, b, b.Bucket, "mine.txt", []byte("b's file")); st != 201 {
		t.Fatal("setup put b")
	}
	// A's direct-upload session.
	var aUpload struct {
		UploadID string `json:"upload_id"`
	}
	if st := a.JSON(t, "POST", "/api/v1/uploads", map[string]any{"bucket": a.Bucket, "key": "direct.bin", "size": 10}, &aUpload); st != 201 {
		t.Fatal("setup upload")
	}
	// A's tus upload, 5 of its 10 bytes received.
	aTus := tusCreate(t, a, "Upload-Length", "10", "Upload-Metadata", tusMeta("bucket", a.Bucket, "key", "tus.bin"))
	if resp, _ := tusPatch(t, a, aTus, 0, []byte("01234")); resp.StatusCode != 204 {
		t.Fatal("setup tus upload")
	}
	// A's share links: a folder share (a drop box) of "shared/", next to
	// "secret.txt" and "shared-not/" that it must never reach, and a
	// file share of "shared/pub.txt".
	for _, k := range []string{"shared/pub.txt", "shared-not/x.txt", "shared/sub/deep.txt"} {
		if st, _, _ := put(t, a, a.Bucket, k, []byte("share content of "+k)); st != 201 {
			t.Fatal("setup put " + k)
		}
	}
	var aFolder, aFile struct {
		ID    string `json:"id"`
		Token string `json:"token"`
		URL   string `json:"url"`
	}
	if st := a.JSON(t, "POST", "/api/v1/shares", map[string]any{"bucket": a.Bucket, "prefix": "shared/", "allow_upload": true}, &aFolder); st != 201 {
		t.Fatal("setup folder share")
	}
	if st := a.JSON(t, "POST", "/api/v1/shares", map[string]any{"bucket": a.Bucket, "key": "shared/pub.txt"}, &aFile); st != 201 {
		t.Fatal("setup file share")
	}
	// escapes are paths under a share that name something outside it.
	escapes := []string{
		"/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/..%2Fsecret.txt", "/%2e%2e%2Fsecret.txt",
		"/sub/../../secret.txt", "/sub/%2e%2e/%2e%2e/secret.txt", "/../shared-not/x.txt", "/%2e%2e%2Fshared-not%2Fx.txt",
		"/%252e%252e/secret.txt", "/%252e%252e%252Fsecret.txt", "/%2Fsecret.txt", "//../secret.txt", "/.%2e/secret.txt",
	}
	anonDo := func(method, path string, body []byte, hdr ...string) (int, []byte) {
		resp := testenv.NewClient(srv.URL).Do(t, method, path, bytes.NewReader(body), hdr...)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	noLeak := func(t *testing.T, what string, st int, body []byte) {
		t.Helper()
		if st < 400 || bytes.Contains(body, secret) || bytes.Contains(body, []byte(a.Bucket)) || bytes.Contains(body, []byte("shared-not")) {
			t.Errorf("%s: %d %.200q — reached outside the share or named A's bucket", what, st, body)
		}
	}
	denied := func(t *testing.T, what string, st int) {
		t.Helper()
		if st != 403 && st != 404 {
			t.Errorf("%s: status %d, want 403 or 404", what, st)
		}
	}
	do := func(method, path string, body []byte, hdr ...string) int {
		resp := b.Do(t, method, path, bytes.NewReader(body), hdr...)
		resp.Body.Close()
		return resp.StatusCode
	}
	jsonDo := func(method, path string, v any) int { return b.JSON(t, method, path, v, nil) }
	aBucket := "/api/v1/buckets/" + a.Bucket

	cases := map[string]func(t *testing.T){
		"POST /api/v1/auth/signup": func(t *testing.T) {
			st := testenv.NewClient(srv.URL).JSON(t, "POST", "/api/v1/auth/signup", map[string]string{"email": a.Email, "password": "taking over a"}, nil)
			if st != 409 {
				t.Errorf("signup with A's email: %d, want 409", st)
			}
		},
		"POST /api/v1/auth/login": func(t *testing.T) {
			st := testenv.NewClient(srv.URL).JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": a.Email, "password": "correct horse battery?"}, nil)
			if st != 401 {
				t.Errorf("login as A with a wrong password: %d", st)
			}
		},
		"POST /api/v1/auth/refresh": func(t *testing.T) {
			if st := jsonDo("POST", "/api/v1/auth/refresh", map[string]string{"refresh_token": "forged-" + b.Refresh}); st != 401 {
				t.Errorf("forged refresh token: %d", st)
			}
		},
		"POST /api/v1/auth/resume": func(t *testing.T) {
			// A forged cookie resumes nothing: signed_in false, no token.
			st, body := anonDo("POST", "/api/v1/auth/resume", []byte("{}"), "Content-Type", "application/json",
				"X-Coffer-Session", "cookie", "Cookie", "coffer_refresh=forged-"+b.Refresh)
			if st != 200 || !bytes.Contains(body, []byte(`"signed_in":false`)) || bytes.Contains(body, []byte("access_token")) {
				t.Errorf("resume with a forged cookie: %d %s", st, body)
			}
		},
		"POST /api/v1/auth/logout": func(t *testing.T) {
			if st := jsonDo("POST", "/api/v1/auth/logout", map[string]string{"refresh_token": "forged"}); st != 401 {
				t.Errorf("logout with forged token: %d", st)
			}
		},
		"GET /api/v1/openapi.json": func(t *testing.T) {
			// The same public document for everyone: it names nobody's data.
			resp := b.Do(t, "GET", "/api/v1/openapi.json", nil)
			doc, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || bytes.Contains(doc, []byte(a.Email)) || bytes.Contains(doc, []byte(a.Bucket)) {
				t.Errorf("openapi.json as B: %d, or it names A", resp.StatusCode)
			}
		},
		"GET /api/v1/me": func(t *testing.T) {
			var me struct{ Email string }
			b.JSON(t, "GET", "/api/v1/me", nil, &me)
			if me.Email != b.Email {
				t.Errorf("B's /me shows %q", me.Email)
			}
		},
		"DELETE /api/v1/me": func(t *testing.T) {
			// B can only ever delete B, and only with B's password.
			if st := jsonDo("DELETE", "/api/v1/me", map[string]any{"password": "correct horse battery?", "purge": true}); st != 401 {
				t.Errorf("DELETE /me with a wrong password: %d, want 401", st)
			}
		},
		"POST /api/v1/me/password": func(t *testing.T) {
			if st := jsonDo("POST", "/api/v1/me/password", map[string]string{"old_password": "correct horse battery?", "new_password": "taking over a"}); st != 401 {
				t.Errorf("password change with a wrong old password: %d, want 401", st)
			}
		},
		"GET /api/v1/buckets": func(t *testing.T) {
			var l struct{ Buckets []struct{ Name string } }
			b.JSON(t, "GET", "/api/v1/buckets", nil, &l)
			for _, bk := range l.Buckets {
				if bk.Name == a.Bucket || bk.Name == emptyA {
					t.Errorf("B's bucket list shows A's bucket %s", bk.Name)
				}
			}
		},
		"POST /api/v1/buckets": func(t *testing.T) {
			if st := jsonDo("POST", "/api/v1/buckets", map[string]any{"name": a.Bucket}); st != 409 {
				t.Errorf("creating A's bucket name: %d, want 409", st)
			}
		},
		"GET /api/v1/buckets/{bucket}": func(t *testing.T) {
			denied(t, "get bucket", jsonDo("GET", aBucket, nil))
			denied(t, "head bucket", do("HEAD", aBucket, nil))
		},
		"PATCH /api/v1/buckets/{bucket}": func(t *testing.T) {
			denied(t, "make A's bucket public", jsonDo("PATCH", aBucket, map[string]any{"visibility": "public-read"}))
			denied(t, "suspend A's versioning", jsonDo("PATCH", aBucket, map[string]any{"versioning": "Suspended"}))
		},
		"DELETE /api/v1/buckets/{bucket}": func(t *testing.T) {
			denied(t, "delete A's empty bucket", jsonDo("DELETE", "/api/v1/buckets/"+emptyA, nil))
		},
		"GET /api/v1/buckets/{bucket}/files": func(t *testing.T) {
			denied(t, "list", jsonDo("GET", aBucket+"/files", nil))
			denied(t, "list with prefix", jsonDo("GET", aBucket+"/files?prefix=s&delimiter=/", nil))
		},
		"POST /api/v1/buckets/{bucket}/files": func(t *testing.T) {
			var form bytes.Buffer
			mw := multipart.NewWriter(&form)
			w, _ := mw.CreateFormFile("file", "secret.txt")
			w.Write([]byte("overwritten by b"))
			mw.Close()
			denied(t, "form upload", do("POST", aBucket+"/files", form.Bytes(), "Content-Type", mw.FormDataContentType()))
		},
		"PUT /api/v1/buckets/{bucket}/files/{key...}": func(t *testing.T) {
			denied(t, "overwrite", do("PUT", testenv.FileURL(a.Bucket, "secret.txt"), []byte("overwritten by b")))
			denied(t, "new key", do("PUT", testenv.FileURL(a.Bucket, "planted.txt"), []byte("planted")))
		},
		"GET /api/v1/buckets/{bucket}/files/{key...}": func(t *testing.T) {
			denied(t, "read", do("GET", testenv.FileURL(a.Bucket, "secret.txt"), nil))
			denied(t, "head", do("HEAD", testenv.FileURL(a.Bucket, "secret.txt"), nil))
			denied(t, "range", do("GET", testenv.FileURL(a.Bucket, "secret.txt"), nil, "Range", "bytes=0-0"))
			denied(t, "read a version", do("GET", testenv.FileURL(a.Bucket, "secret.txt")+"?version_id="+secretVersions[1].VersionID, nil))
			denied(t, "read A's version in B's bucket", do("GET", testenv.FileURL(b.Bucket, "secret.txt")+"?version_id="+secretVersions[1].VersionID, nil))
			// No existence oracle: a missing key answers like an existing one.
			if x, y := do("GET", testenv.FileURL(a.Bucket, "secret.txt"), nil), do("GET", testenv.FileURL(a.Bucket, "missing.txt"), nil); x != y {
				t.Errorf("existing key %d vs missing key %d: existence leaks", x, y)
			}
		},
		"DELETE /api/v1/buckets/{bucket}/files/{key...}": func(t *testing.T) {
			denied(t, "delete", do("DELETE", testenv.FileURL(a.Bucket, "secret.txt"), nil))
			denied(t, "delete a version", do("DELETE", testenv.FileURL(a.Bucket, "secret.txt")+"?version_id="+secretVersions[1].VersionID, nil))
		},
		"GET /api/v1/buckets/{bucket}/versions/{key...}": func(t *testing.T) {
			denied(t, "list A's versions", jsonDo("GET", aBucket+"/versions/secret.txt", nil))
		},
		"POST /api/v1/buckets/{bucket}/restore": func(t *testing.T) {
			denied(t, "restore in A's bucket", jsonDo("POST", aBucket+"/restore", map[string]any{"key": "secret.txt", "version_id": secretVersions[1].VersionID}))
			denied(t, "restore A's version into B's bucket", jsonDo("POST", "/api/v1/buckets/"+b.Bucket+"/restore", map[string]any{"key": "secret.txt", "version_id": secretVersions[1].VersionID}))
		},
		"GET /api/v1/buckets/{bucket}/trash": func(t *testing.T) {
			denied(t, "A's deleted files", jsonDo("GET", aBucket+"/trash", nil))
		},
		"POST /api/v1/buckets/{bucket}/undelete": func(t *testing.T) {
			denied(t, "undelete in A's bucket", jsonDo("POST", aBucket+"/undelete", map[string]any{"key": "secret.txt"}))
		},
		"POST /api/v1/buckets/{bucket}/move": func(t *testing.T) {
			denied(t, "move out of A's bucket", jsonDo("POST", aBucket+"/move", map[string]any{"from": "secret.txt", "to": "stolen.txt", "to_bucket": b.Bucket}))
			denied(t, "move within A's bucket", jsonDo("POST", aBucket+"/move", map[string]any{"from": "secret.txt", "to": "renamed.txt"}))
			denied(t, "move into A's bucket", jsonDo("POST", "/api/v1/buckets/"+b.Bucket+"/move", map[string]any{"from": "mine.txt", "to": "secret.txt", "to_bucket": a.Bucket, "overwrite": true}))
		},
		"POST /api/v1/buckets/{bucket}/copy": func(t *testing.T) {
			denied(t, "copy from A's bucket", jsonDo("POST", aBucket+"/copy", map[string]any{"from": "secret.txt", "to": "stolen.txt", "to_bucket": b.Bucket}))
			denied(t, "copy into A's bucket", jsonDo("POST", "/api/v1/buckets/"+b.Bucket+"/copy", map[string]any{"from": "mine.txt", "to": "secret.txt", "to_bucket": a.Bucket, "overwrite": true}))
		},
		"GET /api/v1/keys": func(t *testing.T) {
			var l struct {
				Keys []struct {
					ID string `json:"access_key_id"`
				} `json:"keys"`
			}
			b.JSON(t, "GET", "/api/v1/keys", nil, &l)
			for _, k := range l.Keys {
				if k.ID == aKey.ID {
					t.Errorf("B's key list shows A's key")
				}
			}
		},
		"POST /api/v1/keys": func(t *testing.T) {
			var k struct {
				Secret string `json:"secret_access_key"`
			}
			if st := b.JSON(t, "POST", "/api/v1/keys", nil, &k); st != 201 || k.Secret == "" {
				t.Errorf("B creating its own key: %d", st)
			}
		},
		"DELETE /api/v1/keys/{id}": func(t *testing.T) {
			denied(t, "delete A's key", jsonDo("DELETE", "/api/v1/keys/"+aKey.ID, nil))
		},
		"GET /api/v1/tokens": func(t *testing.T) {
			var l struct {
				Tokens []struct{ ID string } `json:"tokens"`
			}
			b.JSON(t, "GET", "/api/v1/tokens", nil, &l)
			for _, tk := range l.Tokens {
				if tk.ID == aToken.ID {
					t.Errorf("B's token list shows A's app token")
				}
			}
		},
		"POST /api/v1/tokens": func(t *testing.T) {
			// B's own token, even scoped to A's bucket, reaches nothing of A's.
			var tk struct{ Token string }
			if st := b.JSON(t, "POST", "/api/v1/tokens", map[string]any{"scope": map[string]any{"bucket": a.Bucket, "access": "read-write"}}, &tk); st != 201 {
				t.Fatalf("B creating its own token: %d", st)
			}
			bt := testenv.NewClient(srv.URL)
			bt.Token = tk.Token
			resp := bt.Do(t, "GET", testenv.FileURL(a.Bucket, "secret.txt"), nil)
			resp.Body.Close()
			denied(t, "B's token scoped to A's bucket", resp.StatusCode)
			// A's token is refused on the account routes, including making
			// another token.
			at := testenv.NewClient(srv.URL)
			at.Token = aToken.Token
			if st := at.JSON(t, "POST", "/api/v1/tokens", nil, nil); st != 403 {
				t.Errorf("an app token making a token: %d, want 403", st)
			}
		},
		"DELETE /api/v1/tokens/{id}": func(t *testing.T) {
			denied(t, "delete A's app token", jsonDo("DELETE", "/api/v1/tokens/"+aToken.ID, nil))
		},
		"POST /api/v1/uploads": func(t *testing.T) {
			denied(t, "direct upload into A's bucket", jsonDo("POST", "/api/v1/uploads", map[string]any{"bucket": a.Bucket, "key": "planted.bin", "size": 10}))
		},
		"GET /api/v1/uploads/{id}": func(t *testing.T) {
			denied(t, "A's upload status", jsonDo("GET", "/api/v1/uploads/"+aUpload.UploadID, nil))
		},
		"DELETE /api/v1/uploads/{id}": func(t *testing.T) {
			denied(t, "abort A's upload", jsonDo("DELETE", "/api/v1/uploads/"+aUpload.UploadID, nil))
		},
		// Invites are for administrators: B (a user) is refused.
		"GET /api/v1/admin/invites": func(t *testing.T) {
			if st := jsonDo("GET", "/api/v1/admin/invites", nil); st != 403 {
				t.Errorf("B listing invites: %d, want 403", st)
			}
		},
		"POST /api/v1/admin/invites": func(t *testing.T) {
			if st := jsonDo("POST", "/api/v1/admin/invites", map[string]any{"uses": 100}); st != 403 {
				t.Errorf("B creating an invite: %d, want 403", st)
			}
		},
		"DELETE /api/v1/admin/invites/{id}": func(t *testing.T) {
			if st := jsonDo("DELETE", "/api/v1/admin/invites/anything", nil); st != 403 {
				t.Errorf("B revoking an invite: %d, want 403", st)
			}
		},
		"OPTIONS /api/v1/tus/": func(t *testing.T) {
			if resp, _ := tusDo(t, b, "OPTIONS", "/api/v1/tus/", nil); resp.StatusCode/100 != 2 {
				t.Errorf("OPTIONS: %d", resp.StatusCode)
			}
		},
		"OPTIONS /api/v1/tus/{id}": func(t *testing.T) {
			if resp, _ := tusDo(t, b, "OPTIONS", aTus, nil); resp.StatusCode/100 != 2 || resp.Header.Get("Upload-Offset") != "" {
				t.Errorf("OPTIONS of A's upload: %d, Upload-Offset %q", resp.StatusCode, resp.Header.Get("Upload-Offset"))
			}
		},
		"POST /api/v1/tus/": func(t *testing.T) {
			resp, _ := tusDo(t, b, "POST", "/api/v1/tus/", []byte("planted"), "Upload-Length", "7", "Content-Type", "application/offset+octet-stream",
				"Upload-Metadata", tusMeta("bucket", a.Bucket, "key", "secret.txt"))
			denied(t, "tus upload into A's bucket", resp.StatusCode)
			resp, _ = tusDo(t, b, "POST", "/api/v1/tus/", nil, "Upload-Concat", "final;"+aTus, "Upload-Metadata", tusMeta("bucket", b.Bucket, "key", "stolen.bin"))
			if resp.StatusCode < 400 {
				t.Errorf("concatenating A's upload into B's bucket: %d", resp.StatusCode)
			}
		},
		"GET /api/v1/tus/{id}": func(t *testing.T) {
			resp, _ := tusDo(t, b, "HEAD", aTus, nil)
			denied(t, "HEAD of A's tus upload", resp.StatusCode)
			resp, _ = tusDo(t, b, "GET", aTus, nil)
			if resp.StatusCode != 405 {
				t.Errorf("GET of a tus upload: %d, want 405", resp.StatusCode)
			}
		},
		"PATCH /api/v1/tus/{id}": func(t *testing.T) {
			resp, _ := tusPatch(t, b, aTus, 5, []byte("56789"))
			denied(t, "PATCH of A's tus upload", resp.StatusCode)
		},
		"DELETE /api/v1/tus/{id}": func(t *testing.T) {
			resp, _ := tusDo(t, b, "DELETE", aTus, nil)
			denied(t, "DELETE of A's tus upload", resp.StatusCode)
		},
		"POST /api/v1/buckets/{bucket}/zip": func(t *testing.T) {
			denied(t, "zip of A's files", jsonDo("POST", aBucket+"/zip", map[string]any{"keys": []string{"secret.txt"}, "prefixes": []string{""}}))
		},
		"POST /api/v1/buckets/{bucket}/delete": func(t *testing.T) {
			denied(t, "batch delete of A's files", jsonDo("POST", aBucket+"/delete", map[string]any{"keys": []string{"secret.txt"}}))
			denied(t, "prefix delete of A's files", jsonDo("POST", aBucket+"/delete", map[string]any{"prefix": ""}))
		},
		"GET /api/v1/shares": func(t *testing.T) {
			var l struct {
				Shares []struct{ ID string } `json:"shares"`
			}
			for _, q := range []string{"", "?grants=1"} {
				b.JSON(t, "GET", "/api/v1/shares"+q, nil, &l)
				for _, sh := range l.Shares {
					if sh.ID == aFolder.ID || sh.ID == aFile.ID {
						t.Errorf("B's share list%s shows A's share %s", q, sh.ID)
					}
				}
			}
		},
		"POST /api/v1/shares": func(t *testing.T) {
			denied(t, "share A's file", jsonDo("POST", "/api/v1/shares", map[string]any{"bucket": a.Bucket, "key": "secret.txt"}))
			denied(t, "share A's bucket", jsonDo("POST", "/api/v1/shares", map[string]any{"bucket": a.Bucket, "prefix": ""}))
		},
		"GET /api/v1/shares/{id}": func(t *testing.T) {
			denied(t, "inspect A's share", jsonDo("GET", "/api/v1/shares/"+aFolder.ID, nil))
		},
		"PATCH /api/v1/shares/{id}": func(t *testing.T) {
			denied(t, "extend A's share", jsonDo("PATCH", "/api/v1/shares/"+aFolder.ID, map[string]any{"expires_in": 60}))
		},
		"DELETE /api/v1/shares/{id}": func(t *testing.T) {
			denied(t, "revoke A's share", jsonDo("DELETE", "/api/v1/shares/"+aFolder.ID, nil))
		},
		"GET /s/{token}": func(t *testing.T) {
			st, body := anonDo("GET", aFolder.URL, nil)
			if st != 200 || bytes.Contains(body, []byte(a.Bucket)) || bytes.Contains(body, []byte("shared-not")) || bytes.Contains(body, []byte("secret")) {
				t.Errorf("folder listing: %d %s", st, body)
			}
			for _, q := range []string{"?cursor=Li4vc2VjcmV0LnR4dA", "?zip=1&prefix=..", "?prefix=../"} {
				st, body := anonDo("GET", aFolder.URL+q, nil)
				if bytes.Contains(body, secret) || bytes.Contains(body, []byte("shared-not")) {
					t.Errorf("folder %s: %d reached outside the share", q, st)
				}
			}
			noLeak(t, "a token that is not one", func() int { s, _ := anonDo("GET", "/s/"+aFolder.ID, nil); return s }(), nil)
			// What a link is (?info=1) names neither the bucket nor a key.
			for _, u := range []string{aFolder.URL, aFile.URL} {
				st, body := anonDo("GET", u+"?info=1", nil)
				if st != 200 || bytes.Contains(body, []byte(a.Bucket)) || bytes.Contains(body, []byte("shared/")) || bytes.Contains(body, secret) {
					t.Errorf("%s?info=1: %d %s", u, st, body)
				}
			}
		},
		"GET /s/{token}/{path...}": func(t *testing.T) {
			for _, p := range escapes {
				st, body := anonDo("GET", aFolder.URL+p, nil)
				noLeak(t, "GET folder share"+p, st, body)
				st, body = anonDo("GET", aFile.URL+p, nil)
				noLeak(t, "GET file share"+p, st, body)
			}
		},
		"PUT /s/{token}/{path...}": func(t *testing.T) {
			// A drop may only ever land under shared/ (a double-encoded
			// "%2e%2e" is a file name like any other, inside the share).
			for _, p := range escapes {
				st, body := anonDo("PUT", aFolder.URL+p, []byte("planted by b"))
				if st >= 300 {
					noLeak(t, "PUT drop box"+p, st, body)
				}
			}
			for _, k := range keysOf(list(t, a, a.Bucket, "")) {
				switch {
				case k == "secret.txt" || k == "shared-not/x.txt" || k == "shared/pub.txt" || k == "shared/sub/deep.txt":
				case strings.HasPrefix(k, "shared/"):
					a.Do(t, "DELETE", testenv.FileURL(a.Bucket, k), nil).Body.Close()
				default:
					t.Errorf("a drop landed outside the share, at %q", k)
				}
			}
			st, _ := anonDo("PUT", aFolder.URL+"/pub.txt", []byte("overwritten by b"))
			if st != 412 {
				t.Errorf("a drop over A's file: %d, want 412", st)
			}
			st, _ = anonDo("PUT", aFile.URL+"/x.txt", []byte("planted by b"))
			if st < 400 {
				t.Errorf("an upload through a file share: %d", st)
			}
		},
		"POST /s/{token}/{path...}": func(t *testing.T) {
			st, _ := anonDo("POST", aFolder.URL+"/unlock", []byte(`{"password":"x"}`), "Content-Type", "application/json")
			if st != 400 {
				t.Errorf("unlocking a link without a password: %d, want 400", st)
			}
			st, body := anonDo("POST", aFolder.URL+"/../unlock", []byte(`{"password":"x"}`), "Content-Type", "application/json")
			noLeak(t, "POST escape", st, body)
		},
		"POST /api/v1/uploads/{id}/complete": func(t *testing.T) {
			denied(t, "complete A's upload", jsonDo("POST", "/api/v1/uploads/"+aUpload.UploadID+"/complete", map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": "00000000000000000000000000000000"}}}))
		},
	}

	// Every admin route: B (not an administrator) gets 403, an anonymous
	// client 401, whatever the target (A's account and key).
	var aMe struct{ ID string }
	if st := a.JSON(t, "GET", "/api/v1/me", nil, &aMe); st != 200 {
		t.Fatal("A's /me")
	}
	anon := testenv.NewClient(srv.URL)
	adminCase := func(rt httpapi.Route) func(t *testing.T) {
		return func(t *testing.T) {
			path := strings.NewReplacer("{id}", aMe.ID, "{key}", aKey.ID).Replace(rt.Pattern)
			if rt.Method == "DELETE" {
				path += "?purge=true"
			}
			body := map[string]any{"email": "planted@example.com", "password": "planted password", "quota_bytes": 1, "admin": true}
			if st := b.JSON(t, rt.Method, path, body, nil); st != 403 {
				t.Errorf("%s %s as a non-admin: %d, want 403", rt.Method, path, st)
			}
			if st := anon.JSON(t, rt.Method, path, body, nil); st != 401 {
				t.Errorf("%s %s anonymously: %d, want 401", rt.Method, path, st)
			}
		}
	}

	routes := httpapi.New(httpapi.Services{}, httpapi.ConfigFrom(config.Defaults()), nil).Routes()
	for _, rt := range routes {
		name := rt.Method + " " + rt.Pattern
		if rt.Access == httpapi.Admin {
			if _, ok := cases[name]; !ok {
				cases[name] = adminCase(rt)
			}
		} else if strings.HasPrefix(rt.Pattern, "/api/v1/admin/") {
			t.Errorf("route %s is under /api/v1/admin/ but not Admin", name)
		}
		fn, ok := cases[name]
		if !ok {
			t.Errorf("route %s has no cross-user case: add one", name)
			continue
		}
		delete(cases, name)
		t.Run(name, fn)
	}
	for name := range cases {
		t.Errorf("case %s matches no route", name)
	}

	// A's data is untouched, and nothing leaked into B's bucket.
	resp, body := get(t, a, a.Bucket, "secret.txt")
	if resp.StatusCode != 200 || !bytes.Equal(body, secret) {
		t.Errorf("A's file changed: %d", resp.StatusCode)
	}
	// secret.txt has the same two versions, no delete marker on top.
	var now []testenv.ListedVersion
	for _, v := range testenv.ListVersions(t, aS3, []string{srv.S3URL}, "/"+a.Bucket, 1000) {
		if v.Key == "secret.txt" {
			now = append(now, v)
		}
	}
	if !slices.Equal(now, secretVersions) {
		t.Errorf("A's versions of secret.txt changed: %+v, were %+v", now, secretVersions)
	}
	if r := testenv.MustS3(t, aS3, srv.S3URL, "GET", "/"+a.Bucket+"/secret.txt?versionId="+secretVersions[1].VersionID, nil, 200); string(r.Body) != "an older secret" {
		t.Errorf("A's older version reads %q", r.Body)
	}
	if got := strings.Join(keysOf(list(t, a, a.Bucket, "")), ","); got != "secret.txt,shared-not/x.txt,shared/pub.txt,shared/sub/deep.txt" {
		t.Errorf("A's bucket holds %q", got)
	}
	var bk struct{ Visibility, Versioning string }
	a.JSON(t, "GET", aBucket, nil, &bk)
	if bk.Visibility != "private" || bk.Versioning != "Enabled" {
		t.Errorf("A's bucket visibility = %q, versioning %q", bk.Visibility, bk.Versioning)
	}
	if st := a.JSON(t, "GET", "/api/v1/buckets/"+emptyA, nil, nil); st != 200 {
		t.Errorf("A's empty bucket: %d", st)
	}
	if got := strings.Join(keysOf(list(t, b, b.Bucket, "")), ","); got != "mine.txt" {
		t.Errorf("B's bucket holds %q", got)
	}
	if st := a.JSON(t, "GET", "/api/v1/uploads/"+aUpload.UploadID, nil, nil); st != 200 {
		t.Errorf("A's upload gone: %d", st)
	}
	if resp, _ := tusDo(t, a, "HEAD", aTus, nil); resp.StatusCode != 200 || resp.Header.Get("Upload-Offset") != "5" {
		t.Errorf("A's tus upload: %d, offset %q", resp.StatusCode, resp.Header.Get("Upload-Offset"))
	}
	var ak struct {
		Keys []struct {
			ID string `json:"access_key_id"`
		} `json:"keys"`
	}
	a.JSON(t, "GET", "/api/v1/keys", nil, &ak)
	if len(ak.Keys) != 1 || ak.Keys[0].ID != aKey.ID {
		t.Errorf("A's keys: %+v", ak.Keys)
	}
	at := testenv.NewClient(srv.URL)
	at.Token = aToken.Token
	if resp, body := get(t, at, a.Bucket, "secret.txt"); resp.StatusCode != 200 || !bytes.Equal(body, secret) {
		t.Errorf("A's app token after the matrix: %d", resp.StatusCode)
	}
	a.Login(t, "correct horse battery")
	// A is still enabled, not an administrator, with its quota; nobody
	// was planted.
	var me struct {
		QuotaBytes int64 `json:"quota_bytes"`
	}
	if st := a.JSON(t, "GET", "/api/v1/me", nil, &me); st != 200 || me.QuotaBytes != 0 {
		t.Errorf("A's /me: %d %+v", st, me)
	}
	if st := testenv.NewClient(srv.URL).JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": "planted@example.com", "password": "planted password"}, nil); st != 401 {
		t.Errorf("the planted account logs in: %d", st)
	}
	b.Login(t, "correct horse battery")
}

// TestCrossUserScopedKeys: the cross-user matrix for scoped credentials.
// A user's S3 key and app token with the same scope (bucket B, prefix
// in/, read | write | read-write) reach outside their prefix, their
// bucket and their verb through every kind of request, on both APIs:
// each request is allowed exactly when the scope allows it (docs/keys.md),
// the two APIs agree on every one, and nothing outside the scope is read
// or changed (0 leaks). Then an expired scoped key and app token are
// refused everything (S3 ExpiredToken, file API 401).
func TestCrossUserScopedKeys(t *testing.T) {
	srv := testenv.Start(t)
	owner := srv.NewUser(t)
	bkt, other, empty := owner.Bucket, "other-"+strings.ToLower(owner.Bucket), "empty-"+strings.ToLower(owner.Bucket)
	for _, name := range []string{other, empty} {
		if st := owner.JSON(t, "POST", "/api/v1/buckets", map[string]any{"name": name}, nil); st != 201 {
			t.Fatalf("setup bucket %s: %d", name, st)
		}
	}
	secret := randBytes(t, 1000)
	seed := map[string][]byte{bkt + "/in/a.txt": []byte("inside"), bkt + "/out.txt": secret, bkt + "/inx.txt": secret,
		other + "/in/a.txt": secret}
	for _, access := range []string{"read", "write", "read-write"} {
		for _, api := range []string{"s3", "file"} {
			seed[bkt+"/in/del-"+access+"-"+api] = []byte("to delete")
		}
	}
	for bk, data := range seed {
		b, k, _ := strings.Cut(bk, "/")
		if st, _, _ := put(t, owner, b, k, data); st != 201 {
			t.Fatalf("setup put %s: %d", bk, st)
		}
	}

	type creds struct {
		key   testenv.S3Key
		token *testenv.Client
	}
	newCreds := func(t *testing.T, access string, expiresIn int) creds {
		t.Helper()
		body := map[string]any{"scope": map[string]any{"bucket": bkt, "prefix": "in/", "access": access}, "expires_in": expiresIn}
		var k struct {
			ID     string `json:"access_key_id"`
			Secret string `json:"secret_access_key"`
		}
		if st := owner.JSON(t, "POST", "/api/v1/keys", body, &k); st != 201 {
			t.Fatalf("create %s key: %d", access, st)
		}
		var tok struct{ Token string }
		if st := owner.JSON(t, "POST", "/api/v1/tokens", body, &tok); st != 201 {
			t.Fatalf("create %s token: %d", access, st)
		}
		c := testenv.NewClient(srv.URL)
		c.HTTP, c.Token = srv.HTTPClient(), tok.Token
		return creds{testenv.S3Key{ID: k.ID, Secret: k.Secret}, c}
	}
	s3 := func(c creds, method, path string, body []byte) (int, []byte) {
		r, err := testenv.S3Do(c.key, srv.S3URL, method, path, body)
		if err != nil {
			t.Fatalf("S3 %s %s: %v", method, path, err)
		}
		return r.Status, r.Body
	}
	file := func(c creds, method, path string, body []byte) (int, []byte) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		resp := c.token.Do(t, method, path, rd)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	fileURL := testenv.FileURL
	// Each request in both APIs, and what it needs: "read", "write",
	// "delete" (read-write only) or "" (no scope of B/in/ allows it).
	type request struct {
		name     string
		needs    string
		s3, file func(c creds, access, api string) (int, []byte)
	}
	s3Req := func(method, path string, body []byte) func(creds, string, string) (int, []byte) {
		return func(c creds, access, api string) (int, []byte) {
			return s3(c, method, strings.NewReplacer("{access}", access, "{api}", api).Replace(path), body)
		}
	}
	fileReq := func(method, path string, body []byte) func(creds, string, string) (int, []byte) {
		return func(c creds, access, api string) (int, []byte) {
			// (FileURL escaped the braces.)
			return file(c, method, strings.NewReplacer("{access}", access, "{api}", api, "%7Baccess%7D", access, "%7Bapi%7D", api).Replace(path), body)
		}
	}
	createBucket := func(c creds, access, api string) (int, []byte) {
		name := "new-" + access + "-" + api + "-" + strings.ToLower(bkt)
		if api == "s3" {
			return s3(c, "PUT", "/"+name, nil)
		}
		st := c.token.JSON(t, "POST", "/api/v1/buckets", map[string]any{"name": name}, nil)
		return st, nil
	}
	requests := []request{
		{"read inside the prefix", "read", s3Req("GET", "/"+bkt+"/in/a.txt", nil), fileReq("GET", fileURL(bkt, "in/a.txt"), nil)},
		{"head inside the prefix", "read", s3Req("HEAD", "/"+bkt+"/in/a.txt", nil), fileReq("HEAD", fileURL(bkt, "in/a.txt"), nil)},
		{"list the prefix", "read", s3Req("GET", "/"+bkt+"?list-type=2&prefix=in/", nil), fileReq("GET", "/api/v1/buckets/"+bkt+"/files?prefix=in/", nil)},
		{"write inside the prefix", "write", s3Req("PUT", "/"+bkt+"/in/new-{access}-{api}.txt", []byte("new")), fileReq("PUT", fileURL(bkt, "in/new-{access}-{api}.txt"), []byte("new"))},
		{"delete inside the prefix", "delete", s3Req("DELETE", "/"+bkt+"/in/del-{access}-{api}", nil), fileReq("DELETE", fileURL(bkt, "in/del-{access}-{api}"), nil)},
		{"read outside the prefix", "", s3Req("GET", "/"+bkt+"/out.txt", nil), fileReq("GET", fileURL(bkt, "out.txt"), nil)},
		{"read a sibling of the prefix", "", s3Req("GET", "/"+bkt+"/inx.txt", nil), fileReq("GET", fileURL(bkt, "inx.txt"), nil)},
		{"list the bucket", "", s3Req("GET", "/"+bkt+"?list-type=2", nil), fileReq("GET", "/api/v1/buckets/"+bkt+"/files", nil)},
		{"list a sibling prefix", "", s3Req("GET", "/"+bkt+"?list-type=2&prefix=i", nil), fileReq("GET", "/api/v1/buckets/"+bkt+"/files?prefix=i", nil)},
		{"write outside the prefix", "", s3Req("PUT", "/"+bkt+"/out.txt", []byte("overwritten")), fileReq("PUT", fileURL(bkt, "out.txt"), []byte("overwritten"))},
		{"delete outside the prefix", "", s3Req("DELETE", "/"+bkt+"/out.txt", nil), fileReq("DELETE", fileURL(bkt, "out.txt"), nil)},
		{"read another bucket", "", s3Req("GET", "/"+other+"/in/a.txt", nil), fileReq("GET", fileURL(other, "in/a.txt"), nil)},
		{"list another bucket", "", s3Req("GET", "/"+other+"?list-type=2&prefix=in/", nil), fileReq("GET", "/api/v1/buckets/"+other+"/files?prefix=in/", nil)},
		{"write another bucket", "", s3Req("PUT", "/"+other+"/in/a.txt", []byte("overwritten")), fileReq("PUT", fileURL(other, "in/a.txt"), []byte("overwritten"))},
		{"delete in another bucket", "", s3Req("DELETE", "/"+other+"/in/a.txt", nil), fileReq("DELETE", fileURL(other, "in/a.txt"), nil)},
		{"create a bucket", "", createBucket, createBucket},
		{"list all buckets", "", s3Req("GET", "/", nil), fileReq("GET", "/api/v1/buckets", nil)},
		{"delete an empty bucket", "", s3Req("DELETE", "/"+empty, nil), fileReq("DELETE", "/api/v1/buckets/"+empty, nil)},
		{"change the bucket's versioning", "", s3Req("PUT", "/"+bkt+"?versioning", testenv.VersioningBody("Enabled")), fileReq("PATCH", "/api/v1/buckets/"+bkt, []byte(`{"versioning":"Enabled"}`))},
	}
	allows := func(access, needs string) bool {
		switch needs {
		case "read":
			return access == "read" || access == "read-write"
		case "write":
			return access == "write" || access == "read-write"
		case "delete":
			return access == "read-write"
		}
		return false
	}
	leaks := 0
	for _, access := range []string{"read", "write", "read-write"} {
		c := newCreds(t, access, 30*24*3600)
		for _, rq := range requests {
			want := allows(access, rq.needs)
			s3st, s3body := rq.s3(c, access, "s3")
			filest, filebody := rq.file(c, access, "file")
			if got := s3st < 300; got != want || !want && s3st != 403 {
				leaks++
				t.Errorf("%s key, %s: S3 %d %.200s (allowed: %v)", access, rq.name, s3st, s3body, want)
			}
			if got := filest < 300; got != want || !want && filest != 403 {
				leaks++
				t.Errorf("%s app token, %s: file API %d %.200s (allowed: %v)", access, rq.name, filest, filebody, want)
			}
			if !want && (bytes.Contains(s3body, secret) || bytes.Contains(filebody, secret)) {
				leaks++
				t.Errorf("%s, %s: a refusal carries the secret", access, rq.name)
			}
		}
	}

	// Expired: everything refused, S3 with ExpiredToken, the file API 401.
	expiring := newCreds(t, "read-write", 1)
	time.Sleep(1500 * time.Millisecond) // until the expiry has passed (a clock, not a latency)
	for _, rq := range requests {
		if st, body := rq.s3(expiring, "expired", "s3"); st != 400 || !bytes.Contains(body, []byte("<Code>ExpiredToken</Code>")) && !strings.HasPrefix(rq.name, "head") {
			leaks++
			t.Errorf("expired key, %s: S3 %d %.200s, want 400 ExpiredToken", rq.name, st, body)
		}
		if st, body := rq.file(expiring, "expired", "file"); st != 401 {
			leaks++
			t.Errorf("expired app token, %s: file API %d %.200s, want 401", rq.name, st, body)
		}
	}
	if leaks > 0 {
		t.Errorf("%d leaks", leaks)
	}

	// Nothing outside the scope changed.
	for bk, data := range map[string][]byte{bkt + "/out.txt": secret, bkt + "/inx.txt": secret, other + "/in/a.txt": secret, bkt + "/in/a.txt": []byte("inside")} {
		b, k, _ := strings.Cut(bk, "/")
		if resp, body := get(t, owner, b, k); resp.StatusCode != 200 || !bytes.Equal(body, data) {
			t.Errorf("%s changed: %d", bk, resp.StatusCode)
		}
	}
	var l struct{ Buckets []struct{ Name string } }
	owner.JSON(t, "GET", "/api/v1/buckets", nil, &l)
	if len(l.Buckets) != 3 {
		t.Errorf("the owner's buckets: %+v, want %s, %s, %s", l.Buckets, bkt, other, empty)
	}
	var bk struct{ Versioning string }
	owner.JSON(t, "GET", "/api/v1/buckets/"+bkt, nil, &bk)
	if bk.Versioning != "" && bk.Versioning != "Unversioned" {
		t.Errorf("the bucket's versioning changed to %q", bk.Versioning)
	}
	if got := strings.Join(keysOf(list(t, owner, bkt, "")), ","); got != "in/a.txt,in/del-read-file,in/del-read-s3,in/del-write-file,in/del-write-s3,in/new-read-write-file.txt,in/new-read-write-s3.txt,in/new-write-file.txt,in/new-write-s3.txt,inx.txt,out.txt" {
		t.Errorf("the bucket holds %s", got)
	}
}

package e2e

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
	"github.com/coffer-storage/coffer/test/testenv"
)

// auditLine is one line of the audit log, as docs/audit.md describes it.
type auditLine struct {
	Time   time.Time `json:"time"`
	Action string    `json:"action"`
	Actor  struct {
		Type, ID, User, Name string
	} `json:"actor"`
	Client    string            `json:"client"`
	RequestID string            `json:"request_id"`
	Target    map[string]string `json:"target"`
	Outcome   string            `json:"outcome"`
	Reason    string            `json:"reason"`
	raw       string
}

// auditFile reads every line of the audit log at path (and its rotated
// files), each a JSON object.
func auditFile(t *testing.T, path string) []auditLine {
	t.Helper()
	var out []auditLine
	files, _ := filepath.Glob(path + "*")
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l auditLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("%s: a line that is not JSON: %v\n%s", p, err, sc.Bytes())
			}
			l.raw = sc.Text()
			out = append(out, l)
		}
		f.Close()
	}
	return out
}

// rid returns a fresh request ID the test sends as X-Request-Id, so each
// action's line can be found by the request that caused it.
func rid(what string) string {
	return "audit-" + strings.ReplaceAll(what, " ", "-") + "-" + testenvID()
}

// TestAuditLog drives every action the audit log records through the real
// binary (the file API and S3), checks each one's line (actor, client
// address, request ID, target, outcome), then greps every line of the
// file for each secret the test used: passwords, access and refresh
// tokens, app tokens, S3 secrets, share-link tokens, passwords and
// grants, invite codes, presigned signatures.
func TestAuditLog(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit.log")
	keyring := filepath.Join(dir, "keyring")
	if err := os.WriteFile(keyring, []byte("default 1 "+base64.StdEncoding.EncodeToString(randBytes(t, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testenv.Start(t, "--audit-log", logPath, "--encryption", "on", "--kms", "local://"+keyring)
	var secrets []string
	secret := func(s string) string {
		if s == "" {
			t.Fatal("an empty secret")
		}
		secrets = append(secrets, s)
		return s
	}
	secret("correct horse battery") // every testenv user's password
	secret("admin password")        // newAdmin's

	type want struct {
		name      string
		action    string
		outcome   string
		requestID string // "" : any non-empty
		actorType string
		actorID   string
		target    map[string]string
		reason    string
		count     int // at least this many lines (default 1)
	}
	var wants []want
	expect := func(w want) { wants = append(wants, w) }

	// Sign-up and sign-in.
	u := testenv.NewClient(srv.URL)
	u.Email = "audit-" + strings.ToLower(testenvID()) + "@example.com"
	r := rid("signup")
	var signup struct {
		User   struct{ ID string }   `json:"user"`
		Bucket struct{ Name string } `json:"bucket"`
	}
	if st := u.JSON(t, "POST", "/api/v1/auth/signup", map[string]string{"email": u.Email, "password": "correct horse battery"}, &signup, "X-Request-Id", r); st != 201 {
		t.Fatalf("signup: %d", st)
	}
	u.Bucket = signup.Bucket.Name
	expect(want{name: "signup", action: "auth.signup", outcome: "success", requestID: r, target: map[string]string{"email": u.Email}})
	r = rid("login")
	var sess struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		UserID       string `json:"user_id"`
	}
	if st := u.JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": u.Email, "password": "correct horse battery"}, &sess, "X-Request-Id", r); st != 200 {
		t.Fatalf("login: %d", st)
	}
	u.Token = secret(sess.AccessToken)
	secret(sess.RefreshToken)
	uid := sess.UserID
	expect(want{name: "sign-in", action: "auth.signin", outcome: "success", requestID: r, actorType: "user", actorID: uid, target: map[string]string{"email": u.Email}})
	// Wrong passwords from this address until the login throttle refuses
	// (for an account of no one: the throttle counts per account and
	// address, and the password change below checks u's under it).
	anon := testenv.NewClient(srv.URL)
	ghost := "ghost-" + strings.ToLower(testenvID()) + "@example.com"
	r = rid("bad login")
	throttled := false
	for i := 0; i < 15 && !throttled; i++ {
		st := anon.JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": ghost, "password": secret(fmt.Sprintf("wrong guess %d", i))}, nil, "X-Request-Id", r)
		switch st {
		case 401:
		case 429:
			throttled = true
		default:
			t.Fatalf("wrong password: %d", st)
		}
	}
	if !throttled {
		t.Fatal("15 wrong passwords were never throttled")
	}
	// A password typed into the e-mail field is not recorded.
	anon.JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": secret("tr0ub4dor-3 typed here"), "password": "x"}, nil)
	expect(want{name: "sign-in failure", action: "auth.signin", outcome: "failure", requestID: r, actorType: "anonymous", reason: "wrong_credentials", target: map[string]string{"email": ghost}})
	expect(want{name: "sign-in throttled", action: "auth.signin", outcome: "throttled", requestID: r, actorType: "anonymous", reason: "rate_limited"})

	// Password change (re-login with the new one afterwards).
	r = rid("password")
	newPassword := secret("battery staple horse correct")
	var changed struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if st := u.JSON(t, "POST", "/api/v1/me/password", map[string]string{"old_password": "correct horse battery", "new_password": newPassword}, &changed, "X-Request-Id", r); st != 200 {
		t.Fatalf("change password: %d", st)
	}
	u.Token = secret(changed.AccessToken)
	secret(changed.RefreshToken)
	expect(want{name: "password change", action: "auth.password_change", outcome: "success", requestID: r, actorType: "user", actorID: uid, target: map[string]string{"user": uid}})

	// S3 keys: created, first used (a signed request), deleted.
	r = rid("key create")
	var key struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if st := u.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "audit"}, &key, "X-Request-Id", r); st != 201 {
		t.Fatalf("create key: %d", st)
	}
	secret(key.Secret)
	expect(want{name: "key create", action: "key.create", outcome: "success", requestID: r, actorType: "user", actorID: uid, target: map[string]string{"access_key": key.ID}})
	s3u := &s3User{Client: u, srv: srv, id: key.ID, secret: key.Secret}
	r = rid("key first use")
	if res := s3u.s3(t, "GET", "/", nil, "", "X-Request-Id", r); res.status != 200 {
		t.Fatalf("ListBuckets: %d %s", res.status, res.body)
	}
	s3u.s3(t, "GET", "/", nil, "", "X-Request-Id", rid("key second use"))
	expect(want{name: "key first use", action: "key.first_use", outcome: "success", requestID: r, actorType: "key", actorID: key.ID, target: map[string]string{"access_key": key.ID}})
	var key2 struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	u.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "doomed"}, &key2)
	secret(key2.Secret)
	r = rid("key delete")
	if st := u.JSON(t, "DELETE", "/api/v1/keys/"+key2.ID, nil, nil, "X-Request-Id", r); st != 204 {
		t.Fatalf("delete key: %d", st)
	}
	expect(want{name: "key delete", action: "key.delete", outcome: "success", requestID: r, actorType: "user", actorID: uid, target: map[string]string{"access_key": key2.ID}})

	// App tokens: created, first used, deleted.
	r = rid("token create")
	var tok struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	if st := u.JSON(t, "POST", "/api/v1/tokens", map[string]string{"name": "ci"}, &tok, "X-Request-Id", r); st != 201 {
		t.Fatalf("create token: %d", st)
	}
	secret(tok.Token)
	expect(want{name: "token create", action: "token.create", outcome: "success", requestID: r, actorType: "user", target: map[string]string{"access_key": tok.ID}})
	tc := testenv.NewClient(srv.URL)
	tc.Token = tok.Token
	r = rid("token use")
	if st := tc.JSON(t, "GET", "/api/v1/buckets", nil, nil, "X-Request-Id", r); st != 200 {
		t.Fatalf("app token: %d", st)
	}
	expect(want{name: "token first use", action: "token.first_use", outcome: "success", requestID: r, actorType: "key", actorID: tok.ID})
	r = rid("token delete")
	if st := u.JSON(t, "DELETE", "/api/v1/tokens/"+tok.ID, nil, nil, "X-Request-Id", r); st != 204 {
		t.Fatalf("delete token: %d", st)
	}
	expect(want{name: "token delete", action: "token.delete", outcome: "success", requestID: r, target: map[string]string{"access_key": tok.ID}})

	// Share links: created (password, one download), opened locked,
	// unlocked with a wrong then the right password, downloaded,
	// exhausted, and another revoked.
	if res := s3u.s3(t, "PUT", "/"+u.Bucket+"/shared.txt", []byte("shared body"), ""); res.status != 200 {
		t.Fatalf("PUT: %d", res.status)
	}
	sharePassword := secret("share pass phrase")
	r = rid("share create")
	var sh struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	if st := u.JSON(t, "POST", "/api/v1/shares", map[string]any{"bucket": u.Bucket, "key": "shared.txt", "password": sharePassword, "max_downloads": 1}, &sh, "X-Request-Id", r); st != 201 {
		t.Fatalf("create share: %d", st)
	}
	secret(sh.Token)
	expect(want{name: "share create", action: "share.create", outcome: "success", requestID: r, actorType: "user", actorID: uid, target: map[string]string{"share": sh.ID, "bucket": u.Bucket, "key": "shared.txt"}})
	r = rid("share locked")
	if st := anon.JSON(t, "GET", "/s/"+sh.Token, nil, nil, "X-Request-Id", r); st != 401 {
		t.Fatalf("locked share: %d", st)
	}
	expect(want{name: "share open locked", action: "share.open", outcome: "denied", requestID: r, actorType: "anonymous", target: map[string]string{"share": sh.ID}})
	r = rid("share wrong password")
	if st := anon.JSON(t, "POST", "/s/"+sh.Token+"/unlock", map[string]string{"password": secret("not the share password")}, nil, "X-Request-Id", r); st != 401 {
		t.Fatalf("unlock with a wrong password: %d", st)
	}
	expect(want{name: "share unlock failure", action: "share.unlock", outcome: "failure", requestID: r, actorType: "anonymous", reason: "wrong_credentials", target: map[string]string{"share": sh.ID}})
	r = rid("share unlock")
	var grant struct{ Grant string }
	if st := anon.JSON(t, "POST", "/s/"+sh.Token+"/unlock", map[string]string{"password": sharePassword}, &grant, "X-Request-Id", r); st != 200 {
		t.Fatalf("unlock: %d", st)
	}
	secret(grant.Grant)
	expect(want{name: "share unlock", action: "share.unlock", outcome: "success", requestID: r, target: map[string]string{"share": sh.ID}})
	r = rid("share download")
	if resp := anon.Do(t, "GET", "/s/"+sh.Token, nil, "X-Share-Grant", grant.Grant, "X-Request-Id", r); resp.StatusCode != 200 {
		t.Fatalf("download through the share: %d", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
	expect(want{name: "share open", action: "share.open", outcome: "success", requestID: r, actorType: "anonymous", target: map[string]string{"share": sh.ID}})
	r = rid("share exhausted")
	if resp := anon.Do(t, "GET", "/s/"+sh.Token, nil, "X-Share-Grant", grant.Grant, "X-Request-Id", r); resp.StatusCode != 404 && resp.StatusCode != 410 {
		t.Fatalf("second download through a one-download share: %d", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
	expect(want{name: "share exhausted", action: "share.exhausted", outcome: "failure", requestID: r, target: map[string]string{"share": sh.ID}, reason: "download_limit"})
	var sh2 struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	u.JSON(t, "POST", "/api/v1/shares", map[string]any{"bucket": u.Bucket, "key": "shared.txt"}, &sh2)
	secret(sh2.Token)
	r = rid("share update")
	if st := u.JSON(t, "PATCH", "/api/v1/shares/"+sh2.ID, map[string]any{"expires_in": 3600}, nil, "X-Request-Id", r); st != 200 {
		t.Fatalf("share expiry: %d", st)
	}
	expect(want{name: "share update", action: "share.update", outcome: "success", requestID: r, actorType: "user", target: map[string]string{"share": sh2.ID}})
	r = rid("share revoke")
	if st := u.JSON(t, "DELETE", "/api/v1/shares/"+sh2.ID, nil, nil, "X-Request-Id", r); st != 200 && st != 204 {
		t.Fatalf("revoke share: %d", st)
	}
	expect(want{name: "share revoke", action: "share.revoke", outcome: "success", requestID: r, actorType: "user", target: map[string]string{"share": sh2.ID}})

	// Deletes through the file API: one file, a batch; a denied one.
	for _, k := range []string{"a.txt", "b.txt", "c.txt"} {
		s3u.s3(t, "PUT", "/"+u.Bucket+"/"+k, []byte(k), "")
	}
	r = rid("file delete")
	if st := u.JSON(t, "DELETE", testenv.FileURL(u.Bucket, "a.txt"), nil, nil, "X-Request-Id", r); st != 204 {
		t.Fatalf("file delete: %d", st)
	}
	expect(want{name: "file API delete", action: "object.delete", outcome: "success", requestID: r, actorType: "user", actorID: uid, target: map[string]string{"bucket": u.Bucket, "key": "a.txt"}})
	r = rid("batch delete")
	if resp := u.Do(t, "POST", "/api/v1/buckets/"+u.Bucket+"/delete", strings.NewReader(`{"keys":["b.txt","c.txt"]}`), "Content-Type", "application/json", "X-Request-Id", r); resp.StatusCode != 200 {
		t.Fatalf("batch delete: %d", resp.StatusCode)
	} else {
		readAll(t, resp)
	}
	expect(want{name: "batch delete", action: "object.delete", outcome: "success", requestID: r, actorType: "user", target: map[string]string{"bucket": u.Bucket, "key": "c.txt"}})
	other := srv.NewUser(t)
	r = rid("denied delete")
	if st := other.JSON(t, "DELETE", testenv.FileURL(u.Bucket, "shared.txt"), nil, nil, "X-Request-Id", r); st != 403 && st != 404 {
		t.Fatalf("another user's delete: %d", st)
	}
	expect(want{name: "denied delete", action: "object.delete", outcome: "denied", requestID: r, actorType: "user", target: map[string]string{"bucket": u.Bucket, "key": "shared.txt"}})

	// S3: bucket documents, object lock, governance bypass, deletes.
	b := "/" + u.Bucket
	xmlPut := func(name, path, body string, wantStatus int) string {
		t.Helper()
		r := rid(name)
		res := s3u.s3(t, "PUT", path, []byte(body), "", "Content-MD5", md5b64([]byte(body)), "X-Request-Id", r)
		if res.status != wantStatus {
			t.Fatalf("%s: %d %s", name, res.status, res.body)
		}
		return r
	}
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:DeleteBucket","Resource":"arn:aws:s3:::` + u.Bucket + `"}]}`
	r = xmlPut("policy", b+"?policy", policy, 204)
	expect(want{name: "bucket policy", action: "bucket.policy", outcome: "success", requestID: r, actorType: "key", actorID: key.ID, target: map[string]string{"bucket": u.Bucket}})
	r = rid("policy delete")
	if res := s3u.s3(t, "DELETE", b+"?policy", nil, "", "X-Request-Id", r); res.status != 204 {
		t.Fatalf("delete policy: %d %s", res.status, res.body)
	}
	expect(want{name: "bucket policy deleted", action: "bucket.policy", outcome: "success", requestID: r, reason: "deleted", target: map[string]string{"bucket": u.Bucket}})
	r = rid("acl")
	if res := s3u.s3(t, "PUT", b+"?acl", nil, "", "X-Amz-Acl", "private", "X-Request-Id", r); res.status != 200 {
		t.Fatalf("put ACL: %d %s", res.status, res.body)
	}
	expect(want{name: "bucket ACL", action: "bucket.acl", outcome: "success", requestID: r, actorType: "key", target: map[string]string{"bucket": u.Bucket}})
	lifecycle := `<LifecycleConfiguration><Rule><ID>old</ID><Filter><Prefix>tmp/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>30</Days></Expiration></Rule></LifecycleConfiguration>`
	r = xmlPut("lifecycle", b+"?lifecycle", lifecycle, 200)
	expect(want{name: "lifecycle", action: "bucket.lifecycle", outcome: "success", requestID: r, target: map[string]string{"bucket": u.Bucket}})
	cors := `<CORSConfiguration><CORSRule><AllowedOrigin>https://app.example.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>`
	r = xmlPut("cors", b+"?cors", cors, 200)
	expect(want{name: "CORS", action: "bucket.cors", outcome: "success", requestID: r, target: map[string]string{"bucket": u.Bucket}})

	locked := "audit-lock-" + strings.ToLower(testenvID())
	if res := s3u.s3(t, "PUT", "/"+locked, nil, "", "X-Amz-Bucket-Object-Lock-Enabled", "true"); res.status != 200 {
		t.Fatalf("create locked bucket: %d %s", res.status, res.body)
	}
	lockCfg := `<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days></DefaultRetention></Rule></ObjectLockConfiguration>`
	r = xmlPut("object lock", "/"+locked+"?object-lock", lockCfg, 200)
	expect(want{name: "object lock", action: "bucket.object_lock", outcome: "success", requestID: r, target: map[string]string{"bucket": locked}})
	put := s3u.s3(t, "PUT", "/"+locked+"/held", []byte("held"), "")
	vid := put.header.Get("X-Amz-Version-Id")
	if put.status != 200 || vid == "" {
		t.Fatalf("PUT into a locked bucket: %d %s", put.status, put.body)
	}
	until := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	retention := `<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>` + until + `</RetainUntilDate></Retention>`
	r = xmlPut("retention", "/"+locked+"/held?retention&versionId="+url.QueryEscape(vid), retention, 200)
	expect(want{name: "retention", action: "object.retention", outcome: "success", requestID: r, actorType: "key", target: map[string]string{"bucket": locked, "key": "held", "version_id": vid}})
	r = xmlPut("legal hold", "/"+locked+"/held?legal-hold&versionId="+url.QueryEscape(vid), `<LegalHold><Status>OFF</Status></LegalHold>`, 200)
	expect(want{name: "legal hold", action: "object.legal_hold", outcome: "success", requestID: r, actorType: "key", target: map[string]string{"bucket": locked, "key": "held"}})
	r = rid("bypass")
	if res := s3u.s3(t, "DELETE", "/"+locked+"/held?versionId="+url.QueryEscape(vid), nil, "", "X-Amz-Bypass-Governance-Retention", "true", "X-Request-Id", r); res.status != 204 {
		t.Fatalf("delete a version under governance with bypass: %d %s", res.status, res.body)
	}
	expect(want{name: "version delete", action: "object.version_delete", outcome: "success", requestID: r, actorType: "key", reason: "bypass_governance", target: map[string]string{"bucket": locked, "key": "held", "version_id": vid}})
	expect(want{name: "governance bypass", action: "object.governance_bypass", outcome: "success", requestID: r, actorType: "key", actorID: key.ID, target: map[string]string{"bucket": locked, "key": "held", "version_id": vid}})
	r = rid("s3 delete")
	if res := s3u.s3(t, "DELETE", "/"+locked+"/gone", nil, "", "X-Request-Id", r); res.status != 204 {
		t.Fatalf("DeleteObject: %d %s", res.status, res.body)
	}
	expect(want{name: "S3 delete marker", action: "object.delete", outcome: "success", requestID: r, actorType: "key", reason: "delete_marker", target: map[string]string{"bucket": locked, "key": "gone"}})
	for _, k := range []string{"m1", "m2"} {
		s3u.s3(t, "PUT", b+"/"+k, []byte(k), "")
	}
	multi := `<Delete><Object><Key>m1</Key></Object><Object><Key>m2</Key></Object></Delete>`
	r = rid("multi delete")
	if res := s3u.s3(t, "POST", b+"?delete", []byte(multi), "", "Content-MD5", md5b64([]byte(multi)), "X-Request-Id", r); res.status != 200 {
		t.Fatalf("DeleteObjects: %d %s", res.status, res.body)
	}
	expect(want{name: "DeleteObjects", action: "object.delete", outcome: "success", requestID: r, actorType: "key", target: map[string]string{"bucket": u.Bucket, "key": "m2"}})
	// A presigned GET: its signature must not be logged either.
	presigned, err := sigv4.Presign("GET", srv.S3URL+b+"/shared.txt", nil, key.ID, key.Secret, "us-east-1", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pu, _ := url.Parse(presigned)
	secret(pu.Query().Get("X-Amz-Signature"))
	if resp, err := http.Get(presigned); err != nil || resp.StatusCode != 200 {
		t.Fatalf("presigned GET: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}

	// Administration: users, invites, key rotation.
	admin := newAdmin(t, srv)
	secret(admin.Token)
	r = rid("admin create")
	var made struct{ User struct{ ID string } }
	if st := admin.JSON(t, "POST", "/api/v1/admin/users", map[string]any{"email": "made-" + strings.ToLower(testenvID()) + "@example.com", "password": secret("made by admin pw")}, &made, "X-Request-Id", r); st != 201 {
		t.Fatalf("admin create user: %d", st)
	}
	created := made.User
	expect(want{name: "admin create user", action: "admin.user_create", outcome: "success", requestID: r, actorType: "admin", target: map[string]string{"user": created.ID}})
	adminAct := func(name, method, path string, body any, action string, okStatus int) {
		t.Helper()
		r := rid(name)
		if st := admin.JSON(t, method, path, body, nil, "X-Request-Id", r); st != okStatus {
			t.Fatalf("%s: %d", name, st)
		}
		expect(want{name: name, action: action, outcome: "success", requestID: r, actorType: "admin", target: map[string]string{"user": created.ID}})
	}
	uu := "/api/v1/admin/users/" + created.ID
	adminAct("admin quota", "PUT", uu+"/quota", map[string]any{"quota_bytes": 1 << 30}, "admin.user_quota", 200)
	adminAct("admin disable", "POST", uu+"/disable", nil, "admin.user_disable", 200)
	adminAct("admin enable", "POST", uu+"/enable", nil, "admin.user_enable", 200)
	adminAct("admin password", "POST", uu+"/password", map[string]string{"password": secret("reset by admin pw")}, "admin.user_password", 204)
	adminAct("admin delete", "DELETE", uu, nil, "admin.user_delete", 204)
	r = rid("invite")
	var inv struct{ ID, Code string }
	if st := admin.JSON(t, "POST", "/api/v1/admin/invites", map[string]any{}, &inv, "X-Request-Id", r); st != 201 {
		t.Fatalf("create invite: %d", st)
	}
	secret(inv.Code)
	expect(want{name: "invite create", action: "admin.invite_create", outcome: "success", requestID: r, actorType: "admin", target: map[string]string{"invite": inv.ID}})
	r = rid("invite revoke")
	if st := admin.JSON(t, "DELETE", "/api/v1/admin/invites/"+inv.ID, nil, nil, "X-Request-Id", r); st != 204 {
		t.Fatalf("revoke invite: %d", st)
	}
	expect(want{name: "invite revoke", action: "admin.invite_revoke", outcome: "success", requestID: r, actorType: "admin", target: map[string]string{"invite": inv.ID}})
	r = rid("rotate")
	if st := admin.JSON(t, "POST", "/api/v1/admin/kms/rotate", nil, nil, "X-Request-Id", r); st != 200 {
		t.Fatalf("rotate: %d", st)
	}
	expect(want{name: "key rotation", action: "encryption.key_rotate", outcome: "success", requestID: r, actorType: "admin", target: map[string]string{"kms_key": "local:default#2"}})
	r = rid("account delete")
	otherID := userID(t, other)
	if st := other.JSON(t, "DELETE", "/api/v1/me", map[string]any{"password": "correct horse battery", "purge": true}, nil, "X-Request-Id", r); st != 204 {
		t.Fatalf("delete own account: %d", st)
	}
	expect(want{name: "account delete", action: "auth.account_delete", outcome: "success", requestID: r, actorType: "user", actorID: otherID, target: map[string]string{"user": otherID}})
	r = rid("user tries admin")
	if st := u.JSON(t, "GET", "/api/v1/admin/audit", nil, nil, "X-Request-Id", r); st != 403 {
		t.Fatalf("a user's GET /admin/audit: %d, want 403", st)
	}

	// Every expected line, polled: the writer is asynchronous.
	var lines []auditLine
	missing := wants
	deadline := time.Now().Add(15 * time.Second)
	for {
		lines = auditFile(t, logPath)
		missing = missing[:0:0]
		for _, w := range wants {
			if countMatches(lines, w.action, w.outcome, w.requestID, w.actorType, w.actorID, w.reason, w.target) < max(w.count, 1) {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, w := range missing {
		t.Errorf("%s: no audit line %+v", w.name, w)
	}
	if t.Failed() || os.Getenv("COFFER_AUDIT_DUMP") != "" {
		for _, l := range lines {
			t.Log(l.raw)
		}
	}
	// A key's first use is recorded once: not its second request.
	if n := countMatches(lines, "key.first_use", "success", "", "key", key.ID, "", nil); n != 1 {
		t.Errorf("key.first_use of %s: %d lines, want 1", key.ID, n)
	}
	for _, l := range lines {
		if l.Client != "127.0.0.1" && l.RequestID != "" {
			t.Errorf("a request's line without the client address 127.0.0.1: %s", l.raw)
		}
		if l.Time.IsZero() || l.Action == "" || l.Outcome == "" || l.Actor.Type == "" {
			t.Errorf("a line without time, action, outcome or actor: %s", l.raw)
		}
	}
	// No secret in any line, nor in the rotated files.
	for _, l := range lines {
		for _, s := range secrets {
			if strings.Contains(l.raw, s) {
				t.Errorf("the audit log holds a secret %q: %s", s, l.raw)
			}
		}
		for _, s := range []string{"Bearer ", "AWS4-HMAC-SHA256", "X-Amz-Signature", "Authorization"} {
			if strings.Contains(l.raw, s) {
				t.Errorf("the audit log holds %q: %s", s, l.raw)
			}
		}
	}
	if st, err := os.Stat(logPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode: %v %v, want 0600", st.Mode(), err)
	}

	// The admin API's query of recent events: filters and the admin-only
	// check (above).
	var q struct {
		Enabled bool
		Events  []auditLine
	}
	if st := admin.JSON(t, "GET", "/api/v1/admin/audit?action=auth.signin&actor="+url.QueryEscape(uid), nil, &q); st != 200 || !q.Enabled {
		t.Fatalf("GET /admin/audit: %d %+v", st, q)
	}
	if len(q.Events) != 1 || q.Events[0].Action != "auth.signin" || q.Events[0].Outcome != "success" {
		t.Errorf("GET /admin/audit?action=auth.signin&actor=%s: %+v, want the one successful sign-in", uid, q.Events)
	}
	if st := admin.JSON(t, "GET", "/api/v1/admin/audit?action=share.&limit=2", nil, &q); st != 200 || len(q.Events) != 2 {
		t.Fatalf("GET /admin/audit?action=share.&limit=2: %d, %d events", st, len(q.Events))
	}
	for i, e := range q.Events {
		if !strings.HasPrefix(e.Action, "share.") || i > 0 && e.Time.After(q.Events[i-1].Time) {
			t.Errorf("share. events, newest first: %+v", q.Events)
		}
	}
	since := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if st := admin.JSON(t, "GET", "/api/v1/admin/audit?since="+since, nil, &q); st != 200 || len(q.Events) != 0 {
		t.Errorf("GET /admin/audit?since=(an hour ahead): %d, %d events", st, len(q.Events))
	}
	// The metrics count them.
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m := string(readAll(t, resp))
	for _, s := range []string{`coffer_audit_events_total{outcome="success"}`, `coffer_audit_events_total{outcome="throttled"}`, "coffer_audit_dropped_total 0"} {
		if !strings.Contains(m, s) {
			t.Errorf("/metrics has no %s", s)
		}
	}
}

// countMatches counts the lines of action and outcome with the request ID
// (any non-empty one if ""), actor type and ID, reason and target fields
// given ("" and nil: any).
func countMatches(lines []auditLine, action, outcome, requestID, actorType, actorID, reason string, target map[string]string) int {
	n := 0
next:
	for _, l := range lines {
		if l.Action != action || l.Outcome != outcome || l.Client == "" ||
			(requestID == "" && l.RequestID == "") || (requestID != "" && l.RequestID != requestID) ||
			(actorType != "" && l.Actor.Type != actorType) || (actorID != "" && l.Actor.ID != actorID) ||
			(reason != "" && l.Reason != reason) {
			continue
		}
		for k, v := range target {
			if l.Target[k] != v {
				continue next
			}
		}
		n++
	}
	return n
}

// readAll reads and closes resp's body.
func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAuditWebhook: with --audit-webhook (an HTTP receiver on loopback),
// the events arrive as JSON arrays, and none holds the password used.
func TestAuditWebhook(t *testing.T) {
	var mu sync.Mutex
	var got []auditLine
	var bodies []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var batch []auditLine
		if r.Method != "POST" || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &batch) != nil {
			t.Errorf("webhook got %s %s %q", r.Method, r.Header.Get("Content-Type"), b)
		}
		mu.Lock()
		got = append(got, batch...)
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer recv.Close()
	srv := testenv.Start(t, "--audit-webhook", recv.URL)
	u := srv.NewUser(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		n := countMatches(got, "auth.signin", "success", "", "user", "", "", map[string]string{"email": u.Email}) +
			countMatches(got, "auth.signup", "success", "", "", "", "", map[string]string{"email": u.Email})
		mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook did not get the signup and the sign-in of %s: %+v", u.Email, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, b := range bodies {
		for _, s := range []string{"correct horse battery", u.Token, u.Refresh} {
			if strings.Contains(b, s) {
				t.Errorf("a webhook body holds a secret: %s", b)
			}
		}
	}
}

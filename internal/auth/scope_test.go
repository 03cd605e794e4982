package auth

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
	"github.com/coffer-storage/coffer/internal/policy"
)

// TestSimpleScope: what each access of the simple form allows, inside and
// outside its bucket and prefix (docs/keys.md's table).
func TestSimpleScope(t *testing.T) {
	type ask struct {
		action, resource string
		prefix           []string // s3:prefix
	}
	obj := func(action, key string) ask { return ask{action: action, resource: "arn:aws:s3:::b/" + key} }
	bkt := func(action string, prefix ...string) ask {
		return ask{action: action, resource: "arn:aws:s3:::b", prefix: prefix}
	}
	other := func(action, key string) ask { return ask{action: action, resource: "arn:aws:s3:::other/" + key} }
	read := []ask{obj("s3:GetObject", "p/a"), obj("s3:GetObjectVersion", "p/x/y"), obj("s3:GetObjectTagging", "p/a"),
		obj("s3:GetObjectAttributes", "p/a"), bkt("s3:ListBucket", "p/"), bkt("s3:ListBucket", "p/sub"), bkt("s3:ListBucketVersions", "p/")}
	write := []ask{obj("s3:PutObject", "p/a"), obj("s3:AbortMultipartUpload", "p/a"), obj("s3:ListMultipartUploadParts", "p/a"),
		obj("s3:PutObjectTagging", "p/a"), obj("s3:DeleteObjectTagging", "p/a"), bkt("s3:ListBucketMultipartUploads", "p/")}
	del := []ask{obj("s3:DeleteObject", "p/a"), obj("s3:DeleteObjectVersion", "p/a")}
	// Refused to every access of bucket b, prefix p/.
	never := []ask{
		obj("s3:GetObject", "q/a"), obj("s3:GetObject", "a"), obj("s3:GetObject", "P/a"), obj("s3:PutObject", "q/a"),
		obj("s3:DeleteObject", "pa"), other("s3:GetObject", "p/a"), other("s3:PutObject", "p/a"),
		bkt("s3:ListBucket"), bkt("s3:ListBucket", "q/"), bkt("s3:ListBucket", "p"), bkt("s3:ListBucket", "p/", "q/"),
		bkt("s3:ListBucketVersions"), bkt("s3:ListBucketMultipartUploads"),
		bkt("s3:CreateBucket"), bkt("s3:DeleteBucket"), bkt("s3:PutBucketPolicy"), bkt("s3:PutBucketVersioning"),
		bkt("s3:PutLifecycleConfiguration"), bkt("s3:coffer:CreateShare"), bkt("coffer:CreateShare"),
		obj("s3:PutObjectRetention", "p/a"), obj("s3:PutObjectLegalHold", "p/a"), obj("s3:PutObjectAcl", "p/a"),
		{action: "s3:ListAllMyBuckets", resource: "arn:aws:s3:::"},
		{action: "s3:CreateBucket", resource: "arn:aws:s3:::b"},
		{action: "s3:GetObject", resource: "arn:aws:s3:::"},
		{action: "s3:GetObject", resource: "b/p/a"},
	}
	for _, c := range []struct {
		access      string
		allow, deny [][]ask
	}{
		{meta.AccessRead, [][]ask{read}, [][]ask{write, del, never}},
		{meta.AccessWrite, [][]ask{write}, [][]ask{read, del, never}},
		{meta.AccessReadWrite, [][]ask{read, write, del}, [][]ask{never}},
	} {
		ev, err := ScopeOf(meta.KeyScope{Bucket: "b", Prefix: "p/", Access: c.access})
		if err != nil {
			t.Fatal(err)
		}
		for want, groups := range map[policy.Decision][][]ask{policy.Allow: c.allow, policy.NoMatch: c.deny} {
			for _, g := range groups {
				for _, a := range g {
					r := &policy.Request{Action: a.action, Resource: a.resource, Context: map[string][]string{}}
					if a.prefix != nil {
						r.Context["s3:prefix"] = a.prefix
					}
					if got := ev.Evaluate(r); got != want {
						t.Errorf("%s: %s on %s (prefix %q) = %v, want %v", c.access, a.action, a.resource, a.prefix, got, want)
					}
				}
			}
		}
	}

	// A key of every bucket: any bucket, ListAllMyBuckets when it reads;
	// never CreateBucket.
	for _, c := range []struct {
		access                  string
		getAny, putAny, listAll policy.Decision
	}{
		{meta.AccessRead, policy.Allow, policy.NoMatch, policy.Allow},
		{meta.AccessWrite, policy.NoMatch, policy.Allow, policy.NoMatch},
	} {
		ev, _ := ScopeOf(meta.KeyScope{Access: c.access})
		for _, a := range []struct {
			action, resource string
			want             policy.Decision
		}{
			{"s3:GetObject", "arn:aws:s3:::any/k", c.getAny},
			{"s3:PutObject", "arn:aws:s3:::other/k", c.putAny},
			{"s3:ListAllMyBuckets", "arn:aws:s3:::", c.listAll},
			{"s3:CreateBucket", "arn:aws:s3:::new", policy.NoMatch},
			{"s3:ListBucket", "arn:aws:s3:::any", map[bool]policy.Decision{true: policy.Allow, false: policy.NoMatch}[c.access == meta.AccessRead]},
		} {
			if got := ev.Evaluate(&policy.Request{Action: a.action, Resource: a.resource}); got != a.want {
				t.Errorf("%s everywhere: %s on %s = %v, want %v", c.access, a.action, a.resource, got, a.want)
			}
		}
	}
}

// TestScopeOfRefuses: malformed scopes, and (until the policy language is
// wired in) inline policies, are refused.
func TestScopeOfRefuses(t *testing.T) {
	for _, c := range []struct {
		s    meta.KeyScope
		code errcode.Code
	}{
		{meta.KeyScope{Bucket: "b"}, errcode.InvalidArgument},
		{meta.KeyScope{Prefix: "p", Access: meta.AccessRead}, errcode.InvalidArgument},
		{meta.KeyScope{Bucket: "b", Access: "all"}, errcode.InvalidArgument},
		{meta.KeyScope{Policy: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:NoSuchAction","Resource":"*"}]}`}, errcode.InvalidArgument},
		{meta.KeyScope{Policy: `not json`}, errcode.InvalidArgument},
	} {
		if _, err := ScopeOf(c.s); errcode.Of(err) != c.code {
			t.Errorf("ScopeOf(%+v) = %v, want code %v", c.s, err, c.code)
		}
	}
	if ev, err := ScopeOf(meta.KeyScope{}); ev != nil || err != nil {
		t.Errorf("ScopeOf(unscoped) = %v, %v; want nil, nil", ev, err)
	}
}

// TestInlineKeyPolicy: a key's inline policy is parsed by the policy
// language and evaluated as the key's scope: its Allow, its explicit
// Deny, nothing else.
func TestInlineKeyPolicy(t *testing.T) {
	ev, err := ScopeOf(meta.KeyScope{Policy: `{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::b/in/*"},
		{"Effect":"Deny","Action":"s3:*","Resource":"arn:aws:s3:::b/in/secret*"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		action, resource string
		want             policy.Decision
	}{
		{"s3:GetObject", "arn:aws:s3:::b/in/a", policy.Allow},
		{"s3:PutObject", "arn:aws:s3:::b/in/a", policy.Allow},
		{"s3:DeleteObject", "arn:aws:s3:::b/in/a", policy.NoMatch},
		{"s3:GetObject", "arn:aws:s3:::b/out", policy.NoMatch},
		{"s3:GetObject", "arn:aws:s3:::b/in/secret.txt", policy.Deny},
		{"s3:ListAllMyBuckets", "arn:aws:s3:::", policy.NoMatch},
	} {
		if got := ev.Evaluate(&policy.Request{Principal: policy.Principal{UserID: "u", KeyID: "k"}, Action: c.action, Resource: c.resource}); got != c.want {
			t.Errorf("%s on %s = %v, want %v", c.action, c.resource, got, c.want)
		}
	}
}

// TestScopedKeyLifecycle: a scoped key's lookup carries its scope; once
// its expiry passes (on the service's clock) it is refused with
// ExpiredToken at once, cached or not; a deleted key is NotFound at once.
func TestScopedKeyLifecycle(t *testing.T) {
	ctx := context.Background()
	s, u, now := keyService(t)

	scope := meta.KeyScope{Bucket: "photos", Prefix: "in/", Access: meta.AccessRead}
	k, err := s.Keys.CreateAccessKey(ctx, u.ID, KeyOptions{Name: "ro", Scope: scope, ExpiresAt: now.Add(30 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	secret, p, err := s.Keys.LookupKey(ctx, k.ID)
	if err != nil || secret != k.Secret || p.UserID != u.ID || p.KeyID != k.ID || p.Scope == nil {
		t.Fatalf("LookupKey = %q, %+v, %v", secret, p, err)
	}
	if got := p.Scope.Evaluate(&policy.Request{Action: "s3:PutObject", Resource: "arn:aws:s3:::photos/in/a"}); got != policy.NoMatch {
		t.Errorf("read-only key's scope on PutObject = %v", got)
	}
	keys, err := s.Keys.ListAccessKeys(ctx, u.ID)
	if err != nil || len(keys) != 1 || keys[0].Scope != scope || !keys[0].ExpiresAt.Equal(k.ExpiresAt) {
		t.Fatalf("ListAccessKeys = %+v, %v", keys, err)
	}

	*now = now.Add(30*24*time.Hour - time.Second)
	if _, _, err := s.Keys.LookupKey(ctx, k.ID); err != nil {
		t.Fatalf("LookupKey a second before the expiry: %v", err)
	}
	*now = now.Add(time.Second)
	_, _, err = s.Keys.LookupKey(ctx, k.ID)
	if e := errcode.As(err); e.Code != errcode.Unauthenticated || e.Detail["s3_code"] != "ExpiredToken" {
		t.Fatalf("LookupKey of an expired key = %v, want Unauthenticated ExpiredToken", err)
	}

	plain, err := s.Keys.CreateAccessKey(ctx, u.ID, KeyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, p, err := s.Keys.LookupKey(ctx, plain.ID); err != nil || p.Scope != nil {
		t.Fatalf("LookupKey of an unscoped key = %+v, %v", p, err)
	}
	if err := s.Keys.DeleteAccessKey(ctx, u.ID, plain.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Keys.LookupKey(ctx, plain.ID); !errcode.Is(err, errcode.NotFound) {
		t.Fatalf("LookupKey of a deleted key = %v, want NotFound", err)
	}

	for _, o := range []KeyOptions{
		{ExpiresAt: *now},
		{ExpiresAt: now.Add(-time.Hour)},
		{Scope: meta.KeyScope{Bucket: "b", Access: "everything"}},
		{Scope: meta.KeyScope{Policy: "{}"}},
	} {
		if _, err := s.Keys.CreateAccessKey(ctx, u.ID, o); err == nil {
			t.Errorf("CreateAccessKey(%+v) succeeded", o)
		}
	}
	if keys, _ := s.Keys.ListAccessKeys(ctx, u.ID); len(keys) != 1 {
		t.Errorf("refused keys were stored: %+v", keys)
	}
}

// TestAppTokens: an app token authenticates with its scope; a wrong
// secret, another form, an expired or a deleted token is Unauthenticated
// at once; S3 never takes a token's ID for a key; tokens and keys are
// listed apart.
func TestAppTokens(t *testing.T) {
	ctx := context.Background()
	s, u, now := keyService(t)
	scope := meta.KeyScope{Bucket: "b", Prefix: "p/", Access: meta.AccessWrite}
	tok, err := s.Keys.CreateAppToken(ctx, u.ID, KeyOptions{Name: "app", Scope: scope, ExpiresAt: now.Add(time.Hour)})
	if err != nil || !IsAppToken(tok.Secret) {
		t.Fatalf("CreateAppToken = %+v, %v", tok, err)
	}
	p, err := s.Keys.AuthenticateToken(ctx, tok.Secret)
	if err != nil || p.UserID != u.ID || p.KeyID != tok.ID || p.Scope == nil {
		t.Fatalf("AuthenticateToken = %+v, %v", p, err)
	}
	if _, _, err := s.Keys.LookupKey(ctx, tok.ID); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("LookupKey of an app token's ID = %v, want NotFound", err)
	}
	last := tok.Secret[len(tok.Secret)-1]
	for _, bad := range []string{
		tok.Secret[:len(tok.Secret)-1] + string("01"[(last-'0'+1)%2]), // another secret
		tok.Secret + "0", AppTokenPrefix + tok.ID, AppTokenPrefix + "_" + tok.Secret[len(AppTokenPrefix)+len(tok.ID)+1:],
		strings.Replace(tok.Secret, "CT", "CF", 1),
	} {
		if _, err := s.Keys.AuthenticateToken(ctx, bad); !errcode.Is(err, errcode.Unauthenticated) {
			t.Errorf("AuthenticateToken(%q) = %v, want Unauthenticated", bad, err)
		}
	}
	key, err := s.Keys.CreateAccessKey(ctx, u.ID, KeyOptions{Name: "s3"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Keys.AuthenticateToken(ctx, AppTokenPrefix+key.ID+"_"+strings.Repeat("0", 64)); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("AuthenticateToken with an S3 key's ID = %v", err)
	}
	if toks, _ := s.Keys.ListAppTokens(ctx, u.ID); len(toks) != 1 || toks[0].ID != tok.ID || toks[0].Scope != scope {
		t.Errorf("ListAppTokens = %+v", toks)
	}
	if keys, _ := s.Keys.ListAccessKeys(ctx, u.ID); len(keys) != 1 || keys[0].ID != key.ID {
		t.Errorf("ListAccessKeys = %+v", keys)
	}
	if err := s.Keys.DeleteAccessKey(ctx, u.ID, tok.ID); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("DeleteAccessKey of an app token = %v", err)
	}

	*now = now.Add(time.Hour)
	_, err = s.Keys.AuthenticateToken(ctx, tok.Secret)
	if e := errcode.As(err); e.Code != errcode.Unauthenticated || e.Detail["s3_code"] != "ExpiredToken" {
		t.Errorf("AuthenticateToken of an expired token = %v", err)
	}
	*now = now.Add(-time.Minute)
	if err := s.Keys.DeleteAppToken(ctx, u.ID, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Keys.AuthenticateToken(ctx, tok.Secret); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("AuthenticateToken of a deleted token = %v", err)
	}
}

// keyService is an account service on a fresh SQLite store whose clock is
// *now (which the test moves), caching for an hour (an expiry must not
// wait for the cache), and a user of it.
func keyService(t *testing.T) (*Service, meta.User, *time.Time) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := ConfigFrom(config.Defaults())
	cfg.Params = testParams
	cfg.Cache.TTL = time.Hour
	s := NewService(StoresOf(st.Stores()), []byte("0123456789abcdef0123456789abcdef"), cfg)
	now := time.Now()
	s.core.now = func() time.Time { return now }
	u, _, err := s.Signups.Signup(ctx, "a@example.com", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	return s, u, &now
}

package auth_test

import (
	"context"
	"testing"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// TestServiceWithoutServerKey: a service made without the server key (the
// admin commands that need none: coffer user, invite) manages accounts,
// but refuses to seal an S3 secret (nothing is stored) or to open one, and
// the sessions it could sign are not accepted by a service with the key.
func TestServiceWithoutServerKey(t *testing.T) {
	ctx := context.Background()
	m := openSQLite(t)
	nokey := auth.NewService(m, nil, testConfig())
	u, _, err := nokey.Users.CreateUser(ctx, auth.NewUser{Email: "nokey@example.com", Password: pw})
	if err != nil {
		t.Fatalf("CreateUser without the server key: %v", err)
	}
	if _, err := nokey.Users.SetQuota(ctx, u.ID, 1<<20); err != nil {
		t.Errorf("SetQuota without the server key: %v", err)
	}
	if _, err := nokey.Keys.CreateAccessKey(ctx, u.ID, auth.KeyOptions{Name: "k"}); !errcode.Is(err, errcode.Internal) {
		t.Errorf("CreateAccessKey without the server key: %v, want an Internal error", err)
	}
	if keys, err := nokey.Keys.ListAccessKeys(ctx, u.ID); err != nil || len(keys) != 0 {
		t.Errorf("keys after the refused CreateAccessKey: %v, %v; want none", keys, err)
	}

	keyed := newService(m, nil)
	k, err := keyed.Keys.CreateAccessKey(ctx, u.ID, auth.KeyOptions{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := nokey.Keys.LookupKey(ctx, k.ID); err == nil {
		t.Error("a service without the server key opened an S3 secret")
	}
	sess, err := nokey.Sessions.Login(ctx, "nokey@example.com", pw, "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keyed.Sessions.Authenticate(ctx, sess.AccessToken); err == nil {
		t.Error("a node accepted a session signed without the server key")
	}
}

// testConfig is the default configuration (config.Defaults()) with cheap
// hashing.
func testConfig() auth.Config {
	c := auth.ConfigFrom(config.Defaults())
	c.Params = cheap
	return c
}

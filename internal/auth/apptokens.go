package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"

	"github.com/coffer-storage/coffer/internal/audit"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// App tokens
//
// An app token is a long-lived bearer token for the file API, bound to a
// user, with a scope and an expiry like an access key's: an app uploads
// and reads with it without the user's password or session. It is
// "coffer_" + its ID + "_" + a 256-bit secret; only the secret's SHA-256
// is stored (a meta.AccessKey row with Token set), so the token is shown
// once, when it is made. It shares the access keys' cache, per-user limit
// and invalidation: deleting it takes effect at once on every node, and
// its expiry is checked on every request.

// AppTokenPrefix starts every app token (an access token, a JWT, never
// does).
const AppTokenPrefix = "coffer_"

// IsAppToken reports whether a bearer token is an app token (rather than
// an access token).
func IsAppToken(token string) bool { return strings.HasPrefix(token, AppTokenPrefix) }

func newTokenID() string { return "CT" + newKeyID()[2:] }

// parseAppToken splits an app token into its ID and secret: "coffer_",
// an ID starting with "CT" and holding no "_", "_", 64 hex digits.
func parseAppToken(token string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(token, AppTokenPrefix)
	if !ok {
		return "", "", false
	}
	id, secret, ok = strings.Cut(rest, "_")
	if !ok || len(id) < 3 || len(id) > 64 || !strings.HasPrefix(id, "CT") || len(secret) != 64 {
		return "", "", false
	}
	if _, err := hex.DecodeString(secret); err != nil || strings.ToLower(secret) != secret {
		return "", "", false
	}
	return id, secret, true
}

// CreateAppToken makes an app token for userID, scoped and expiring as o
// says. The token is in the result's Secret and nowhere else in clear.
func (s *Keys) CreateAppToken(ctx context.Context, userID string, o KeyOptions) (k AccessKey, err error) {
	defer func() {
		s.audit(ctx, audit.Event{Action: audit.TokenCreate, Target: audit.Target{User: userID, AccessKey: k.ID}}, err)
	}()
	if err := s.checkNew(ctx, userID, o); err != nil {
		return AccessKey{}, err
	}
	id := newTokenID()
	b := make([]byte, 32)
	rand.Read(b)
	secret := hex.EncodeToString(b)
	sum := sha256.Sum256([]byte(secret))
	now := s.now().UTC()
	err = s.meta.CreateAccessKey(ctx, meta.AccessKey{
		ID: id, UserID: userID, SecretEnc: sum[:], Name: o.Name, Token: true, CreatedAt: now,
		Scope: o.Scope, ExpiresAt: o.ExpiresAt,
	})
	if err != nil {
		return AccessKey{}, err
	}
	return AccessKey{ID: id, Secret: AppTokenPrefix + id + "_" + secret, Name: o.Name, Scope: o.Scope,
		ExpiresAt: meta.StoredTime(o.ExpiresAt), CreatedAt: now}, nil
}

// ListAppTokens returns the user's app tokens (never the tokens
// themselves).
func (s *Keys) ListAppTokens(ctx context.Context, userID string) ([]AccessKey, error) {
	return s.listShown(ctx, userID, func(k meta.AccessKey) bool { return k.Token })
}

// DeleteAppToken revokes one of the user's app tokens; it stops working
// at once (on other nodes, when the store's announcement arrives; within
// the cache TTL at worst).
func (s *Keys) DeleteAppToken(ctx context.Context, userID, id string) error {
	err := s.deleteKey(ctx, userID, id, "app token", func(k meta.AccessKey) bool { return k.Token })
	s.audit(ctx, audit.Event{Action: audit.TokenDelete, Target: audit.Target{User: userID, AccessKey: id}}, err)
	return err
}

// AuthenticateToken returns the principal of an app token: its user,
// its ID and its scope. A malformed, unknown, revoked or wrong token, or
// one of a disabled or deleted user, is Unauthenticated; an expired one
// too (S3 code ExpiredToken).
func (s *Keys) AuthenticateToken(ctx context.Context, token string) (Principal, error) {
	bad := errcode.New(errcode.Unauthenticated, "invalid app token")
	id, secret, ok := parseAppToken(token)
	if !ok {
		return Principal{}, bad
	}
	k, err := s.use(ctx, id)
	switch {
	case errcode.Is(err, errcode.NotFound):
		return Principal{}, bad
	case err != nil:
		return Principal{}, err
	case !k.token:
		return Principal{}, bad
	}
	sum := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare(sum[:], []byte(k.secret)) != 1 {
		return Principal{}, bad
	}
	s.touch(id)
	p := Principal{UserID: k.userID, KeyID: id, Scope: k.scope, first: k.first}
	p.Verified(ctx)
	return p, nil
}

package auth

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/metacache"
)

const issuer = "coffer"

// Tokens issues and verifies access tokens (HS256 JWTs).
type Tokens struct {
	key []byte
	ttl time.Duration
	now func() time.Time
	// verified caches the claims of tokens verified already (by the whole
	// token string: a token differing in any byte is verified afresh).
	// Tokens never change, so nothing invalidates it; the expiry is
	// checked on every hit, and revocation is the account check's job
	// (Sessions.Authenticate), not the token's.
	verified *metacache.Map[verifiedToken]
}

// verifiedToken is what Verify learnt of a token.
type verifiedToken struct {
	subject         string
	issued, expires time.Time
}

// tokenLeeway is the clock skew Verify tolerates.
const tokenLeeway = 5 * time.Second

// DeriveKey derives a purpose-bound subkey from the server's master key.
func DeriveKey(master []byte, purpose string) []byte {
	k, err := hkdf.Key(sha256.New, master, nil, "coffer/"+purpose, 32)
	if err != nil {
		panic(err) // only for impossible lengths
	}
	return k
}

// NewTokens returns a Tokens signing with key tokens that live for ttl.
func NewTokens(key []byte, ttl time.Duration) *Tokens {
	return &Tokens{key: key, ttl: ttl, now: time.Now,
		verified: metacache.NewMap(nil, "", metacache.Options{MaxEntries: 100_000, MaxBytes: 32 << 20, TTL: time.Minute},
			func(token string, v verifiedToken) int { return 2*len(token) + len(v.subject) + 128 })}
}

// accessClaims are an access token's claims. iat is in whole seconds (the
// JWT NumericDate); iat_ns repeats it in nanoseconds, since a token must
// be told from a revocation made in the same second (a password change
// revokes the tokens issued before it and issues one at once).
type accessClaims struct {
	jwt.RegisteredClaims
	Type     string `json:"typ"`
	IssuedNs int64  `json:"iat_ns,omitempty"`
}

// claimKinds are the JSON types of the claims Coffer reads: '0' a number,
// '"' a string. jwt's NumericDate also accepts a string holding a number
// ("exp":"9999999999"), and encoding/json matches names without regard to
// case, so UnmarshalJSON checks every spelling.
var claimKinds = map[string]byte{"exp": '0', "nbf": '0', "iat": '0', "iat_ns": '0', "sub": '"', "iss": '"', "typ": '"'}

// UnmarshalJSON decodes an access token's claims strictly: exp, nbf, iat
// and iat_ns must be JSON numbers and sub, iss and typ strings (in any
// spelling encoding/json would match), and there must be no audience
// (Coffer issues none: a token with one was made for someone else).
// Missing claims are Verify's to refuse.
func (c *accessClaims) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	for name, v := range raw {
		lower := strings.ToLower(name)
		if lower == "aud" {
			return errors.New("token: an audience claim")
		}
		kind, ok := claimKinds[lower]
		if !ok {
			continue
		}
		switch {
		case len(v) == 0:
			return fmt.Errorf("token: claim %q is empty", name)
		case kind == '"' && v[0] != '"', kind == '0' && v[0] != '-' && (v[0] < '0' || v[0] > '9'):
			return fmt.Errorf("token: claim %q has the wrong type", name)
		}
	}
	type plain accessClaims
	return json.Unmarshal(b, (*plain)(c))
}

// Issue returns a signed access token for userID, issued now.
func (t *Tokens) Issue(userID string) (string, time.Duration, error) {
	return t.IssueAt(userID, t.now())
}

// IssueAt returns a signed access token for userID issued at now (which
// must be the current time, give or take a second).
func (t *Tokens) IssueAt(userID string, now time.Time) (string, time.Duration, error) {
	c := accessClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			Subject:   userID,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(t.ttl)),
		},
		Type:     "access",
		IssuedNs: now.UnixNano(),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.key)
	if err != nil {
		return "", 0, errcode.Wrap(errcode.Internal, err, "signing token")
	}
	return s, t.ttl, nil
}

// Verify checks an access token and returns its subject and when it was
// issued (to the nanosecond; to the second for tokens without iat_ns).
func (t *Tokens) Verify(token string) (subject string, issued time.Time, err error) {
	v, err := t.verified.Get(context.Background(), token, func(context.Context, string) (verifiedToken, error) {
		return t.verify(token)
	})
	if err != nil {
		return "", time.Time{}, err
	}
	if !t.now().Before(v.expires.Add(tokenLeeway)) {
		return "", time.Time{}, errcode.New(errcode.Unauthenticated, "invalid or expired access token")
	}
	return v.subject, v.issued, nil
}

// Stats returns the counters of the verified-token cache.
func (t *Tokens) Stats() metacache.Stats { return t.verified.Stats() }

// verify checks an access token's signature and claims.
func (t *Tokens) verify(token string) (verifiedToken, error) {
	var c accessClaims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.key, nil },
		jwt.WithValidMethods([]string{"HS256"}),
		jwt.WithIssuer(issuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(tokenLeeway),
		jwt.WithTimeFunc(t.now),
	)
	if err != nil {
		return verifiedToken{}, errcode.Wrap(errcode.Unauthenticated, err, "invalid or expired access token")
	}
	if c.Type != "access" || c.Subject == "" || c.IssuedAt == nil || c.ExpiresAt == nil {
		return verifiedToken{}, errcode.New(errcode.Unauthenticated, "invalid access token")
	}
	issued := c.IssuedAt.Time
	if ns := time.Unix(0, c.IssuedNs); c.IssuedNs != 0 && ns.Truncate(time.Second).Equal(issued.Truncate(time.Second)) {
		issued = ns
	}
	return verifiedToken{subject: c.Subject, issued: issued, expires: c.ExpiresAt.Time}, nil
}

// newOpaqueToken returns a random URL-safe token and its storage hash.
func newOpaqueToken() (token, hash string) {
	b := make([]byte, 32)
	rand.Read(b)
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token)
}

// HashToken is how opaque tokens are stored: hex SHA-256.
func HashToken(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

// NewID returns a random 128-bit identifier in hex.
func NewID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

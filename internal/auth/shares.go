package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// What share links need of accounts: whether their owner is still enabled
// (the cached state every authenticated request checks, so a disabled
// owner's links stop within the cache's bound, on every node), hashing and
// checking their passwords through the bounded pool, and signing the
// grants that unlocked password-protected links get.

// UserActive reports whether user id exists and is enabled, from the
// cached account state.
func (s *Service) UserActive(ctx context.Context, id string) (bool, error) {
	st, err := s.state(ctx, id)
	if err != nil {
		return false, err
	}
	return st.found && !st.disabled, nil
}

// HashPassword hashes a password (a share link's) with argon2id through
// the bounded pool; Unavailable when the pool is saturated.
func (s *Service) HashPassword(ctx context.Context, password string) (string, error) {
	return s.hasher.Hash(ctx, password)
}

// CheckSharePassword checks the password given to unlock share shareID
// against its PHC string encoded, through the bounded pool and under the
// failed-login limits (the share standing for the account, so guessing
// one link's password is throttled per link and client address like a
// login). Unauthenticated if it is wrong, RateLimited with a Retry-After
// when a limit is reached.
func (s *Service) CheckSharePassword(ctx context.Context, shareID, password, encoded, clientIP string) error {
	a, wait := s.logins.begin("share:"+shareID, clientIP)
	if wait > 0 {
		return errcode.Retry(errcode.RateLimited, wait, "too many wrong passwords; retry later")
	}
	ok, err := s.hasher.Verify(ctx, password, encoded)
	if err != nil {
		a.uncounted()
		return err
	}
	if !ok {
		a.failed()
		return errcode.New(errcode.Unauthenticated, "wrong password")
	}
	a.succeeded()
	return nil
}

// ShareGrant returns a grant for share shareID valid until expires: proof
// that its password was given. It is "<expiry unix seconds, base64>.<MAC>"
// with an HMAC-SHA256 over the share ID and the expiry, under a key
// derived from the server's master key (so every node accepts it).
func (s *Service) ShareGrant(shareID string, expires time.Time) string {
	var exp [8]byte
	binary.BigEndian.PutUint64(exp[:], uint64(expires.Unix()))
	e := base64.RawURLEncoding.EncodeToString(exp[:])
	return e + "." + base64.RawURLEncoding.EncodeToString(s.grantMAC(shareID, e))
}

// CheckShareGrant reports whether grant is a grant of shareID that has not
// expired at now.
func (s *Service) CheckShareGrant(shareID, grant string, now time.Time) bool {
	e, mac, ok := strings.Cut(grant, ".")
	if !ok {
		return false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(e)
	if err != nil || len(raw) != 8 {
		return false
	}
	got, err := base64.RawURLEncoding.Strict().DecodeString(mac)
	if err != nil || !hmac.Equal(got, s.grantMAC(shareID, e)) {
		return false
	}
	return now.Unix() < int64(binary.BigEndian.Uint64(raw))
}

func (s *Service) grantMAC(shareID, exp string) []byte {
	m := hmac.New(sha256.New, s.shareKey)
	m.Write([]byte("share-grant\x00" + shareID + "\x00" + exp))
	return m.Sum(nil)
}

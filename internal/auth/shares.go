package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/audit"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// Shares is what share links need of accounts: hashing and checking
// their passwords through the bounded pool, and signing the grants that
// unlocked password-protected links get. (Whether a link's owner is still
// enabled is Users.UserActive.)
type Shares struct {
	*core
	// key signs the grants of unlocked password-protected share links.
	key []byte
}

// HashPassword hashes a password (a share link's) with argon2id through
// the bounded pool; Unavailable when the pool is saturated.
func (s *Shares) HashPassword(ctx context.Context, password string) (string, error) {
	return s.hasher.Hash(ctx, password)
}

// CheckSharePassword checks the password given to unlock share shareID
// against its PHC string encoded, through the bounded pool and under the
// failed-login limits (the share standing for the account, so guessing
// one link's password is throttled per link and client address like a
// login). Unauthenticated if it is wrong, RateLimited with a Retry-After
// when a limit is reached.
func (s *Shares) CheckSharePassword(ctx context.Context, shareID, password, encoded, clientIP string) (err error) {
	defer func() {
		if s.cfg.Audit == nil {
			return
		}
		e := audit.Event{Action: audit.ShareUnlock, Actor: audit.Anonymous(""), Target: audit.Target{Share: shareID}}.Result(err)
		if errcode.Is(err, errcode.Unauthenticated) {
			e.Outcome, e.Reason = audit.Failure, audit.ReasonWrongSecret
		}
		s.cfg.Audit.Log(ctx, e)
	}()
	a, wait := s.logins.begin(ctx, "share:"+shareID, clientIP)
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
func (s *Shares) ShareGrant(shareID string, expires time.Time) string {
	var exp [8]byte
	binary.BigEndian.PutUint64(exp[:], uint64(expires.Unix()))
	e := base64.RawURLEncoding.EncodeToString(exp[:])
	return e + "." + base64.RawURLEncoding.EncodeToString(s.grantMAC(shareID, e))
}

// CheckShareGrant reports whether grant is a grant of shareID that has not
// expired at now.
func (s *Shares) CheckShareGrant(shareID, grant string, now time.Time) bool {
	// Go's base64 decoders skip '\r' and '\n' even in Strict mode, so
	// a grant with a line break would decode to a valid one: only the
	// canonical spelling (base64url and one dot) is accepted.
	if strings.IndexFunc(grant, notGrantChar) >= 0 {
		return false
	}
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

func notGrantChar(r rune) bool {
	return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
}

func (s *Shares) grantMAC(shareID, exp string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("share-grant\x00" + shareID + "\x00" + exp))
	return m.Sum(nil)
}

package meta

import (
	"context"
	"time"
)

// KMSKeyGrant lets a user have objects encrypted under an SSE-KMS key
// other than the key provider's default (which everyone may use): the
// allow list administrators keep (coffer kms allow, the admin API).
type KMSKeyGrant struct {
	// Key is the key's name as clients name it in SSE-KMS requests
	// (x-amz-server-side-encryption-aws-kms-key-id, KMSMasterKeyID).
	Key       string
	UserID    string
	CreatedAt time.Time
}

// KeyGrants keeps the SSE-KMS key allow list.
type KeyGrants interface {
	// AllowKMSKey records g (a zero CreatedAt is set to now); allowing
	// again what is allowed changes nothing. NotFound if there is no such
	// user; InvalidArgument unless ValidKMSKeyName(g.Key). The grant goes
	// with its user.
	AllowKMSKey(ctx context.Context, g KMSKeyGrant) error
	// DisallowKMSKey withdraws userID's grant of key; NotFound if there
	// is none.
	DisallowKMSKey(ctx context.Context, key, userID string) error
	// KMSKeyAllowed reports whether userID has a grant of key.
	KMSKeyAllowed(ctx context.Context, key, userID string) (bool, error)
	// ListKMSKeyGrants returns every grant, by key, then user ID.
	ListKMSKeyGrants(ctx context.Context) ([]KMSKeyGrant, error)
}

// MaxKMSKeyName bounds a key name (an ARN included).
const MaxKMSKeyName = 2048

// ValidKMSKeyName reports whether name can name an SSE-KMS key: 1 to
// MaxKMSKeyName bytes of printable UTF-8 without spaces.
func ValidKMSKeyName(name string) bool {
	if name == "" || len(name) > MaxKMSKeyName {
		return false
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f || r == '\uFFFD' {
			return false
		}
	}
	return true
}

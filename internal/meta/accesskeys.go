package meta

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// AccessKeys keeps the users' S3 credentials and file-API app tokens
// (AccessKey.Token), each with its scope and expiry.
type AccessKeys interface {
	// CreateAccessKey stores k. NotFound if the user does not exist;
	// AlreadyExists if the ID is taken.
	CreateAccessKey(ctx context.Context, k AccessKey) error
	// GetAccessKey returns the key with id; NotFound if none.
	GetAccessKey(ctx context.Context, id string) (AccessKey, error)
	// ListAccessKeys returns the user's keys (internal ones included),
	// oldest first.
	ListAccessKeys(ctx context.Context, userID string) ([]AccessKey, error)
	// DeleteAccessKey deletes the user's key id; NotFound if the user has
	// no such key (another user's key is NotFound too).
	DeleteAccessKey(ctx context.Context, userID, id string) error
	// TouchAccessKey sets the key's LastUsed to t (NotFound if missing).
	TouchAccessKey(ctx context.Context, id string, t time.Time) error
}

// The accesses of a KeyScope's simple form.
const (
	AccessRead      = "read"       // read and list
	AccessWrite     = "write"      // write only: no reads, no deletes (docs/keys.md)
	AccessReadWrite = "read-write" // both
)

// MaxKeyPolicy is the largest inline policy of a key: 20 KiB, as a bucket
// policy.
const MaxKeyPolicy = 20480

// KeyScope narrows what an access key or app token may do; it never
// widens what its user may do. It is either the simple form (Bucket,
// Prefix, Access) or an inline IAM policy (Policy, the raw document),
// never both. The zero KeyScope is unscoped.
type KeyScope struct {
	// Bucket limits the key to one bucket ("" with an Access: every
	// bucket); Prefix, within Bucket, to the keys that start with it.
	Bucket string `json:"bucket,omitempty"`
	Prefix string `json:"prefix,omitempty"`
	// Access is AccessRead, AccessWrite or AccessReadWrite; "" only for an
	// unscoped key or with Policy.
	Access string `json:"access,omitempty"`
	// Policy is an inline IAM policy document, stored as given.
	Policy string `json:"policy,omitempty"`
}

// Scoped reports whether s narrows anything.
func (s KeyScope) Scoped() bool { return s != KeyScope{} }

// CheckKeyScope checks a key's scope: the simple form with a known
// Access (Prefix only with Bucket), or a Policy alone of at most
// MaxKeyPolicy bytes. It does not parse the policy (the caller does, with
// the policy language).
func CheckKeyScope(s KeyScope) error {
	switch {
	case !s.Scoped():
		return nil
	case s.Policy != "":
		if s.Bucket != "" || s.Prefix != "" || s.Access != "" {
			return errcode.New(errcode.InvalidArgument, "a key's scope is either a policy or a bucket, prefix and access, not both")
		}
		if len(s.Policy) > MaxKeyPolicy {
			return errcode.New(errcode.TooLarge, "a key's policy is at most %d bytes", MaxKeyPolicy)
		}
		return nil
	case s.Prefix != "" && s.Bucket == "":
		return errcode.New(errcode.InvalidArgument, "a key's prefix needs its bucket")
	}
	switch s.Access {
	case AccessRead, AccessWrite, AccessReadWrite:
	default:
		return errcode.New(errcode.InvalidArgument, "a key's access must be %q, %q or %q", AccessRead, AccessWrite, AccessReadWrite)
	}
	return nil
}

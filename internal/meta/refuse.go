package meta

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// The refusals every backend makes in the same words, and the decisions
// behind the ones that need one.

// ErrNoUser is the error of a user id that is not stored.
func ErrNoUser(id string) error { return errcode.New(errcode.NotFound, "user %q not found", id) }

// ErrNoUserEmail is GetUserByEmail's error.
func ErrNoUserEmail(email string) error {
	return errcode.New(errcode.NotFound, "no user with email %q", email)
}

// ErrNoBucket is the error of a bucket that does not exist.
func ErrNoBucket(name string) error {
	return errcode.New(errcode.NotFound, "bucket %q not found", name)
}

// ErrBucketNotEmpty is DeleteBucket's error for a bucket holding objects.
func ErrBucketNotEmpty(name string) error {
	return errcode.New(errcode.Conflict, "bucket %q is not empty", name)
}

// ErrNotAGateway is PutGatewayBucket's error when a native bucket has the
// name.
func ErrNotAGateway(name string) error {
	return &errcode.Error{Code: errcode.Conflict, Message: fmt.Sprintf("bucket %q exists and is not a gateway bucket", name),
		Detail: map[string]any{"reason": "not_a_gateway"}}
}

// ErrNoObject is the error of a key that holds no object.
func ErrNoObject(bucket, key string) error {
	return errcode.New(errcode.NotFound, "object %q not found in bucket %q", key, bucket)
}

// ErrNoUpload is the error of an upload that is not in progress.
func ErrNoUpload(id string) error { return errcode.New(errcode.NotFound, "upload %q not found", id) }

// ErrNoAccessKey is the error of an access key that is not stored (or is
// another user's).
func ErrNoAccessKey(id string) error {
	return errcode.New(errcode.NotFound, "access key %q not found", id)
}

// ErrNoInvite is the error of an invite id or hash that is not stored.
func ErrNoInvite() error { return errcode.New(errcode.NotFound, "no such invite") }

// ErrNoShare is the error of a share id or hash that is not stored.
func ErrNoShare() error { return errcode.New(errcode.NotFound, "no such share") }

// ErrNoTus is the error of an upload without tus state.
func ErrNoTus(id string) error { return errcode.New(errcode.NotFound, "no tus upload %q", id) }

// ErrTusLengthDeclared is SetTusLength's error for a length set already.
func ErrTusLengthDeclared(id string) error {
	return errcode.New(errcode.InvalidArgument, "the length of tus upload %q is declared already", id)
}

// ErrNoUserLimits is GetUserLimits' error when there is no override.
func ErrNoUserLimits(id string) error {
	return errcode.New(errcode.NotFound, "no rate limit override for user %q", id)
}

// ErrNoJob is GetJob's error.
func ErrNoJob(name string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: fmt.Sprintf("no job %q", name), Detail: map[string]any{"resource": "job"}}
}

// ErrNoKMSKeyGrant is DisallowKMSKey's error when there is no grant.
func ErrNoKMSKeyGrant(key, userID string) error {
	return errcode.New(errcode.NotFound, "user %q has no grant of KMS key %q", userID, key)
}

// ErrNoRefreshToken is RevokeRefreshFamily's error for an unknown hash.
func ErrNoRefreshToken() error { return errcode.New(errcode.NotFound, "unknown refresh token") }

// CheckRotation decides RotateRefreshToken on the old token as stored
// (found false: there is none) and its user's Disabled and SessionsAfter,
// in the contract's order. revokeFamily says the token was used already:
// the caller revokes its family and commits that, though the rotation
// fails with err.
func CheckRotation(old RefreshToken, found, disabled bool, sessionsAfter, now time.Time) (revokeFamily bool, err error) {
	switch {
	case !found:
		return false, errcode.New(errcode.Unauthenticated, "unknown refresh token")
	case old.Used:
		// Reuse: someone holds a stale copy.
		return true, errcode.New(errcode.Unauthenticated, "refresh token reused; the session is revoked")
	case old.Revoked:
		return false, errcode.New(errcode.Unauthenticated, "refresh token revoked")
	case !now.Before(old.ExpiresAt):
		return false, errcode.New(errcode.Unauthenticated, "refresh token expired")
	case disabled:
		return false, errcode.New(errcode.Unauthenticated, "account disabled")
	case old.CreatedAt.Before(sessionsAfter):
		return false, errcode.New(errcode.Unauthenticated, "refresh token revoked")
	}
	return false, nil
}

// CheckNextRefreshToken checks the next token of a RotateRefreshToken
// before its transaction.
func CheckNextRefreshToken(next RefreshToken) error {
	if next.Hash == "" {
		return errcode.New(errcode.InvalidArgument, "the next refresh token needs a hash")
	}
	return nil
}

// NextRefreshToken is the token a rotation of old stores: next, in old's
// user and family, neither used nor revoked, CreatedAt now if zero, its
// times as stored.
func NextRefreshToken(old, next RefreshToken, now time.Time) RefreshToken {
	next.UserID, next.Family = old.UserID, old.Family
	next.Used, next.Revoked = false, false
	next.CreatedAt = StoredTime(OrNow(next.CreatedAt, now))
	next.ExpiresAt = StoredTime(next.ExpiresAt)
	return next
}

// CheckDeleteUser decides DeleteUser once the user's data is counted:
// a user owning locked object versions (locked: under a legal hold or
// retained after the store's now, lock.go) is refused, purge or not, with
// Conflict (Detail "reason" = "objects_locked"): object lock binds
// administrators too. Without purge, a user owning objects or uploads in
// progress is refused with Conflict (see Store.DeleteUser); buckets are
// the names of (at most 10 of) the buckets holding them.
func CheckDeleteUser(purge bool, objects, uploads, locked int64, buckets []string) error {
	if buckets == nil {
		buckets = []string{}
	}
	if locked > 0 {
		return &errcode.Error{
			Code: errcode.Conflict,
			Message: "the account owns " + plural(locked, "locked object version") + " (in buckets " + strings.Join(buckets, ", ") +
				"), under retention or a legal hold: object lock forbids deleting them, by anyone, until every retention ends and every legal hold is removed",
			Detail: map[string]any{"reason": "objects_locked", "locked": locked, "buckets": buckets},
		}
	}
	if purge || objects+uploads == 0 {
		return nil
	}
	what := plural(objects, "object")
	if uploads > 0 {
		what += " and " + plural(uploads, "upload") + " in progress"
	}
	return &errcode.Error{
		Code: errcode.Conflict,
		Message: "the account still owns " + what + " (in buckets " + strings.Join(buckets, ", ") +
			"); delete them first, or delete the account with purge",
		Detail: map[string]any{"reason": "user_owns_data", "objects": objects, "uploads": uploads, "buckets": buckets},
	}
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatInt(n, 10) + " " + what + "s"
}

// ShareRefusal is the error of a use of share id that the store's
// conditional update did not take: ErrShareUnavailable with the share's
// state at now, or get's error (NotFound if there is no such share). get
// is the store's GetShare.
func ShareRefusal(ctx context.Context, get func(ctx context.Context, id string) (Share, error), id string, now time.Time) error {
	sh, err := get(ctx, id)
	if err != nil {
		return err
	}
	return ErrShareUnavailable(sh.State(now))
}

var (
	minStoredTime = time.Unix(0, math.MinInt64)
	maxStoredTime = time.Unix(0, math.MaxInt64)
)

// StoredTime is t as every store keeps it: in UTC, to the nanosecond,
// clamped to what an int64 of Unix nanoseconds holds; the zero time, and
// the Unix epoch, which is stored as 0, are the zero time.
func StoredTime(t time.Time) time.Time {
	switch {
	case t.IsZero():
		return time.Time{}
	case t.Before(minStoredTime):
		t = minStoredTime
	case t.After(maxStoredTime):
		t = maxStoredTime
	}
	n := t.UnixNano()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

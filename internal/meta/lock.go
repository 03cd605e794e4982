package meta

import (
	"fmt"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Object lock (S3's WORM, issue 20)
//
// A bucket is created with object lock enabled (Bucket.ObjectLock.Enabled)
// or never has it: such a bucket is versioning Enabled from its creation
// and never suspended. It may carry a default retention, which every new
// version written into it gets (retain until the write's time plus the
// default's period) unless the write sets its own.
//
// A version under retention (Retention.Until in the future) or under a
// legal hold cannot be removed (DeleteVersion, the null version's
// replacement): ErrLocked, decided inside the removal's transaction
// (CheckUnlocked). GOVERNANCE retention yields to Cond.BypassGovernance;
// COMPLIANCE retention and legal holds yield to nobody, administrators
// included. Retention may always be lengthened; GOVERNANCE retention may be
// shortened, removed or made COMPLIANCE only with the bypass; COMPLIANCE retention never
// (CheckRetentionChange). A delete without a version ID only adds a delete
// marker, and is always allowed. The janitor frees only the blobs of
// removed versions, so it never frees a locked one.

// RetentionMode is S3's object lock retention mode.
type RetentionMode string

// The retention modes.
const (
	Governance RetentionMode = "GOVERNANCE" // shortened or removed with the bypass, by its holders
	Compliance RetentionMode = "COMPLIANCE" // never shortened or removed, by anyone
)

// Valid reports whether m is a retention mode.
func (m RetentionMode) Valid() bool { return m == Governance || m == Compliance }

// Retention is a version's retention: none when Mode is "".
type Retention struct {
	Mode  RetentionMode
	Until time.Time // retained strictly before it
}

// Active reports whether r holds at now.
func (r Retention) Active(now time.Time) bool { return r.Mode != "" && now.Before(r.Until) }

// DefaultRetention is a bucket's default retention: none when Mode is "";
// else exactly one of Days and Years is positive.
type DefaultRetention struct {
	Mode        RetentionMode
	Days, Years int
}

// ObjectLock is a bucket's object lock state.
type ObjectLock struct {
	Enabled bool // set at creation; never cleared
	Default DefaultRetention
}

// The bounds of a default retention period (S3 accepts up to 100 years).
const (
	MaxRetentionDays  = 36500
	MaxRetentionYears = 100
)

// CheckDefaultRetention checks a bucket's default retention (InvalidArgument).
func CheckDefaultRetention(d DefaultRetention) error {
	switch {
	case d.Mode == "" && d.Days == 0 && d.Years == 0:
		return nil
	case !d.Mode.Valid():
		return errcode.New(errcode.InvalidArgument, "the default retention mode must be %q or %q, not %q", Governance, Compliance, d.Mode)
	case d.Days != 0 && d.Years != 0:
		return errcode.New(errcode.InvalidArgument, "a default retention has Days or Years, not both")
	case d.Days < 0 || d.Years < 0 || d.Days == 0 && d.Years == 0:
		return errcode.New(errcode.InvalidArgument, "Default retention period must be a positive integer value.")
	case d.Days > MaxRetentionDays || d.Years > MaxRetentionYears:
		return errcode.New(errcode.InvalidArgument, "Default retention period too large.")
	}
	return nil
}

// Until is when a version written at now under d is retained until (the
// zero time if d is none).
func (d DefaultRetention) Until(now time.Time) time.Time {
	switch {
	case d.Mode == "":
		return time.Time{}
	case d.Years > 0:
		return now.AddDate(d.Years, 0, 0)
	}
	return now.AddDate(0, 0, d.Days)
}

// CheckRetention checks a retention as a write sets it: none, or a mode
// and a date (InvalidArgument). A date in the past is refused where S3
// refuses it, by the callers that know the request's time.
func CheckRetention(r Retention) error {
	switch {
	case r.Mode == "" && r.Until.IsZero():
		return nil
	case !r.Mode.Valid():
		return errcode.New(errcode.InvalidArgument, "the retention mode must be %q or %q, not %q", Governance, Compliance, r.Mode)
	case r.Until.IsZero():
		return errcode.New(errcode.InvalidArgument, "a retention needs a retain-until date")
	}
	return nil
}

// ErrLocked is the refusal to remove a locked version, or to shorten its
// retention: PermissionDenied (S3's AccessDenied) with Detail["reason"] =
// "object_locked".
func ErrLocked(format string, args ...any) error {
	return &errcode.Error{Code: errcode.PermissionDenied, Message: fmt.Sprintf(format, args...),
		Detail: map[string]any{"reason": "object_locked"}}
}

// IsLocked reports whether err is ErrLocked.
func IsLocked(err error) bool {
	e := errcode.As(err)
	return e != nil && e.Code == errcode.PermissionDenied && e.Detail["reason"] == "object_locked"
}

// CheckUnlocked decides whether version o may be removed at now: not
// under a legal hold, and not under retention unless it is GOVERNANCE and
// bypass is set. ErrLocked otherwise.
func CheckUnlocked(o Object, bypass bool, now time.Time) error {
	switch {
	case o.LegalHold:
		return ErrLocked("version %q of %q is under a legal hold", o.VersionID, o.Key)
	case !o.Retention.Active(now):
		return nil
	case o.Retention.Mode == Compliance:
		return ErrLocked("version %q of %q is under COMPLIANCE retention until %s", o.VersionID, o.Key, o.Retention.Until.Format(time.RFC3339))
	case !bypass:
		return ErrLocked("version %q of %q is under GOVERNANCE retention until %s", o.VersionID, o.Key, o.Retention.Until.Format(time.RFC3339))
	}
	return nil
}

// CheckRetentionChange decides SetObjectRetention on version o at now:
// next must be valid (CheckRetention); lengthening o's retention (the
// same mode, a date not earlier) is always allowed, as is anything once
// it has expired; shortening, removing or changing the mode of
// GOVERNANCE retention (to COMPLIANCE too, as S3 does) needs bypass
// (ErrLocked otherwise); COMPLIANCE retention is never shortened, removed
// or weakened to GOVERNANCE.
func CheckRetentionChange(o Object, next Retention, bypass bool, now time.Time) error {
	if err := CheckRetention(next); err != nil {
		return err
	}
	cur := o.Retention
	if !cur.Active(now) {
		return nil
	}
	lengthens := next.Mode == cur.Mode && !next.Until.Before(cur.Until)
	switch {
	case lengthens:
		return nil
	case cur.Mode == Compliance:
		return ErrLocked("version %q of %q is under COMPLIANCE retention until %s: it cannot be shortened or removed", o.VersionID, o.Key, cur.Until.Format(time.RFC3339))
	case !bypass:
		return ErrLocked("version %q of %q is under GOVERNANCE retention until %s: shortening or removing it needs the bypass", o.VersionID, o.Key, cur.Until.Format(time.RFC3339))
	}
	return nil
}

// ErrLockNotEnabled is the refusal of an object lock operation (or of a
// write carrying a retention or a legal hold) on a bucket without object
// lock: InvalidArgument with Detail["reason"] = "object_lock_disabled"
// (S3's InvalidRequest, "Bucket is missing Object Lock Configuration").
func ErrLockNotEnabled(bucket string) error {
	return &errcode.Error{Code: errcode.InvalidArgument, Message: "Bucket is missing Object Lock Configuration",
		Detail: map[string]any{"reason": "object_lock_disabled", "bucket": bucket}}
}

// IsLockNotEnabled reports whether err is ErrLockNotEnabled.
func IsLockNotEnabled(err error) bool {
	e := errcode.As(err)
	return e != nil && e.Code == errcode.InvalidArgument && e.Detail["reason"] == "object_lock_disabled"
}

// ErrLockedBucketVersioning is SetBucketVersioning's refusal to suspend
// a bucket with object lock: Conflict with Detail["reason"] =
// "object_lock_enabled" (S3's InvalidBucketState).
func ErrLockedBucketVersioning(bucket string) error {
	return &errcode.Error{Code: errcode.Conflict, Message: fmt.Sprintf("An Object Lock configuration is present on bucket %q, so the versioning state cannot be changed.", bucket),
		Detail: map[string]any{"reason": "object_lock_enabled"}}
}

// LockVersion completes the lock state of o, a new version of a key in a
// bucket whose lock state is l, written at now: a version that sets no
// retention gets the bucket's default; a version with a retention or a
// legal hold in a bucket without object lock is ErrLockNotEnabled. Delete
// markers are never locked.
func LockVersion(o Object, l ObjectLock, now time.Time) (Object, error) {
	if o.DeleteMarker {
		o.Retention, o.LegalHold = Retention{}, false
		return o, nil
	}
	if !l.Enabled {
		if o.Retention.Mode != "" || o.LegalHold {
			return o, ErrLockNotEnabled(o.Bucket)
		}
		return o, nil
	}
	if o.Retention.Mode == "" && l.Default.Mode != "" {
		o.Retention = Retention{Mode: l.Default.Mode, Until: StoredTime(l.Default.Until(now))}
	}
	return o, nil
}

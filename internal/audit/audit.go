// Package audit owns Coffer's audit trail: one Event per security-relevant
// action (sign-ins, signups, password changes, keys and app tokens, share
// links, administration, bucket documents, deletes, governance bypass,
// key rotation), written as one JSON line to a size-rotated file, posted
// in batches to a webhook, or both, and kept in a ring of the most recent
// events for the admin API (docs/audit.md).
//
// The services call Logger.Log where an action happens; Log never blocks
// and never fails the request: an event that finds the queue full is
// dropped and counted (Stats, coffer_audit_dropped_total). A nil *Logger
// is the audit log turned off, and every method is a no-op on it.
//
// # No secrets
//
// An Event has no free-form field a request could be dumped into: the
// action, outcome, actor type and reason are closed sets (the reason of a
// failure is its error code's name, never its message), and the other
// fields name things by identifier (user ID or e-mail, bucket, object
// key, version ID, share link ID, access key ID). Passwords, tokens,
// refresh tokens, share-link tokens and passwords, access key secrets,
// signatures and Authorization headers have no field to go into.
//
// This package imports only errcode: object and auth (which may not
// import httpx) call it, and the server hands the Logger the function that
// reads a request's ID, client address and user from its context (Origin).
package audit

import (
	"context"
	"net/netip"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Action names what happened: a closed set, "area.verb".
type Action string

// The actions. docs/audit.md lists them with where each is emitted.
const (
	SignIn           Action = "auth.signin"          // a password login (success, failure, throttled)
	Signup           Action = "auth.signup"          // an account created through signup (self-service or by an admin)
	PasswordChange   Action = "auth.password_change" // a user changed their own password
	AccountDelete    Action = "auth.account_delete"  // a user deleted their own account
	KeyCreate        Action = "key.create"           // an S3 access key created
	KeyDelete        Action = "key.delete"           // an S3 access key deleted (by its owner or an admin)
	KeyFirstUse      Action = "key.first_use"        // an access key's first verified use
	TokenCreate      Action = "token.create"         // an app token created
	TokenDelete      Action = "token.delete"         // an app token deleted
	TokenFirstUse    Action = "token.first_use"      // an app token's first use
	ShareCreate      Action = "share.create"         // a share link created
	ShareUpdate      Action = "share.update"         // a share link's expiry changed
	ShareRevoke      Action = "share.revoke"         // a share link revoked
	ShareOpen        Action = "share.open"           // a share link opened (its info, a download or a listing)
	ShareUnlock      Action = "share.unlock"         // a share link's password tried (success, failure, throttled)
	ShareExhausted   Action = "share.exhausted"      // a share link refused: its download limit is reached
	UserCreate       Action = "admin.user_create"    // an administrator created an account
	UserDelete       Action = "admin.user_delete"    // an administrator deleted an account
	UserDisable      Action = "admin.user_disable"
	UserEnable       Action = "admin.user_enable"
	UserQuota        Action = "admin.user_quota"
	UserRole         Action = "admin.user_role"     // the administrator role granted or revoked
	UserPassword     Action = "admin.user_password" // an administrator set an account's password
	UserLimits       Action = "admin.user_limits"
	InviteCreate     Action = "admin.invite_create"
	InviteRevoke     Action = "admin.invite_revoke"
	KMSKeyAllow      Action = "admin.kms_key_allow"
	KMSKeyDisallow   Action = "admin.kms_key_disallow"
	EncryptionJob    Action = "admin.encryption_job" // an administrator started a re-wrap or encrypt job
	KeyRotate        Action = "encryption.key_rotate"
	BucketCreate     Action = "bucket.create"
	BucketDelete     Action = "bucket.delete"
	BucketPolicy     Action = "bucket.policy" // put (reason "") or deleted (Detail "deleted")
	BucketACL        Action = "bucket.acl"
	BucketOwnership  Action = "bucket.ownership"
	PublicAccess     Action = "bucket.public_access_block"
	BucketLock       Action = "bucket.object_lock"
	BucketLifecycle  Action = "bucket.lifecycle"
	BucketCORS       Action = "bucket.cors"
	BucketVersions   Action = "bucket.versioning"
	BucketVisible    Action = "bucket.visibility"
	BucketEncrypt    Action = "bucket.encryption"
	ObjectACL        Action = "object.acl"
	ObjectRetention  Action = "object.retention"
	ObjectHold       Action = "object.legal_hold"
	ObjectDelete     Action = "object.delete"         // a key deleted (or a delete marker written)
	VersionDelete    Action = "object.version_delete" // one version removed for good
	GovernanceBypass Action = "object.governance_bypass"
)

// Outcome is how an action ended.
type Outcome string

const (
	Success   Outcome = "success"
	Failure   Outcome = "failure"   // refused or failed for another reason (the Reason says which)
	Denied    Outcome = "denied"    // not authenticated or not allowed
	Throttled Outcome = "throttled" // refused by a rate limit or login throttle
)

// Outcomes lists every outcome (the metric's label values).
var Outcomes = []Outcome{Success, Failure, Denied, Throttled}

// ActorType is who acted.
type ActorType string

const (
	ActorUser      ActorType = "user"      // a signed-in user (a session)
	ActorKey       ActorType = "key"       // an S3 access key or an app token
	ActorAnonymous ActorType = "anonymous" // no credentials (a share link's visitor, a login attempt)
	ActorAdmin     ActorType = "admin"     // an administrator acting through the admin API
	ActorSystem    ActorType = "system"    // the server itself (lifecycle, jobs) or the command line
)

// Actor is who acted: ID is the user ID (user, admin) or the access key or
// app token ID (key); User is a key's owner; Name an e-mail address when
// the event knows it (a login's account).
type Actor struct {
	Type ActorType `json:"type"`
	ID   string    `json:"id,omitempty"`
	User string    `json:"user,omitempty"`
	Name string    `json:"name,omitempty"`
}

// Target is what the action was on; only the fields that apply are set.
type Target struct {
	Bucket    string `json:"bucket,omitempty"`
	Key       string `json:"key,omitempty"`
	VersionID string `json:"version_id,omitempty"`
	Share     string `json:"share,omitempty"`      // a share link's ID (never its token)
	User      string `json:"user,omitempty"`       // an account's ID
	Email     string `json:"email,omitempty"`      // an account's e-mail address
	AccessKey string `json:"access_key,omitempty"` // an access key's or app token's ID (never its secret)
	KMSKey    string `json:"kms_key,omitempty"`    // a KMS key's name
	Invite    string `json:"invite,omitempty"`     // an invite's ID (never its code)
	Job       string `json:"job,omitempty"`        // an encryption job's ID
}

// Reason says why an action failed or what kind it was: the name of an
// error code (ReasonOf) or one of the constants; never a message.
type Reason string

// Reasons that are not error codes.
const (
	ReasonNone         Reason = ""
	ReasonWrongSecret  Reason = "wrong_credentials" // a wrong password (login, share link)
	ReasonDeleted      Reason = "deleted"           // a bucket document removed rather than set
	ReasonDeleteMarker Reason = "delete_marker"     // a delete in a versioned bucket wrote a marker
	ReasonBypass       Reason = "bypass_governance" // an action that used s3:BypassGovernanceRetention
	ReasonLimit        Reason = "download_limit"    // a share link's downloads are used up
	ReasonInvite       Reason = "invite"            // a signup with an invite code
	ReasonSelf         Reason = "self_service"      // a signup without one
	ReasonRewrap       Reason = "rewrap"
	ReasonEncrypt      Reason = "encrypt"
)

// ReasonOf is the reason of a failed action: its error code's name
// ("permission_denied", "rate_limited", ...), never the error's message.
func ReasonOf(err error) Reason {
	if err == nil {
		return ReasonNone
	}
	return Reason(errcode.Of(err).String())
}

// OutcomeOf is the outcome of an action that ended with err.
func OutcomeOf(err error) Outcome {
	switch errcode.Of(err) {
	case errcode.Unknown:
		if err == nil {
			return Success
		}
		return Failure
	case errcode.Unauthenticated, errcode.PermissionDenied:
		return Denied
	case errcode.RateLimited:
		return Throttled
	}
	return Failure
}

// Event is one audit record, written as one JSON line.
type Event struct {
	Time      time.Time `json:"time"`
	Action    Action    `json:"action"`
	Actor     Actor     `json:"actor"`
	Client    string    `json:"client,omitempty"`     // the client's address (behind --trusted-proxies: the forwarded one)
	RequestID string    `json:"request_id,omitempty"` // the request's X-Request-Id
	Target    Target    `json:"target"`
	Outcome   Outcome   `json:"outcome"`
	Reason    Reason    `json:"reason,omitempty"`
}

// Origin is what the server knows of the request an event happens in:
// its ID, client address and authenticated user and key (empty outside a
// request).
type Origin struct {
	RequestID string
	Client    netip.Addr
	UserID    string
	KeyID     string
	Admin     bool
}

// Result sets e's outcome and reason from err (nil: success) and returns e.
func (e Event) Result(err error) Event {
	e.Outcome = OutcomeOf(err)
	if err != nil {
		e.Reason = ReasonOf(err)
	}
	return e
}

// User is the actor of a signed-in user's session.
func User(id string) Actor { return Actor{Type: ActorUser, ID: id} }

// Key is the actor of a request signed with access key (or app token) id
// of user.
func Key(id, user string) Actor { return Actor{Type: ActorKey, ID: id, User: user} }

// System is the server acting on its own.
func System() Actor { return Actor{Type: ActorSystem} }

// Anonymous is a caller without credentials; name, if known, is the
// account it tried (a login's e-mail address).
func Anonymous(name string) Actor { return Actor{Type: ActorAnonymous, Name: name} }

// ctxKey carries an Actor override (WithActor).
type ctxKey struct{}

// WithActor returns ctx in which events whose Actor is unset act as a:
// for work done on behalf of someone the request's Origin does not name
// (the command line, a background job).
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, ctxKey{}, a)
}

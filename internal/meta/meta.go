// Package meta defines Coffer's metadata store: users, sessions, buckets,
// objects and the queue of blobs to reclaim. Two backends implement it
// (sqlite for the embedded shape, postgres for scale-out) and both must pass
// the conformance suite in package metatest.
//
// The store is offered by role, each a small interface in a file of its
// own, gathered in Stores: Accounts, Sessions, Invites, AccessKeys,
// Limits, Buckets, Objects, Uploads, Stagings, Reclamation, Shares, Tus,
// EncryptionJobs, KeyGrants and Cluster. Each consumer takes only the
// roles it uses.
//
// # Contract
//
// Every method is one atomic operation: it either fully happens and is
// durable when it returns nil, or it changes nothing. Methods that replace or
// remove an object (or a part) enqueue its blob keys for reclamation in the
// same transaction, so a blob is never leaked and never reclaimed while a row
// still points at it. Usage counters move in the same transaction as the
// objects they count, so they are exact under any concurrency.
//
// Errors are classified into errcode codes: NotFound, AlreadyExists,
// Conflict, PreconditionFailed, QuotaExceeded, Unavailable (store down or
// overloaded). Keys compare as raw bytes (memcmp order) in every backend.
//
// # Uploads in flight
//
// An upload in flight is a Staging row, visible to every node sharing the
// store: the blob being written (recorded before its first byte is
// written, with a lease its writer renews), or the declared size of a
// direct-upload session (for the session's lifetime). A live staging
// (ExpiresAt in the future) reserves bytes of its owner's quota, so that
// usage + reservations never pass the quota. A staging, live or expired,
// keeps its blob from orphan collection (ReferencedBlobs counts it) until
// a janitor deletes it, well after it expired (DeleteExpiredStaging).
// Committing the blob (PutObjects or PutPart with Staged set) deletes its
// staging in the same transaction that counts its bytes as used, and
// fails if the staging is no longer live: an expired staging is never
// revived, so a blob whose lease lapsed (its writer stalled or died) never
// becomes an object, and the commit and the janitor's deletion of the
// staging exclude each other on its row, whatever the nodes' clocks say.
// Every quota check of a write that grows usage counts the owner's live
// reservations, under the same lock (PostgreSQL: the owner's users row;
// SQLite: the single writer).
package meta

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Visibility says who may read a bucket's objects.
type Visibility string

// Visibilities.
const (
	Private    Visibility = "private"     // owner only
	PublicRead Visibility = "public-read" // anyone may GET/HEAD objects
)

// Valid reports whether v is a known visibility.
func (v Visibility) Valid() bool { return v == Private || v == PublicRead }

// User is an account.
type User struct {
	ID           string
	Email        string // normalised lower case; unique
	PasswordHash string // PHC string (argon2id)
	QuotaBytes   int64  // 0 means unlimited
	UsageBytes   int64  // sum of the sizes of the objects, and of the parts of uploads in progress, in buckets the user owns
	Disabled     bool
	Admin        bool // may use the admin API and admin commands
	// SessionsAfter: access tokens issued before it are refused (zero:
	// none). Disable, password change and resets move it forward.
	SessionsAfter time.Time
	CreatedAt     time.Time
}

// UserUpdate names the fields UpdateUser changes: nil fields are left as
// they are.
type UserUpdate struct {
	Admin         *bool
	Disabled      *bool
	PasswordHash  *string
	QuotaBytes    *int64
	SessionsAfter *time.Time
	// RevokeRefreshTokens revokes every refresh token of the user in the
	// same transaction (disable, password change, reset). It needs at
	// least one field to set.
	RevokeRefreshTokens bool
}

// ListUsersOptions selects a page of users, in email order.
type ListUsersOptions struct {
	// Query, if set, keeps only users whose email contains it (compared
	// in lower case; no wildcards).
	Query string
	// After resumes a listing: only users whose email is after it.
	After string
	Limit int // 0 means 100; at most 1000
}

// DeleteUserResult says what DeleteUser removed.
type DeleteUserResult struct {
	Buckets int // buckets deleted (empty ones, or every one with purge)
	Objects int // objects deleted (purge)
	Uploads int // multipart uploads in progress deleted (purge)
	// BackendUploads are the deleted uploads whose bytes the blob
	// backend's own multipart upload held (Upload.BackendUploadID set):
	// the caller aborts those at the backend. Their BlobKey is queued.
	BackendUploads []Upload
}

// Counts are totals over the whole store, for the admin API.
type Counts struct {
	Users   int64
	Buckets int64
	Objects int64
	Bytes   int64 // the sum of every user's UsageBytes
}

// Topics of changes (see Change).
const (
	// TopicUser: the user whose ID is the key changed in a way a cache of
	// its authentication state must see (disabled, admin, sessions,
	// password, deleted).
	TopicUser = "user"
	// TopicAccessKey: the access key whose ID is the key was deleted.
	TopicAccessKey = "key"
	// TopicBucket: the bucket record whose name is the key changed
	// (visibility, encryption) or was deleted.
	TopicBucket = "bucket"
	// TopicObject: the object at ObjectChangeKey(bucket, key) was
	// written, replaced, moved or deleted.
	TopicObject = "object"
	// TopicAll: anything may have changed (e.g. a user purged with its
	// buckets and objects): every cache drops everything. The key is "".
	TopicAll = "all"
)

// ObjectChangeKey is the key of a TopicObject change of bucket/key
// (bucket names hold no "/").
func ObjectChangeKey(bucket, key string) string { return bucket + "/" + key }

type announceKey struct{}

// WithAnnounce returns ctx carrying changes that the store must announce
// (ChangeListener) in the transaction of the write called with it, so they
// are delivered exactly when it commits. Stores that do not announce
// ignore it. A write that commits in several transactions announces them
// with each; a write that fails may announce them all the same (its
// transaction committed before a check of its result failed): an extra
// invalidation is harmless.
func WithAnnounce(ctx context.Context, changes []Change) context.Context {
	if len(changes) == 0 {
		return ctx
	}
	return context.WithValue(ctx, announceKey{}, changes)
}

// Announced returns the changes WithAnnounce put in ctx.
func Announced(ctx context.Context) []Change {
	cs, _ := ctx.Value(announceKey{}).([]Change)
	return cs
}

// ErrFenced is in the chain of the error of a write that BeginFlux's
// fence refused (its transaction rolled back, nothing changed): it could
// not commit within the bound, or a listener started listening after the
// announcement. Announcing again and rerunning the write is safe.
var ErrFenced = errors.New("meta: the write's announcement is spent")

// Change names a committed change that caches of other processes must
// drop: a Topic and the Key of the entry.
type Change struct {
	Topic, Key string
}

// ChangeHandler receives what a ChangeListener reports. Changed and Reset
// run on the listener's goroutine, one at a time.
type ChangeHandler struct {
	// Changed reports a change committed by any process sharing the
	// store (this one's own included).
	Changed func(Change)
	// Reset says changes may have been missed (the listening connection
	// was opened, or re-opened after it failed): every cache must drop
	// everything.
	Reset func()
	// Error reports that listening failed; it is retried. May be nil.
	Error func(error)
	// Listening reports that the listening connection is up (true, after
	// the Reset that follows each LISTEN) or down (false, followed by a
	// Reset): while it is down announcements may be lost, so caches must
	// not keep what they load. May be nil.
	Listening func(up bool)
	// Alive, if set, reports that every change committed before since
	// (by this process's clock) has been handled: Changed returned for
	// it. The listener reports it at least every AliveEvery while its
	// connection works, and stops when it does not (a connection cut
	// silently, without an error, included), so a cache that trusts its
	// entries only for a lease after the last since stops trusting them
	// within that lease. A listener reports it after every Reset too (with
	// a since before the Reset: what the caches load afterwards is newer).
	Alive func(since time.Time)
	// AliveEvery is how often Alive should be reported (0: as the
	// listener pleases).
	AliveEvery time.Duration
	// Flux, if set, reports that a process is about to change the entries
	// cs (BeginFlux): caches must drop them and neither serve nor keep
	// them until FluxOver(id), or until a bound of their own. May be nil.
	Flux func(id string, cs []Change)
	// FluxOver reports the end of the flux id, delivered after the write's
	// own announcements (it is committed after them). May be nil.
	FluxOver func(id string)
}

// ChangeListener is implemented by stores that several processes share
// (PostgreSQL). UpdateUser and DeleteUser announce TopicUser, and
// DeleteAccessKey and DeleteUser announce TopicAccessKey for each key they
// delete, in the transaction of the change, so that a change is announced
// exactly when it commits (and never when it does not). Every write also
// announces the changes its context carries (WithAnnounce) in its
// transaction: that is how the object and bucket caches' invalidations
// travel (package metacache decides what each write changes).
// Announcements are best effort: one may be lost, and a listener that
// loses its connection reports Reset once it listens again.
type ChangeListener interface {
	// ListenChanges reports changes to h until ctx is done, reconnecting
	// after failures (Reset after each connection is established, the
	// first included). It returns ctx's error.
	ListenChanges(ctx context.Context, h ChangeHandler) error
	// ExpectChange prepares to wait until every process listening for
	// changes (this one included) has handled c, i.e. its Changed
	// returned. Call it before writing the change; after the write
	// committed, call wait, which returns when they all have, when max
	// has passed, or when ctx is done; if the write failed, call cancel.
	// A store that is not listening itself returns no-ops.
	// Several changes (of one write) may be expected together.
	ExpectChange(cs ...Change) (wait func(ctx context.Context, max time.Duration), cancel func())
	// BeginFlux announces, before a write of cs, that they are about to
	// change (ChangeHandler.Flux on every listener), and waits until every
	// listener that may still trust its caches acknowledged it, or max
	// passed after the announcement committed. The write must then run
	// with wctx: the store fails it (Unavailable, retryable) rather than
	// commit it later than within after the announcement, or after a
	// listener that missed the announcement started listening. over, to
	// call once the write is done (committed or failed), announces
	// FluxOver (one statement; no wait for acknowledgements). err: the
	// announcement failed.
	BeginFlux(ctx context.Context, cs []Change, max, within time.Duration) (wctx context.Context, over func(), err error)
}

// RefreshToken is one link of a rotating refresh-token chain. Only the
// SHA-256 of the token is stored.
type RefreshToken struct {
	Hash      string // hex SHA-256 of the opaque token; unique
	UserID    string
	Family    string // all rotations of one login share a family
	CreatedAt time.Time
	ExpiresAt time.Time
	Used      bool // rotated already; presenting it again revokes the family
	Revoked   bool
}

// Invite lets people sign up while the signup policy is "invite". Only
// the SHA-256 of its code is stored.
type Invite struct {
	ID        string
	Hash      string // hex SHA-256 of the code; unique
	Email     string // normalised; when set, only this email may redeem it
	Uses      int    // signups it allows in all; >= 1
	UsesLeft  int    // Uses minus the signups that redeemed it
	CreatedBy string // the administrator's user ID; "" when made by the CLI
	CreatedAt time.Time
	ExpiresAt time.Time // redeemable strictly before it
	Revoked   bool
}

// Redeemable reports whether a signup with email may redeem inv at now:
// not revoked, not expired, a use left, and bound to no email or to this
// one. CreateInvitedUser decides by the same rule inside its transaction.
func (inv Invite) Redeemable(email string, now time.Time) bool {
	return !inv.Revoked && inv.UsesLeft > 0 && now.Before(inv.ExpiresAt) && (inv.Email == "" || inv.Email == email)
}

// State summarises inv at now: "revoked", "expired", "used_up" or
// "active", the first that applies.
func (inv Invite) State(now time.Time) string {
	switch {
	case inv.Revoked:
		return "revoked"
	case !now.Before(inv.ExpiresAt):
		return "expired"
	case inv.UsesLeft <= 0:
		return "used_up"
	}
	return "active"
}

// ErrInviteInvalid is the error of redeeming an invite that is unknown,
// revoked, expired, used up or bound to another email: PermissionDenied
// with Detail["reason"] = "invite_invalid", the same for all five so that
// codes cannot be probed.
func ErrInviteInvalid() error {
	return &errcode.Error{Code: errcode.PermissionDenied, Message: "the invite code is not valid (unknown, expired, used up, revoked, or for another email)",
		Detail: map[string]any{"reason": "invite_invalid"}}
}

// Share is a share link: anonymous access, through a long random token,
// to one object or to every object under a prefix ("folder"), acting as
// the owner. Only the SHA-256 of the token is stored.
type Share struct {
	ID      string
	Hash    string // hex SHA-256 of the token; unique
	OwnerID string
	Bucket  string
	// Key is the shared object's key, or, when Folder, the shared prefix
	// ("" for the whole bucket, else ending in "/").
	Key    string
	Folder bool
	// Password is "" or the argon2id PHC string of the link's password.
	Password     string
	Note         string
	AllowUpload  bool  // a drop box: anonymous uploads into the folder
	MaxDownloads int64 // 0 = unlimited
	Downloads    int64
	CreatedAt    time.Time
	ExpiresAt    time.Time // usable strictly before it
	LastAccess   time.Time // zero if never used
	Revoked      bool
	// Grant marks a download grant: a link a client made for its own
	// short-lived use (the web console's downloads and previews), not for
	// sharing. The owner's list leaves grants out by default, and spent
	// ones are deleted (DeleteSpentGrants).
	Grant bool
}

// State summarises sh at now: "revoked", "expired", "used_up" or
// "active", the first that applies.
func (sh Share) State(now time.Time) string {
	switch {
	case sh.Revoked:
		return "revoked"
	case !now.Before(sh.ExpiresAt):
		return "expired"
	case sh.MaxDownloads > 0 && sh.Downloads >= sh.MaxDownloads:
		return "used_up"
	}
	return "active"
}

// ShareDownload is one client's counted download of one file through a
// share link with a download limit: a ranged request of the same client
// that continues it is a resume (Shares.ResumeShareDownload), not a
// download of its own.
type ShareDownload struct {
	ShareID string
	Client  string // the client's address (an IPv6 client's /64)
	Key     string // the object downloaded
	ETag    string // its ETag then: a resume must get the same bytes
	// Offset is where the download's last request began: a resume must
	// begin after it.
	Offset  int64
	Resumes int       // resumes so far
	Until   time.Time // resumable strictly before
}

// ErrShareUnavailable is the error of using a share link that exists but
// is revoked, expired, used up, or whose owner is disabled or whose object
// is gone: NotFound with Detail["reason"] = "share_unavailable" and
// Detail["state"] = state. Never any data.
func ErrShareUnavailable(state string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: "this share link is no longer available (" + state + ")",
		Detail: map[string]any{"reason": "share_unavailable", "state": state}}
}

// Bucket is a named container of objects. Names are globally unique.
type Bucket struct {
	Name       string
	OwnerID    string
	Visibility Visibility
	CreatedAt  time.Time
	// Encryption is the default encryption of new objects written without
	// an encryption of their own: "" (the server's --encryption),
	// EncryptAES256 or EncryptKMS (under EncryptionKMSKey, "" = the key
	// provider's default key).
	Encryption       string
	EncryptionKMSKey string
	// Gateway is "" for a native bucket. A gateway bucket fronts an
	// existing bucket of an S3-compatible store (docs/gateway.md): Gateway
	// is that store's URL (s3://BUCKET[/PREFIX]?endpoint=…&mode=…; never a
	// secret), and the bucket has no object rows — its objects are the
	// backend's, answered by the object service from the backend.
	Gateway string
	// Versioning is the bucket's versioning state (S3's): Unversioned
	// until SetBucketVersioning enables it; never Unversioned again.
	Versioning Versioning
	// ObjectLock is the bucket's object lock state (lock.go): enabled
	// only at creation (CreateBucket then makes the bucket versioning
	// Enabled), never disabled; its default retention is set by
	// SetBucketObjectLock.
	ObjectLock ObjectLock
	// Objects and Bytes are how many object versions a native bucket holds
	// (delete markers left out) and their total size, kept by the store in
	// the transaction of every object write (so never out of step with the
	// objects); always 0 for a gateway bucket. ListBuckets reads them as they are; a GetBucket
	// answered by the metadata cache (internal/metacache) may carry older ones.
	Objects, Bytes int64
	// Lifecycle is the bucket's lifecycle configuration (lifecycle.go),
	// nil if none; read with the record, shared by the copies a cache
	// hands out (never modify it).
	Lifecycle *Lifecycle
	// CORS is the bucket's CORS configuration (cors.go), nil if none;
	// shared like Lifecycle (never modify it).
	CORS *CORS
	// ACL is the bucket's grants and object ownership setting (acl.go),
	// nil for the defaults (private, no ownership setting); read with the
	// record, shared by the copies a cache hands out (never modify it).
	ACL *BucketACL
	// Policy is the bucket's policy document (JSON, policy.go), "" if
	// none; PublicAccessBlock its S3 Block Public Access settings, nil if
	// none.
	Policy            string
	PublicAccessBlock *PublicAccessBlock
}

// IsGateway reports whether b fronts a bucket of another store.
func (b Bucket) IsGateway() bool { return b.Gateway != "" }

// The bucket default encryptions (S3's SSEAlgorithm values).
const (
	EncryptAES256 = "AES256"
	EncryptKMS    = "aws:kms"
)

// ValidBucketEncryption checks a bucket default encryption.
func ValidBucketEncryption(enc, kmsKey string) error {
	switch {
	case enc != "" && enc != EncryptAES256 && enc != EncryptKMS:
		return errcode.New(errcode.InvalidArgument, "bucket encryption must be %q, %q or empty", EncryptAES256, EncryptKMS)
	case kmsKey != "" && enc != EncryptKMS:
		return errcode.New(errcode.InvalidArgument, "a KMS key id needs encryption %q", EncryptKMS)
	case len(kmsKey) > 2048:
		return errcode.New(errcode.InvalidArgument, "KMS key id too long")
	}
	return nil
}

// Object is the metadata of one stored object version (see versions.go):
// in a bucket never versioned, the one version of its key.
type Object struct {
	Bucket string
	Key    string
	// VersionID names the version among its key's: NullVersion for a
	// write into a bucket that is not versioned (never enabled, or
	// suspended), else an ID the store made (NewVersionID). Set by the
	// store; ignored in a Put unless Put.InPlace.
	VersionID string
	// IsLatest marks the key's current version (GET without a version
	// ID); DeleteMarker a delete marker, a version without bytes whose
	// being latest makes the key read as missing. Set by the store.
	IsLatest, DeleteMarker bool
	Size                   int64
	ETag                   string // without quotes: MD5 hex, or "<md5 of md5s>-N" for multipart
	SHA256                 string // hex
	ContentType            string
	Metadata               map[string]string // user metadata (x-amz-meta-*), lower-case names
	BlobKey                string            // where the bytes live in the blob store; "" when Parts is set
	// Parts, for an object assembled by a multipart upload, lists the blobs
	// holding its bytes, in order (the object is their concatenation).
	// Nil for single-blob objects.
	Parts    []ObjectPart
	Checksum Checksum  // an S3 additional checksum, if one was supplied or computed
	ModTime  time.Time // last modification (Last-Modified)
	// CRC32C is the CRC-32C (Castagnoli) of the plaintext, 4 bytes
	// big-endian, recorded by the write of a plaintext single-blob object:
	// what a verified read checks (object/verify.go), at hardware speed.
	// Nil when not recorded (objects written before, encrypted objects,
	// multipart objects): a verified read then checks SHA256. GetObject
	// and GetObjectVersion return it, listings leave it nil.
	CRC32C []byte
	// Inline holds the bytes of a small object stored in the metadata
	// store itself (an object with neither BlobKey nor Parts is inline;
	// len(Inline) == Size). GetObject returns them; listings leave them nil.
	Inline []byte
	// Encryption is the crypt.Envelope (its Marshal form) of a single-blob
	// or inline object whose bytes are ciphertext; nil for plaintext and
	// for multipart objects (each part has its own). Opaque to the store:
	// GetObject returns it, listings leave it nil. Size stays the
	// plaintext size; the blob holds crypt.CiphertextSize(Size) bytes.
	Encryption []byte
	// EncryptionKEK names the key-encryption key its data key is wrapped
	// under (kms.KeyRef.String()), "" for plaintext and customer keys.
	EncryptionKEK string
	// Tags is the version's tag set (tags.go; nil: none), in the order
	// it was given. GetObject and GetObjectVersion return it, listings
	// leave it nil; SetObjectTags replaces it.
	Tags []Tag
	// Retention and LegalHold lock the version (lock.go): set by the write
	// that makes it (or by the bucket's default retention), then only by
	// SetObjectRetention and SetObjectLegalHold. GetObject and
	// GetObjectVersion return them, listings leave them zero.
	Retention Retention
	LegalHold bool
	// Owner is the account that wrote the version ("": the bucket's
	// owner) and ACL its grants (acl.go; nil: private, the owner's
	// FULL_CONTROL). GetObject and GetObjectVersion return them, listings
	// leave them empty; SetObjectACL replaces ACL.
	Owner string
	ACL   []Grant
}

// IsInline reports whether the object's bytes live in the metadata store.
func (o Object) IsInline() bool { return !o.DeleteMarker && o.BlobKey == "" && len(o.Parts) == 0 }

// ObjectPart is one piece of a multipart object.
type ObjectPart struct {
	BlobKey  string
	Size     int64
	ETag     string // the part's (Part.ETag)
	Checksum string // the part's checksum in Object.Checksum.Algorithm, base64; may be ""
	// Encryption and EncryptionKEK: as in Object, for this part's blob.
	Encryption    []byte
	EncryptionKEK string
}

// Checksum is an S3 additional checksum (x-amz-checksum-*).
type Checksum struct {
	Algorithm string // "CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256", or ""
	Type      string // "FULL_OBJECT" or "COMPOSITE"
	Value     string // base64, as on the wire; COMPOSITE values end in "-N"
}

// BlobKeys returns every blob key the object's bytes live in.
func (o Object) BlobKeys() []string {
	if o.Parts == nil {
		if o.BlobKey == "" {
			return nil
		}
		return []string{o.BlobKey}
	}
	keys := make([]string, len(o.Parts))
	for i, p := range o.Parts {
		keys[i] = p.BlobKey
	}
	return keys
}

// Cond is a precondition on the current object at a key, checked inside the
// same transaction as the write.
type Cond struct {
	IfNoneMatch bool   // the key must not exist (create-only)
	IfMatch     string // the current object's ETag must equal this; "*" means any existing object
	// IfNoneMatchETag: the current object's ETag, if there is one, must
	// not equal this (If-None-Match with an ETag; a missing key passes).
	IfNoneMatchETag string
	// IfVersion, if set, requires the current object to be the version
	// Version returned (a compare-and-swap of a whole object: a
	// background job replacing an object's bytes never clobbers a
	// concurrent overwrite); PreconditionFailed with Detail["reason"] =
	// "object_changed" otherwise, or if there is no object.
	IfVersion string
	// IfTags, if set, requires the current object's tag set to be the one
	// TagsKey made it from (lifecycle pins the tags a rule matched; a
	// version's Version does not cover its tags); PreconditionFailed with
	// Detail["reason"] = "object_changed" otherwise, or if there is no
	// object.
	IfTags string
	// BypassGovernance lets a removal (DeleteVersion) remove a version
	// under GOVERNANCE retention (never COMPLIANCE, never a legal hold):
	// S3's x-amz-bypass-governance-retention, which the caller may grant
	// only to the bucket owner or an administrator. It is no
	// precondition: Check and Any ignore it.
	BypassGovernance bool
}

// TagsKey is the Cond.IfTags of a tag set (nil and empty alike).
func TagsKey(tags []Tag) string {
	var b strings.Builder
	b.WriteString("tags")
	for _, t := range tags {
		fmt.Fprintf(&b, ":%d:%s%d:%s", len(t.Key), t.Key, len(t.Value), t.Value)
	}
	return b.String()
}

// Check reports whether c holds for cur, the current object at the key
// (exists false: there is none). It is the one rule for write conditions:
// the metadata backends apply it inside the write's transaction, the
// object service before reading a body (to fail fast) and for gateway
// buckets, whose backend writes are not conditional.
//   - IfNoneMatch: the key must not exist;
//   - IfMatch: an object must exist, and unless IfMatch is "*" its ETag
//     must be IfMatch (RFC 9110: If-Match is false without a current
//     object);
//   - IfVersion: an object must exist and be that version (Version);
//   - IfTags: an object must exist with that tag set (TagsKey).
//
// Each failure is PreconditionFailed; IfVersion's carries Detail["reason"]
// = "object_changed".
func (c Cond) Check(cur Object, exists bool) error {
	if c.IfNoneMatch && exists {
		return errcode.New(errcode.PreconditionFailed, "%q already exists", cur.Key)
	}
	if c.IfMatch != "" && !exists {
		// S3 answers NoSuchKey here; HTTP (the file API) 412.
		return &errcode.Error{Code: errcode.PreconditionFailed, Message: fmt.Sprintf("there is no object to match the ETag %q", c.IfMatch),
			Detail: map[string]any{"reason": "no_object"}}
	}
	if c.IfNoneMatchETag != "" && exists && cur.ETag == c.IfNoneMatchETag {
		return errcode.New(errcode.PreconditionFailed, "the current object matches the ETag %q", c.IfNoneMatchETag)
	}
	if c.IfMatch != "" && c.IfMatch != "*" && cur.ETag != c.IfMatch {
		return errcode.New(errcode.PreconditionFailed, "the current object does not match the ETag %q", c.IfMatch)
	}
	if c.IfVersion != "" && (!exists || Version(cur) != c.IfVersion) || c.IfTags != "" && (!exists || TagsKey(cur.Tags) != c.IfTags) {
		return &errcode.Error{Code: errcode.PreconditionFailed, Message: "the object changed",
			Detail: map[string]any{"reason": "object_changed"}}
	}
	return nil
}

// Any reports whether c asks for anything.
func (c Cond) Any() bool {
	return c.IfNoneMatch || c.IfMatch != "" || c.IfNoneMatchETag != "" || c.IfVersion != "" || c.IfTags != ""
}

// Put is one object write for PutObjects.
type Put struct {
	Object Object
	Cond   Cond
	// BucketOwner, if set, must be the bucket's owner at commit time, else
	// NotFound: a bucket deleted and re-created by another user while the
	// bytes were streaming must not receive the object.
	BucketOwner string
	// Staged says Object.BlobKey was written under a Staging (see Stage),
	// which the commit deletes: its reservation becomes usage in the same
	// transaction. The staging must still be live, else Unavailable with
	// Detail["reason"] = "staging_lease_lost" and nothing changes.
	Staged bool
	// InPlace rewrites the version Object.VersionID of the key where it
	// is (latest or not; its ID and its place among the key's versions
	// kept) instead of writing a new version: how a background job
	// replaces a version's bytes (Cond then applies to that version,
	// NotFound with ErrNoVersion if it is gone, and a delete marker is
	// never rewritten). The version keeps its tags, whatever
	// Object.Tags says: a job replaces bytes, never a tag set.
	InPlace bool
}

// PutResult is what PutObjects did for one Put.
type PutResult struct {
	// Object is the version as stored: its VersionID and IsLatest, and
	// ModTime if the put left it zero.
	Object Object
	// Replaced is the version the put removed (its blobs enqueued, its
	// size no longer counted): the key's null version in a bucket not
	// versioned, the rewritten version of an InPlace put; zero if none
	// (a new key, or a versioned bucket, where older versions stay).
	Replaced Object
}

// Staging is an upload in flight (see the package doc): a blob being
// written, or, with Declared, the declared size of a direct-upload session.
type Staging struct {
	// BlobKey is the blob being written; unique among stagings. A
	// declared-size staging is keyed "upload:" + its UploadID.
	BlobKey string
	// OwnerID is the user whose quota the staging draws on: the owner of
	// the bucket the upload goes to.
	OwnerID string
	// UploadID is the multipart upload a part (or a declared size) belongs
	// to; "" for an object upload. The stagings of one upload reserve
	// together the larger of its declared bytes still due and the bytes
	// of its parts in flight, so parts within the declared size are not
	// counted twice.
	UploadID string
	// Declared marks the declared size of a direct-upload session
	// (created by CreateUpload, deleted when the upload goes).
	Declared bool
	// Bucket and Key name the object an object upload will replace, if
	// any: Stage credits that object's size (the overwrite frees it), to
	// one staging of a key at a time.
	Bucket, Key string
	// Bytes is the reservation (as granted by Stage and GrowStaging).
	Bytes int64
	// Credit is the replaced object's size as Stage credited it: the
	// staging counts Bytes - Credit (at least 0) against the quota.
	Credit int64
	// ExpiresAt ends the lease (RenewStaging extends it). An expired
	// staging reserves nothing and cannot be committed or renewed; it
	// still protects its blob until DeleteExpiredStaging removes it.
	ExpiresAt time.Time
}

// ErrLeaseLost is the error of committing or growing a staging that is gone
// or expired: Unavailable (the client may retry the upload), with
// Detail["reason"] = "staging_lease_lost".
func ErrLeaseLost() error {
	return &errcode.Error{Code: errcode.Unavailable, Message: "the upload's staging lease expired; retry the upload",
		Detail: map[string]any{"reason": "staging_lease_lost"}, RetryAfter: time.Second}
}

// DeclaredStagingKey is the BlobKey of the staging of upload id's declared
// size.
func DeclaredStagingKey(uploadID string) string { return "upload:" + uploadID }

// Garbage is a blob queued for reclamation.
type Garbage struct {
	ID        int64
	BlobKey   string
	CreatedAt time.Time
}

// ListOptions selects a page of a bucket's objects.
type ListOptions struct {
	Prefix     string // only keys starting with Prefix
	Delimiter  string // if set, keys with Delimiter after Prefix roll up into CommonPrefixes
	StartAfter string // only entries after this (a key, or a common prefix returned earlier)
	Limit      int    // max entries (objects + common prefixes); 0 means 1000
	// DeleteMarkers lists, instead of the objects, the keys whose latest
	// version is a delete marker (the file API's deleted files), each as
	// its marker (DeleteMarker, VersionID and IsLatest set; ModTime when
	// it was deleted).
	DeleteMarkers bool
	// NoParts leaves out the parts of multipart objects (Parts nil; one
	// fewer query a page): for a listing only shown to a client, which
	// reads no bytes and asks nothing of an object's blobs through it
	// (IsInline, BlobKeys are not meaningful in such a page).
	NoParts bool
}

// ListPage is one page of a listing, in byte order of keys.
type ListPage struct {
	Objects        []Object
	CommonPrefixes []string
	// Truncated says there is more; continue with StartAfter = NextStartAfter.
	Truncated      bool
	NextStartAfter string
}

// AccessKey is an S3 credential of a user. The secret is stored encrypted
// by the caller (meta never sees it in clear).
type AccessKey struct {
	ID        string // the access key ID; unique
	UserID    string
	SecretEnc []byte // the secret, encrypted with the server key
	Name      string
	// Internal keys are made by Coffer itself (to presign direct-upload
	// URLs); they are hidden from the user's key list.
	Internal bool
	// Token: the row is a file-API app token, not an S3 key; SecretEnc is
	// the SHA-256 of its secret (the token is never stored in clear).
	Token bool
	// Scope narrows what the key may do (the zero KeyScope: as its user);
	// ExpiresAt is when it stops working (zero: never).
	Scope     KeyScope
	ExpiresAt time.Time
	CreatedAt time.Time
	LastUsed  time.Time // zero if never; updated at most coarsely
}

// Upload is a multipart upload in progress.
type Upload struct {
	ID          string // unique, URL-safe
	Bucket      string
	Key         string
	InitiatorID string // the user who created it
	ContentType string
	Metadata    map[string]string
	// Tags is the tag set the completed object gets (nil: none).
	Tags []Tag
	// Owner and ACL are the owner ("": the bucket's) and grants (nil:
	// private) the completed object gets (Object.Owner, Object.ACL).
	Owner string
	ACL   []Grant
	// Retention and LegalHold are the lock the completed object gets
	// (lock.go; CheckUpload checks the retention).
	Retention Retention
	LegalHold bool
	// ChecksumAlgorithm and ChecksumType as announced at creation (S3
	// x-amz-checksum-algorithm / -type); may be "".
	ChecksumAlgorithm string
	ChecksumType      string
	// Size and PartSize as declared by a direct-upload session; 0 if not.
	Size      int64
	PartSize  int64
	CreatedAt time.Time
	ExpiresAt time.Time // reclaimed by the janitor after this
	// BlobKey and BackendUploadID are set for a direct upload whose bytes
	// go straight to the blob backend's own multipart upload (of ID
	// BackendUploadID), which assembles them into the single blob BlobKey.
	// The store counts BlobKey as referenced while the upload exists
	// (ReferencedBlobs) and enqueues it when the upload is aborted;
	// CompleteBackendUpload turns it into an object.
	BlobKey         string
	BackendUploadID string
	// EncryptionMode, EncryptionKMSKey and CustomerKeyCheck are the
	// upload's encryption, chosen at creation, which every part is written
	// under (opaque to the store): a crypt.Mode (0 = the server's default
	// when the part is written), the KMS key a client named, and for
	// customer keys (S3 SSE-C) a customer-mode crypt.Envelope holding only
	// a salted check of the key.
	EncryptionMode   int
	EncryptionKMSKey string
	CustomerKeyCheck []byte
}

// Part is one uploaded part of an Upload.
type Part struct {
	UploadID string
	Number   int // 1..10000
	Size     int64
	ETag     string // MD5 hex; opaque for a direct-upload part (object.PartInput.Direct), "" for a tus part
	Checksum string // base64 in the upload's ChecksumAlgorithm; may be ""
	BlobKey  string
	ModTime  time.Time
	// Encryption and EncryptionKEK: as in Object, for this part's blob;
	// CompleteUpload copies them into the object's parts.
	Encryption    []byte
	EncryptionKEK string
	// Staged (an input of PutPart, never returned) says BlobKey was
	// written under a Staging, which PutPart deletes as Put.Staged says.
	Staged bool
}

// CompletePart names a part, with the ETag the client saw, in a
// CompleteUpload.
type CompletePart struct {
	Number int
	ETag   string
	// Checksum is the part checksum the client lists (S3's
	// ChecksumALG element; Algorithm "" if none, no Type): the object
	// service compares it with the stored part's (object.CheckCompletion);
	// AssembleUpload ignores it.
	Checksum Checksum
}

// ListUploadsOptions selects a page of a bucket's multipart uploads, in
// order of (key, creation time, ID).
type ListUploadsOptions struct {
	Prefix string
	// KeyMarker and UploadIDMarker resume a listing, as in S3. KeyMarker
	// alone: only uploads with key > KeyMarker. Both: only uploads after
	// the upload UploadIDMarker (of key KeyMarker) in the listing order;
	// if that upload no longer exists, from the first upload of KeyMarker
	// on (repeating rather than skipping). UploadIDMarker without
	// KeyMarker is ignored.
	KeyMarker      string
	UploadIDMarker string
	Limit          int // 0 means 1000
}

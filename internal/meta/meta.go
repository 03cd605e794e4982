// Package meta defines Coffer's metadata store: users, sessions, buckets,
// objects and the queue of blobs to reclaim. Two backends implement it
// (sqlite for the embedded shape, postgres for scale-out) and both must pass
// the conformance suite in package metatest.
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
}

// ChangeListener is implemented by stores that several processes share
// (PostgreSQL). UpdateUser and DeleteUser announce TopicUser, and
// DeleteAccessKey and DeleteUser announce TopicAccessKey for each key they
// delete, in the transaction of the change, so that a change is announced
// exactly when it commits (and never when it does not). Every write also
// announces the changes its context carries (WithAnnounce) in its
// transaction: that is how the object and bucket caches' invalidations
// travel (package cache decides what each write changes).
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
// that continues it is a resume (Store.ResumeShareDownload), not a
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
	// Objects and Bytes are how many objects a native bucket holds and
	// their total size, kept by the store in the transaction of every
	// object write (so never out of step with the objects); always 0 for
	// a gateway bucket. ListBuckets reads them as they are; a GetBucket
	// answered by the metadata cache (internal/cache) may carry older ones.
	Objects, Bytes int64
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

// Object is the metadata of one stored object.
type Object struct {
	Bucket      string
	Key         string
	Size        int64
	ETag        string // without quotes: MD5 hex, or "<md5 of md5s>-N" for multipart
	SHA256      string // hex
	ContentType string
	Metadata    map[string]string // user metadata (x-amz-meta-*), lower-case names
	BlobKey     string            // where the bytes live in the blob store; "" when Parts is set
	// Parts, for an object assembled by a multipart upload, lists the blobs
	// holding its bytes, in order (the object is their concatenation).
	// Nil for single-blob objects.
	Parts    []ObjectPart
	Checksum Checksum  // an S3 additional checksum, if one was supplied or computed
	ModTime  time.Time // last modification (Last-Modified)
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
}

// IsInline reports whether the object's bytes live in the metadata store.
func (o Object) IsInline() bool { return o.BlobKey == "" && len(o.Parts) == 0 }

// ObjectPart is one piece of a multipart object.
type ObjectPart struct {
	BlobKey  string
	Size     int64
	ETag     string // the part's MD5 hex
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
	// IfVersion, if set, requires the current object to be the version
	// Version returned (a compare-and-swap of a whole object: a
	// background job replacing an object's bytes never clobbers a
	// concurrent overwrite); PreconditionFailed with Detail["reason"] =
	// "object_changed" otherwise, or if there is no object.
	IfVersion string
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
//   - IfVersion: an object must exist and be that version (Version).
//
// Each failure is PreconditionFailed; IfVersion's carries Detail["reason"]
// = "object_changed".
func (c Cond) Check(cur Object, exists bool) error {
	if c.IfNoneMatch && exists {
		return errcode.New(errcode.PreconditionFailed, "%q already exists", cur.Key)
	}
	if c.IfMatch != "" && !exists {
		return errcode.New(errcode.PreconditionFailed, "there is no object to match the ETag %q", c.IfMatch)
	}
	if c.IfMatch != "" && c.IfMatch != "*" && cur.ETag != c.IfMatch {
		return errcode.New(errcode.PreconditionFailed, "the current object does not match the ETag %q", c.IfMatch)
	}
	if c.IfVersion != "" && (!exists || Version(cur) != c.IfVersion) {
		return &errcode.Error{Code: errcode.PreconditionFailed, Message: "the object changed",
			Detail: map[string]any{"reason": "object_changed"}}
	}
	return nil
}

// Any reports whether c asks for anything.
func (c Cond) Any() bool { return c.IfNoneMatch || c.IfMatch != "" || c.IfVersion != "" }

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
	Internal  bool
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
	ETag     string // MD5 hex
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

// Store is a metadata backend. All methods are safe for concurrent use.
type Store interface {
	TusStore
	LimitsStore
	KMSGrantStore
	KMSJobStore
	RateStore
	// PutGatewayBucket creates the gateway bucket b (b.Gateway != "") or,
	// when a gateway bucket of that name exists, sets its owner,
	// visibility and gateway URL. Conflict (Detail "reason" =
	// "not_a_gateway") if a native bucket has the name, NotFound if the
	// owner does not exist, InvalidArgument without a Gateway.
	PutGatewayBucket(ctx context.Context, b Bucket) error
	// ListGatewayBuckets lists every gateway bucket, by name.
	ListGatewayBuckets(ctx context.Context) ([]Bucket, error)
	// CreateUser creates u and its default bucket b (b.OwnerID == u.ID) in
	// one transaction. AlreadyExists if the email or bucket name is taken.
	CreateUser(ctx context.Context, u User, b Bucket) error
	GetUser(ctx context.Context, id string) (User, error)
	// GetUserByEmail looks up by normalised email; NotFound if none.
	GetUserByEmail(ctx context.Context, email string) (User, error)
	// SetQuota sets a user's quota in bytes (0 = unlimited).
	SetQuota(ctx context.Context, userID string, quotaBytes int64) error
	// UpdateUser applies the non-nil fields of upd in one statement and
	// returns the user as it is after; NotFound if there is no such user,
	// InvalidArgument for a negative quota or an empty update. With
	// upd.RevokeRefreshTokens, every refresh token of the user is revoked
	// in the same transaction.
	UpdateUser(ctx context.Context, userID string, upd UserUpdate) (User, error)
	// ListUsers returns a page of users in email order and whether more
	// exist (continue with After = the last email).
	ListUsers(ctx context.Context, opts ListUsersOptions) ([]User, bool, error)
	// DeleteUser deletes the user, its access keys and refresh tokens and
	// its empty buckets, in one transaction. Without purge, a user whose
	// buckets hold objects or multipart uploads in progress is refused
	// with Conflict (Detail: "reason" = "user_owns_data", "objects",
	// "uploads", "buckets" — the names of the buckets holding them, at
	// most 10) and nothing changes. With purge, every bucket of the user
	// goes with its objects and uploads, the user's stagings are deleted,
	// and every blob they point at is queued for reclamation (the
	// janitor re-checks each before deleting it). NotFound if there is no
	// such user.
	DeleteUser(ctx context.Context, userID string, purge bool) (DeleteUserResult, error)
	// Counts returns totals over the store.
	Counts(ctx context.Context) (Counts, error)

	CreateRefreshToken(ctx context.Context, t RefreshToken) error
	// RotateRefreshToken consumes the token with hash oldHash and stores
	// next in its place (next.UserID and next.Family are taken from the old
	// token), returning the stored next. Unauthenticated if the old token
	// is unknown, expired or revoked, if its user is disabled, or if it
	// was created before its user's SessionsAfter; all of it is judged
	// in the transaction of the rotation, so a rotation concurrent with an
	// UpdateUser that disables the user or revokes its tokens either
	// fails or happens before it (and its token is then revoked too). If
	// it was already used, the whole family is revoked (reuse detection)
	// and Unauthenticated is returned. Exactly one of many concurrent
	// rotations of one token succeeds.
	RotateRefreshToken(ctx context.Context, oldHash string, next RefreshToken, now time.Time) (RefreshToken, error)
	// RevokeRefreshFamily revokes every token of the family that the token
	// with hash belongs to. NotFound if the hash is unknown.
	RevokeRefreshFamily(ctx context.Context, hash string) error
	// DeleteExpiredRefreshTokens removes tokens that expired before t.
	DeleteExpiredRefreshTokens(ctx context.Context, before time.Time) (int, error)

	// CreateInvite stores inv with UsesLeft = Uses (a given UsesLeft is
	// ignored) and Revoked false. A zero CreatedAt is set to now.
	// InvalidArgument without an ID, a hash or an expiry, or with Uses < 1;
	// AlreadyExists if the ID or the hash is taken.
	CreateInvite(ctx context.Context, inv Invite) error
	// GetInviteByHash returns the invite whose code has hash; NotFound if
	// none.
	GetInviteByHash(ctx context.Context, hash string) (Invite, error)
	// ListInvites returns every invite, newest CreatedAt first (ties by
	// ID), used up, expired and revoked ones included.
	ListInvites(ctx context.Context) ([]Invite, error)
	// RevokeInvite revokes the invite with id; NotFound if there is none.
	// Revoking a revoked invite succeeds.
	RevokeInvite(ctx context.Context, id string) error
	// CreateInvitedUser is CreateUser that redeems one use of the invite
	// whose code has hash inviteHash, in the same transaction: the use is
	// taken only if the invite is Redeemable(u.Email, now), by a
	// conditional update, so of concurrent signups on its last use exactly
	// one succeeds. ErrInviteInvalid if it is not redeemable (nothing
	// changes); if the user cannot be created (AlreadyExists, ...) the use
	// is not taken either.
	CreateInvitedUser(ctx context.Context, u User, b Bucket, inviteHash string, now time.Time) error

	// CreateShare stores sh with Downloads 0, LastAccess zero and Revoked
	// false. A zero CreatedAt is set to now. InvalidArgument without an
	// ID, a hash, an owner, a bucket or an expiry, or with a negative
	// MaxDownloads; AlreadyExists if the ID or hash is taken.
	CreateShare(ctx context.Context, sh Share) error
	// GetShare returns the share with id; NotFound if none.
	GetShare(ctx context.Context, id string) (Share, error)
	// GetShareByHash returns the share whose token has hash; NotFound if
	// none.
	GetShareByHash(ctx context.Context, hash string) (Share, error)
	// ListShares returns the shares of ownerID, newest CreatedAt first
	// (ties by ID), revoked and expired ones included.
	ListShares(ctx context.Context, ownerID string) ([]Share, error)
	// SetShareExpiry sets the expiry of share id; NotFound if none.
	SetShareExpiry(ctx context.Context, id string, expires time.Time) (Share, error)
	// RevokeShare revokes share id; NotFound if none. Revoking a revoked
	// share succeeds.
	RevokeShare(ctx context.Context, id string) error
	// DeleteShare removes share id; NotFound if none. Its token is then
	// unknown.
	DeleteShare(ctx context.Context, id string) error
	// DeleteSpentGrants removes the grants (Share.Grant) of ownerID that
	// are not "active" at now (revoked, expired or used up) and returns
	// how many went.
	DeleteSpentGrants(ctx context.Context, ownerID string, now time.Time) (int, error)
	// UseShare records one access to share id at now: LastAccess = now,
	// and, with download true, one more download, taken only while the
	// share is "active" (Share.State) by a conditional update, so
	// concurrent downloads of the last one cannot both pass.
	// ErrShareUnavailable (with the state) if it is not active; NotFound if
	// there is no such share.
	UseShare(ctx context.Context, id string, download bool, now time.Time) error
	// StartShareDownload takes one download of share d.ShareID exactly as
	// UseShare(download true) does (the same conditional update, the same
	// refusals) and, in the same transaction, records d with Resumes 0,
	// replacing any download recorded for the same share, client and key.
	// InvalidArgument without a client or key, or with a zero Until.
	StartShareDownload(ctx context.Context, d ShareDownload, now time.Time) error
	// ResumeShareDownload continues the download recorded for d.ShareID,
	// d.Client and d.Key from d.Offset. It succeeds (true) only if that
	// record has ETag d.ETag, an Until after now, an Offset below d.Offset
	// and fewer than maxResumes resumes, and the share is neither revoked
	// nor expired at now (used up is no obstacle: the download was
	// counted). Then, by one conditional update (two concurrent resumes
	// from one offset cannot both pass), the record takes Offset d.Offset,
	// Until d.Until and one more resume, and the share LastAccess now.
	// Otherwise false, and nothing changes.
	ResumeShareDownload(ctx context.Context, d ShareDownload, maxResumes int, now time.Time) (bool, error)

	// CreateBucket: AlreadyExists if the name is taken (by a native or a
	// gateway bucket); NotFound if the owner does not exist. It makes
	// native buckets only (b.Gateway is ignored; see PutGatewayBucket).
	CreateBucket(ctx context.Context, b Bucket) error
	GetBucket(ctx context.Context, name string) (Bucket, error)
	// ListBuckets returns the owner's buckets sorted by name.
	ListBuckets(ctx context.Context, ownerID string) ([]Bucket, error)
	SetBucketVisibility(ctx context.Context, name string, v Visibility) error
	// SetBucketEncryption sets a bucket's default encryption (see
	// Bucket.Encryption): NotFound if missing; InvalidArgument unless
	// ValidBucketEncryption.
	SetBucketEncryption(ctx context.Context, name, enc, kmsKey string) error
	// DeleteBucket: NotFound if missing; Conflict if it holds objects.
	// Multipart uploads in progress in it are aborted in the same
	// transaction (their blobs enqueued, their usage released).
	DeleteBucket(ctx context.Context, name string) error

	// GetObject: NotFound if the bucket or key is missing.
	GetObject(ctx context.Context, bucket, key string) (Object, error)
	// PutObjects writes all puts in one transaction, all or nothing. For
	// each put: NotFound if the bucket is missing; PreconditionFailed if its
	// Cond fails; QuotaExceeded if the bucket owner's usage would pass its
	// quota (growth only: a put that shrinks usage always passes). Replaced
	// objects are returned (zero Object where nothing was replaced) and
	// their blobs enqueued as garbage.
	PutObjects(ctx context.Context, puts []Put) ([]Object, error)
	// DeleteObject removes the object at bucket/key if cond holds, returns
	// it and enqueues its blob. NotFound if missing.
	DeleteObject(ctx context.Context, bucket, key string, cond Cond) (Object, error)
	// MoveObject renames src to dst (buckets may differ), keeping the blob.
	// dstCond applies to the object currently at dst, which is replaced
	// (and its blob enqueued). Usage moves between owners with a quota check
	// on the destination owner. Moving a key onto itself is a no-op. Returns
	// the object at its new place.
	MoveObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, dstCond Cond) (Object, error)
	// ListObjects returns one page. NotFound if the bucket is missing.
	ListObjects(ctx context.Context, bucket string, opts ListOptions) (ListPage, error)

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

	// CreateUpload starts a multipart upload. NotFound if the bucket is
	// missing; AlreadyExists if the ID is taken. A declared Size is
	// reserved against the bucket owner's quota until the upload is
	// completed, aborted or expires (a Declared staging keyed
	// DeclaredStagingKey(u.ID), expiring at u.ExpiresAt): QuotaExceeded,
	// and nothing is created, if it does not fit.
	CreateUpload(ctx context.Context, u Upload) error
	// GetUpload returns an upload in progress; NotFound if it does not
	// exist (never created, aborted or completed).
	GetUpload(ctx context.Context, id string) (Upload, error)
	// PutPart records a part, replacing (and enqueueing the blob of) any
	// earlier part with the same number, and returns the replaced part
	// (zero if none). The part's size counts toward the bucket owner's
	// usage from now on (the replaced part's size no longer does), with the
	// same quota check as PutObjects; the upload's declared size still due
	// shrinks accordingly. NotFound if the upload is gone (the caller then
	// deletes the part's blob). p.Staged as Put.Staged.
	PutPart(ctx context.Context, p Part) (Part, error)
	// ListParts returns up to limit parts of an upload with Number >
	// after, ascending, and whether more exist. NotFound if the upload is
	// gone. limit 0 means 1000.
	ListParts(ctx context.Context, uploadID string, after, limit int) ([]Part, bool, error)
	// ListUploads returns a page of the bucket's uploads in progress and
	// whether more exist. NotFound if the bucket is missing.
	ListUploads(ctx context.Context, bucket string, opts ListUploadsOptions) ([]Upload, bool, error)
	// ListExpiredUploads returns up to limit uploads whose ExpiresAt is
	// before t, oldest first.
	ListExpiredUploads(ctx context.Context, before time.Time, limit int) ([]Upload, error)
	// AbortUpload deletes an upload and its parts, enqueueing their blobs
	// and releasing their usage. NotFound if the upload is gone.
	AbortUpload(ctx context.Context, id string) error
	// CompleteUpload atomically turns an upload into the object obj at the
	// upload's bucket and key: obj.Parts is set by the store from parts (in
	// the given order), obj.Size is their sum, obj.Bucket/Key come from the
	// upload; the caller sets ETag, Checksum, ContentType, Metadata,
	// ModTime. Checks, inside the transaction:
	//   - parts non-empty and strictly ascending, else InvalidArgument with
	//     Detail["reason"] = "invalid_part_order";
	//   - every listed part exists with the given ETag (quotes ignored),
	//     else InvalidArgument with Detail["reason"] = "invalid_part" and
	//     Detail["part_number"];
	//   - every listed part but the last is at least minPartSize bytes, else
	//     InvalidArgument with Detail["reason"] = "entity_too_small" and
	//     Detail["part_number"];
	//   - cond on the object currently at the key (PreconditionFailed).
	// Then: the object replaces any current one (whose blobs are
	// enqueued), parts not listed are discarded (blobs enqueued, usage
	// released), the replaced object's usage is released, and the upload
	// disappears. NotFound if the upload is gone. Returns the new object.
	CompleteUpload(ctx context.Context, id string, obj Object, parts []CompletePart, minPartSize int64, cond Cond) (Object, error)
	// CompleteBackendUpload atomically turns an upload with a BlobKey,
	// whose bytes the blob backend assembled, into the single-blob object
	// obj at the upload's bucket and key. obj.BlobKey must be the upload's
	// BlobKey (else InvalidArgument); obj.Size is the assembled size and
	// counts toward the bucket owner's usage from now on, with the quota
	// check of PutObjects (QuotaExceeded changes nothing). cond applies to
	// the object currently at the key, which is replaced (blobs enqueued,
	// usage released); parts recorded with PutPart, if any, are discarded.
	// NotFound if the upload is gone: of two concurrent completions,
	// exactly one succeeds.
	CompleteBackendUpload(ctx context.Context, id string, obj Object, cond Cond) (Object, error)

	// ListGarbage returns up to limit queued blobs enqueued before t, oldest first.
	ListGarbage(ctx context.Context, before time.Time, limit int) ([]Garbage, error)
	// ClaimGarbage is ListGarbage for reclamation: it re-checks, when
	// called, that no row points at each listed blob (an object, a part, an
	// upload, a staging) and returns only those no row points at. A
	// queued blob that a row points at again is dropped from the queue (it
	// is enqueued again when its last row goes).
	ClaimGarbage(ctx context.Context, before time.Time, limit int) ([]Garbage, error)
	// DeleteGarbage removes queue entries (after their blobs are deleted).
	DeleteGarbage(ctx context.Context, ids []int64) error
	// ReferencedBlobs returns which of keys a row still points at (an
	// object, a part of a multipart object, a part of an upload in
	// progress, the BlobKey of an upload in progress, a staging, or the
	// garbage queue), for orphan collection. A staging counts until it is
	// deleted, expired or not: liveness is judged by the clocks of the
	// nodes, so a node whose clock runs ahead must not take a blob whose
	// writer still holds its lease (see DeleteExpiredStaging).
	ReferencedBlobs(ctx context.Context, keys []string) (map[string]bool, error)

	// ClaimKeyFingerprint records fp, the fingerprint of the server key
	// (never the key itself), as the one the store works with, unless one
	// is recorded already, and returns the recorded fingerprint: fp if it
	// is the one recorded, now or earlier, else the other. The first
	// fingerprint recorded stays: of concurrent calls with different
	// fingerprints on a store that has none, exactly one is recorded and
	// every call returns it, across processes. InvalidArgument if fp is
	// empty or longer than 128 bytes.
	ClaimKeyFingerprint(ctx context.Context, fp string) (string, error)

	// Stage records s, an upload in flight, reserving between minBytes and
	// s.Bytes of the owner's quota: as many as fit, all of s.Bytes when
	// the owner has no quota. It returns the staging as stored (Bytes
	// granted, Credit set) and whether the owner has a quota (then a
	// writer of unknown length must GrowStaging before writing past the
	// reservation). QuotaExceeded, and nothing is stored, if minBytes do
	// not fit; AlreadyExists if the key is staged; NotFound if the owner
	// does not exist; InvalidArgument for a Declared staging (CreateUpload
	// makes those) or minBytes outside 0..s.Bytes.
	Stage(ctx context.Context, s Staging, minBytes int64) (Staging, bool, error)
	// GrowStaging raises the reservation of the live staging key to
	// between minBytes and maxBytes, as many as fit, and returns the bytes
	// now reserved (never fewer than before). QuotaExceeded, and nothing
	// changes, if minBytes do not fit; Unavailable with Detail["reason"] =
	// "staging_lease_lost" if the staging is gone or expired.
	GrowStaging(ctx context.Context, key string, minBytes, maxBytes int64) (int64, error)
	// RenewStaging sets the lease of every live staging among keys to
	// expires, and returns the keys it did not renew (gone or expired: an
	// expired staging is never revived).
	RenewStaging(ctx context.Context, keys []string, expires time.Time) ([]string, error)
	// Unstage deletes the stagings of keys (uploads that failed),
	// releasing their reservations. Unknown keys are ignored; declared
	// sizes go only with their upload.
	Unstage(ctx context.Context, keys []string) error
	// DeleteExpiredStaging deletes stagings that expired before t (their
	// writers died or stalled) and returns how many: their blobs become
	// orphans. Callers give a t well before now (the orphan grace), so
	// that clock skew between nodes cannot take a staging its writer
	// still believes live. A declared size goes when its upload expired.
	DeleteExpiredStaging(ctx context.Context, before time.Time) (int, error)

	// Ping checks the store is reachable (for /readyz).
	Ping(ctx context.Context) error
	Close() error
}

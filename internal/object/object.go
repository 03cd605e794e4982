// Package object is Coffer's object service: buckets and objects on top of
// a metadata store and a blob store. It is the only package that touches
// both, and the only place that decides who may do what to a bucket, so the
// file API and the S3 API cannot disagree on either.
//
// # Invariants
//
//   - A blob is durable before the metadata that points at it commits; a
//     2xx answer therefore means the object survives kill -9 and power loss.
//   - Blobs are written under fresh keys and never overwritten: an
//     overwrite is a new blob plus a pointer swap in one metadata
//     transaction, so readers see the old or the new object, never a mix.
//   - Replaced and deleted blobs are queued in the same transaction and
//     reclaimed after a grace period, once re-checked (at delete time) that
//     no row points at them again; blobs no row points at (a crash
//     between blob write and commit) are collected by CollectOrphans.
//   - A blob is staged in the metadata store before its first byte is
//     written (see staging.go): the staging reserves the upload's bytes
//     against the bucket owner's quota while it is in flight, and keeps
//     every node's orphan collection off the blob.
//   - Every operation authorises its Actor against the bucket first.
//
// # Shape
//
// Service is the object and bucket operations (objects.go, write.go,
// buckets.go) and the janitor (gc.go); it embeds the multipart and tus
// uploads (Uploads: multipart.go, tus.go), the share links (Shares:
// shares.go) and the background jobs of encryption at rest
// (EncryptionJobs: encryptionjobs.go), which share one core: the stores, the
// configuration, authorisation, uploads in flight (staging.go) and
// encryption (encrypt.go).
//
// Every object operation resolves its bucket once (core.authorize): the
// bucket record and the backend its objects live in (backend.go), native
// (rows in the metadata store, bytes in the blob store) or a gateway's S3
// bucket (gateway.go). Nothing else in the package asks which it is.
package object

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"github.com/coffer-storage/coffer/internal/audit"
	"log/slog"
	"mime"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Config of the service. New takes it as given: build it with ConfigFrom
// (from config.Defaults() for the defaults), which reads config.Config's
// fields of the same names.
type Config struct {
	// MaxObjectSize bounds a single streamed upload.
	MaxObjectSize int64
	// GarbageGrace is how long a replaced or deleted blob is kept before it
	// is reclaimed, so readers that looked it up just before can open it.
	GarbageGrace time.Duration
	// Pressure, when set, reports whether the blob store's disk is short
	// of space (diskblob.Store.Pressure). While it is, the janitor looks
	// every second and reclaims deleted and replaced blobs PressureGrace
	// after they were queued instead of GarbageGrace, except the blobs a
	// reader of this process has open (readers). Set it only for a store
	// that no other process reads (the embedded shape's local disk):
	// another node's readers are not counted (see pressure.go).
	Pressure func() bool
	// Room, when set, fails with errcode.StorageFull if n more bytes
	// would leave the disk short of its reserve (diskblob.Store.Room):
	// asked before an inline object is written, whose bytes go to the
	// metadata database on the same disk.
	Room func(n int64) error
	// PressureGrace is GarbageGrace under Pressure: it covers a reader
	// between its lookup of the object and its opening of the blob.
	PressureGrace time.Duration
	// OrphanGrace is the minimum age of an unreferenced blob before it is
	// collected as an orphan.
	OrphanGrace time.Duration
	// InlineMax is the largest object (of known size) stored inline in the
	// metadata store instead of as a blob: it commits with its metadata in
	// one transaction, saving a file create and two fsyncs. 0 disables
	// inlining (--inline-max 0).
	InlineMax int64
	// Unlimited, when set, reports from a cache whether a user exists
	// and has no quota (auth.Users.Unlimited): a small upload to such an
	// owner's bucket skips the read of the owner's row its fail-fast
	// quota check makes before the body (10-15 % of a 1 KiB PUT's CPU).
	// The commit checks the quota exactly either way. nil: always read.
	Unlimited func(ctx context.Context, userID string) (bool, error)
	// StagingLease is the lease of an upload in flight (meta.Staging): the
	// writing node renews it every StagingLease/3; if the node dies, its
	// reservations lapse and its blobs become orphans this long after.
	StagingLease time.Duration
	// MultipartExpiry is how long an upload created without its own TTL
	// (CreateUploadInput.TTL 0: S3's multipart uploads) may stay
	// incomplete before the janitor aborts it.
	MultipartExpiry time.Duration
	// JanitorInterval is how often RunJanitor reclaims replaced blobs and
	// expired uploads (--janitor-interval); OrphanInterval how often it
	// looks for orphans (OrphanGrace, at most hourly).
	JanitorInterval, OrphanInterval time.Duration
	// Encrypt makes every new object, part and inline object encrypted at
	// rest with a data key from Keys (see encrypt.go).
	Encrypt bool
	// Keys issues and opens data keys: needed with Encrypt, and to read
	// objects written encrypted.
	Keys Keys
	// OpenGateway opens the backend of a gateway bucket (gateway.go);
	// nil: gateway buckets answer NotImplemented.
	OpenGateway OpenGateway
	// LifecycleDay is the length of a lifecycle day (0: 24 hours; shorter
	// only in tests, config.Config.LifecycleDay).
	LifecycleDay time.Duration
	// ClockOffset skews the service's clock (TEST ONLY, the fault
	// harness: config.Config.ClockOffset).
	ClockOffset time.Duration
	// Audit receives the events of deletes, bucket documents (policy,
	// ACL, lock, lifecycle, CORS, ...), retention and governance bypass,
	// and share links, for both APIs (the server sets it; nil: off).
	Audit *audit.Logger
	// VerifyReads checks a whole read of a plaintext object against its
	// recorded CRC-32C (or SHA-256) while it streams (verify.go;
	// --verify-reads).
	VerifyReads bool
}

// ConfigFrom returns the service's configuration in c: its size limits,
// graces, staging lease, upload expiry, janitor intervals and
// --encryption. Keys and OpenGateway are the caller's to add.
func ConfigFrom(c config.Config) Config {
	return Config{
		MaxObjectSize: c.MaxObjectSize, GarbageGrace: c.GarbageGrace, PressureGrace: c.PressureGrace, OrphanGrace: c.OrphanGrace,
		InlineMax: c.InlineMax, StagingLease: c.StagingLease, Encrypt: c.Encryption == "on",
		MultipartExpiry: c.MultipartExpiry, JanitorInterval: c.JanitorInterval, OrphanInterval: OrphanInterval(c),
		LifecycleDay: c.LifecycleDay, ClockOffset: c.ClockOffset, VerifyReads: c.VerifyReads,
	}
}

// OrphanInterval is how often the janitors look for orphans and dead
// rows: every --orphan-grace, at most hourly.
func OrphanInterval(c config.Config) time.Duration { return min(c.OrphanGrace, time.Hour) }

// Service is the object service.
type Service struct {
	*core
	*Uploads
	*Shares
	*EncryptionJobs
	lifecycle *LifecycleWorker
	scrubber  *Scrubber
}

// core is what every part of the service shares: the stores, the
// configuration, and the machinery of authorisation (below), uploads in
// flight (staging.go) and encryption (encrypt.go).
type core struct {
	meta  Stores
	blobs blob.Store
	cfg   Config
	log   *slog.Logger
	now   func() time.Time

	// staging holds the blobs this node is writing or has written and not
	// yet committed (a form upload can stage files for a long time), whose
	// leases it renews (see staging.go).
	stagingMu   sync.Mutex
	staging     map[string]*staging
	renewing    bool // renewStagings runs
	stagedBytes atomic.Int64

	gw gateways // the opened backends of gateway buckets

	policies policyCache // parsed bucket policies (policy.go)

	reading   readers      // blobs open for reading in this process (pressure.go)
	readStats ReadStats    // damaged reads (verify.go)
	janitor   JanitorStats // the janitor's work (gc.go)
	recorded  sync.Map     // blob key → when a read last recorded it damaged (verify.go)

	streams streamCache // decryption streams of recently read encrypted blobs (keycache.go)
}

// New returns a Service over m and b, configured by cfg as it is (see
// ConfigFrom).
func New(m Stores, b blob.Store, cfg Config, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &core{meta: m, blobs: b, cfg: cfg, log: log, now: time.Now, staging: map[string]*staging{}}
	if off := cfg.ClockOffset; off != 0 {
		c.now = func() time.Time { return time.Now().Add(off) }
	}
	return &Service{core: c, Uploads: &Uploads{c}, Shares: &Shares{c}, EncryptionJobs: &EncryptionJobs{core: c}, lifecycle: &LifecycleWorker{core: c}, scrubber: &Scrubber{core: c}}
}

// bucket is an authorised bucket and the backend its objects live in.
type bucket struct {
	meta.Bucket
	backend
}

// MaxObjectSize is the largest object an upload may make.
func (s *core) MaxObjectSize() int64 { return s.cfg.MaxObjectSize }

// newBlobKey returns a fresh, never reused blob key: a fan-out directory,
// then the creation time in milliseconds and 64 random bits.
func newBlobKey() string {
	var r [8]byte
	rand.Read(r[:])
	return fmt.Sprintf("o/%02x/%012x%016x", r[0], time.Now().UnixMilli(), binary.BigEndian.Uint64(r[:]))
}

// guessType returns the media type of key's extension, or
// application/octet-stream.
func guessType(key string) string {
	if ct := mime.TypeByExtension(path.Ext(key)); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

// ErrNoBucket, ErrNoObject and ErrNoUpload are the NotFound errors of the
// service; Detail["resource"] tells the APIs which one it is.
func ErrNoBucket(name string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: "bucket not found", Detail: map[string]any{"resource": "bucket"}}
}

// ErrNoObject is the NotFound error for a missing object.
func ErrNoObject(key string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: "object not found", Detail: map[string]any{"resource": "key"}}
}

// ErrDeleteMarker is the NotFound error for a key whose latest version is
// the delete marker versionID: Detail["delete_marker"] and
// Detail["version_id"] say so (S3's x-amz-delete-marker).
func ErrDeleteMarker(versionID string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: "object not found",
		Detail: map[string]any{"resource": "key", "delete_marker": true, "version_id": versionID}}
}

// ErrNoVersion is the NotFound error for a version that does not exist.
func ErrNoVersion(versionID string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: fmt.Sprintf("version %q not found", versionID), Detail: map[string]any{"resource": "version"}}
}

// ErrVersionIsDeleteMarker is the error of reading a version that is a
// delete marker: MethodNotAllowed (S3's 405), with Detail as
// ErrDeleteMarker's.
func ErrVersionIsDeleteMarker(versionID string) error {
	return &errcode.Error{Code: errcode.MethodNotAllowed, Message: "The specified method is not allowed against this resource.",
		Detail: map[string]any{"delete_marker": true, "version_id": versionID}}
}

// ErrNoUpload is the NotFound error for a missing multipart upload.
func ErrNoUpload(id string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: "upload not found", Detail: map[string]any{"resource": "upload"}}
}

func quotaErr(u meta.User) error {
	return &errcode.Error{Code: errcode.QuotaExceeded, Message: "storage quota exceeded",
		Detail: map[string]any{"quota_bytes": u.QuotaBytes, "usage_bytes": u.UsageBytes}}
}

// audit records action by a on t with the outcome of err (nil: success).
func (s *core) audit(ctx context.Context, a Actor, action audit.Action, t audit.Target, err error) {
	s.auditReason(ctx, a, action, t, "", err)
}

// auditReason is audit with a reason for a success (a failure's reason is
// its error code's name).
func (s *core) auditReason(ctx context.Context, a Actor, action audit.Action, t audit.Target, why audit.Reason, err error) {
	if s.cfg.Audit == nil {
		return
	}
	e := audit.Event{Action: action, Actor: auditActor(a), Target: t, Reason: why}.Result(err)
	s.cfg.Audit.Log(ctx, e)
}

// auditActor is a as the audit log names it.
func auditActor(a Actor) audit.Actor {
	switch {
	case a.KeyID != "":
		return audit.Key(a.KeyID, a.UserID)
	case a.Share:
		return audit.Actor{Type: audit.ActorAnonymous, User: a.UserID}
	case a.UserID != "":
		return audit.User(a.UserID)
	}
	return audit.Anonymous("")
}

// deleted is the reason of a bucket document set to nothing.
func deleted(yes bool) audit.Reason {
	if yes {
		return audit.ReasonDeleted
	}
	return ""
}

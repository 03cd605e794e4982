package meta

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Background jobs of encryption at rest (docs/encryption.md#background-jobs)
//
// An EncryptionJob is a row every node sees: the re-wrap of data keys after a key
// rotation ("rewrap"), or the encryption of plaintext objects ("encrypt:"
// + bucket, "encrypt:" for every bucket). One node at a time works on a
// job, under a lease (AcquireJob, renewed by every SaveJob), and
// records after each page the keyset cursor it reached, so a job resumes
// where it stopped after a crash or on another node. The rows a job
// changes are changed by compare-and-swap (SwapEnvelope; PutObjects with
// Cond.IfVersion), so a job that lost its lease without knowing it, or a
// concurrent overwrite, never clobbers anything.

// Job kinds and states.
const (
	JobRewrap  = "rewrap"
	JobEncrypt = "encrypt"

	JobRunning = "running"
	JobDone    = "done"
)

// RewrapJobName is the name of the re-wrap job (there is one).
const RewrapJobName = JobRewrap

// EncryptJobName is the name of the job encrypting bucket's plaintext
// objects ("" = every bucket).
func EncryptJobName(bucket string) string { return JobEncrypt + ":" + bucket }

// EncryptionJob is a background job of encryption at rest and its progress.
type EncryptionJob struct {
	Name   string // RewrapJobName or EncryptJobName(Bucket)
	Kind   string // JobRewrap or JobEncrypt
	Bucket string // JobEncrypt: the bucket, "" = every bucket
	State  string // JobRunning or JobDone
	// Generation is bumped by every StartJob: a worker's save of an
	// older generation fails (the job was restarted under it).
	Generation int64
	// Phase is the EnvelopeTable the cursor is in (rewrap: objects, then
	// object parts, then upload parts; encrypt: objects only), Cursor the
	// last row done there (EnvelopeRef.Encode; "" = from the start).
	Phase  EnvelopeTable
	Cursor string
	// Pass counts the passes over the tables (a rewrap runs until a whole
	// pass changed nothing: rows written under the old key while it ran
	// are caught by the next one); PassChanged is what the current pass
	// changed so far.
	Pass        int64
	PassChanged int64
	// Done counts rows changed (re-wrapped, objects encrypted), Skipped
	// rows seen that needed nothing or changed under the job (a
	// concurrent overwrite won), Failed rows that could not be changed
	// (LastError says why; they are left as they are).
	Done, Skipped, Failed int64
	LastError             string
	LeaseOwner            string
	LeaseUntil            time.Time
	CreatedAt, UpdatedAt  time.Time
	FinishedAt            time.Time // zero while running
}

// ErrJobLeaseLost is SaveJob's error when the caller no longer holds
// the job (its lease expired and another node took it, or the job was
// restarted): Conflict with Detail["reason"] = "job_lease_lost".
func ErrJobLeaseLost(name string) error {
	return &errcode.Error{Code: errcode.Conflict, Message: "the job " + name + " is no longer held by this worker",
		Detail: map[string]any{"reason": "job_lease_lost"}}
}

// EnvelopeTable names where envelopes are kept.
type EnvelopeTable int

// The tables holding envelopes, in the order a re-wrap visits them.
const (
	EnvelopeObjects     EnvelopeTable = 0 // objects: single-blob and inline objects
	EnvelopeObjectParts EnvelopeTable = 1 // object_parts: the parts of multipart objects
	EnvelopeUploadParts EnvelopeTable = 2 // upload_parts: the parts of uploads in progress (S3 multipart, tus)
)

// EnvelopeRef names one row holding an envelope, and is a keyset cursor:
// (Bucket, Key, VersionID) for objects, every version of a key included,
// (PartsID, Index) for object parts, (UploadID, Number) for upload parts.
type EnvelopeRef struct {
	Table     EnvelopeTable
	Bucket    string
	Key       string
	VersionID string
	PartsID   int64
	Index     int
	UploadID  string
	Number    int
}

// cursorJSON is the stored form of an EnvelopeRef: strings as bytes
// (base64), since keys need not be valid UTF-8.
type cursorJSON struct {
	Table    EnvelopeTable `json:"t"`
	Bucket   []byte        `json:"b,omitempty"`
	Key      []byte        `json:"k,omitempty"`
	Version  string        `json:"v,omitempty"`
	PartsID  int64         `json:"p,omitempty"`
	Index    int           `json:"i,omitempty"`
	UploadID []byte        `json:"u,omitempty"`
	Number   int           `json:"n,omitempty"`
}

// EnvelopeRow is a row with an envelope, as ListEnvelopes returns it.
type EnvelopeRow struct {
	Ref      EnvelopeRef
	Envelope []byte
	KEK      string
}

// EncryptionJobs keeps the background jobs of encryption at rest (re-wrap,
// encrypt) and gives them the rows to work on.
type EncryptionJobs interface {
	// StartJob creates job j.Name (Kind and Bucket from j) in state
	// running, or restarts it: cursor, pass and counters reset,
	// Generation+1, lease kept (its holder's next save fails). Returns
	// the job as stored. InvalidArgument for an unknown kind or a name
	// that is not the kind's.
	StartJob(ctx context.Context, j EncryptionJob) (EncryptionJob, error)
	// GetJob returns the job; NotFound if none.
	GetJob(ctx context.Context, name string) (EncryptionJob, error)
	// ListJobs returns every job, by name.
	ListJobs(ctx context.Context) ([]EncryptionJob, error)
	// AcquireJob leases to owner, until, the oldest running job whose
	// lease is free, expired at now, or owner's already; ok false if
	// there is none. Of concurrent callers exactly one gets a job.
	AcquireJob(ctx context.Context, owner string, until, now time.Time) (j EncryptionJob, ok bool, err error)
	// SaveJob records j's progress (Phase, Cursor, Pass, PassChanged,
	// counters, LastError, State; FinishedAt is set when State becomes
	// done, and the lease is released) and extends the lease to until,
	// if owner still holds job j.Name of j.Generation; else
	// ErrJobLeaseLost and nothing changes. A lease that ran out still
	// holds until another owner acquires the job: a save that comes late
	// (a page longer than the lease, a stalled heartbeat) keeps the work
	// it records, which no one else has saved over.
	SaveJob(ctx context.Context, j EncryptionJob, owner string, until, now time.Time) error
	// ListEnvelopes returns up to limit rows of table, after the row
	// after (its keyset position; a zero ref of the table starts at the
	// beginning), in key order, whose envelope is wrapped under a KEK
	// other than "" (plaintext, customer keys) and kekNot.
	ListEnvelopes(ctx context.Context, table EnvelopeTable, after *EnvelopeRef, kekNot string, limit int) ([]EnvelopeRow, error)
	// SwapEnvelope sets the envelope of the row ref to env (wrapped under
	// kek) if it is still old, and reports whether it did: false if the
	// row is gone or holds another envelope (it was overwritten).
	SwapEnvelope(ctx context.Context, ref EnvelopeRef, old, env []byte, kek string) (bool, error)
	// KEKUsage counts the rows (objects, object parts, upload parts)
	// whose data key is wrapped under each KEK (kms.KeyRef.String()).
	KEKUsage(ctx context.Context) (map[string]int64, error)
	// ListPlaintextObjects returns up to limit object versions of bucket
	// ("" = every bucket) after the version after (nil: from the start),
	// in (bucket, key, version ID) order, whose bytes are plaintext: no
	// envelope on the row nor on any of its parts; delete markers left out.
	// Objects only (Table EnvelopeObjects).
	ListPlaintextObjects(ctx context.Context, bucket string, after *EnvelopeRef, limit int) ([]EnvelopeRef, error)
}

// ValidJob checks what StartJob is given.
func ValidJob(j EncryptionJob) error {
	switch {
	case j.Kind == JobRewrap && j.Name == RewrapJobName && j.Bucket == "":
	case j.Kind == JobEncrypt && j.Name == EncryptJobName(j.Bucket):
	default:
		return errcode.New(errcode.InvalidArgument, "job %q of kind %q is not a known job", j.Name, j.Kind)
	}
	return nil
}

// Version identifies one stored version of an object: its bytes'
// location and envelopes (blob keys are never reused; inline bytes are
// hashed), and everything readers see of it (size, ETag, SHA-256,
// checksum, content type, user metadata, modification time; not its tags,
// which a job that rewrites bytes keeps: see Cond.IfTags). Two reads of
// a key return the same Version only if nothing rewrote the object in
// between. See Cond.IfVersion.
func Version(o Object) string {
	h := sha256.New()
	str := func(s string) {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	str(o.Bucket)
	str(o.Key)
	str(o.VersionID)
	str(o.BlobKey)
	str(string(o.Inline))
	str(string(o.Encryption))
	str(o.EncryptionKEK)
	for _, p := range o.Parts {
		str(p.BlobKey)
		str(p.ETag)
		str(p.Checksum)
		str(string(p.Encryption))
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(p.Size)))
	}
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(o.Parts))))
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(o.Size)))
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(o.ModTime.UnixNano())))
	str(o.ETag)
	str(o.SHA256)
	str(o.ContentType)
	str(o.Checksum.Algorithm)
	str(o.Checksum.Type)
	str(o.Checksum.Value)
	for _, k := range slices.Sorted(maps.Keys(o.Metadata)) {
		str(k)
		str(o.Metadata[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Encode returns r as a job cursor (EncryptionJob.Cursor).
func (r EnvelopeRef) Encode() string {
	b, _ := json.Marshal(cursorJSON{Table: r.Table, Bucket: []byte(r.Bucket), Key: []byte(r.Key), Version: r.VersionID, PartsID: r.PartsID,
		Index: r.Index, UploadID: []byte(r.UploadID), Number: r.Number})
	return string(b)
}

// ParseCursor reads a job cursor of table: nil for "" (from the start).
// InvalidArgument for anything Encode does not write for that table.
func ParseCursor(table EnvelopeTable, s string) (*EnvelopeRef, error) {
	if s == "" {
		return nil, nil
	}
	var c cursorJSON
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	err := d.Decode(&c)
	r := EnvelopeRef{Table: c.Table, Bucket: string(c.Bucket), Key: string(c.Key), VersionID: c.Version, PartsID: c.PartsID, Index: c.Index,
		UploadID: string(c.UploadID), Number: c.Number}
	if err != nil || d.More() || r.Table != table || r.Encode() != s {
		return nil, errcode.New(errcode.InvalidArgument, "malformed job cursor %q", s)
	}
	return &r, nil
}

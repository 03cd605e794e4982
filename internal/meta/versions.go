package meta

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Versions (S3 versioning)
//
// Every object row is a version: (bucket, key, VersionID), with a latest
// flag or a delete marker. A bucket is Unversioned until versioning is
// enabled, then Enabled or Suspended, never Unversioned again. A write into
// an Enabled bucket adds a version (the latest until the next); a write
// into a bucket that is not Enabled (never versioned, or suspended)
// replaces the key's null version, wherever it is among the key's
// versions, by a new latest null version. An unversioned bucket is the
// special case with one null version per key, not a second code path.
//
// Versions of a key are ordered newest first by a sequence string the
// store keeps with each row (for a version that is not null, its version
// ID; for a null version, one made the same way when it was written): a
// new version's sequence always sorts before the key's latest one's
// (NewVersionID), whatever the clocks of the nodes say, so "latest" and
// "first in the order" agree. The SQL stores key their rows by (bucket,
// key, sequence) (migration 0022): the latest version is the key's first
// row, one seek with no index of its own; a version that is not null is
// the seek of its ID (its sequence); the null version is found among its
// key's rows (the only one in a bucket never versioned), and a write that
// gives it a new sequence removes its old row (one null version per key
// is the stores' rule, not an index's). A null version that replaces the
// latest keeps its sequence (PlanVersion), so an overwrite in a bucket
// never versioned rewrites its row in place.

// Versioning is a bucket's versioning state.
type Versioning string

// The versioning states.
const (
	Unversioned         Versioning = ""          // never enabled
	VersioningEnabled   Versioning = "Enabled"   // writes add versions
	VersioningSuspended Versioning = "Suspended" // writes replace the null version; older versions stay
)

// NullVersion is the version ID of a write into a bucket that is not
// versioned (never enabled, or suspended).
const NullVersion = "null"

// CheckVersioning checks SetBucketVersioning's state: Enabled or
// Suspended (a bucket never goes back to Unversioned).
func CheckVersioning(v Versioning) error {
	if v != VersioningEnabled && v != VersioningSuspended {
		return errcode.New(errcode.InvalidArgument, "versioning must be %q or %q, not %q", VersioningEnabled, VersioningSuspended, v)
	}
	return nil
}

// versionIDLen is the length of a version ID: 16 hex digits of the time
// (counted down, so that newer sorts first) and 16 of random bits.
const versionIDLen = 32

// NewVersionID returns a version ID (or the sequence of a null version)
// made at now, unique across nodes (64 random bits), which sorts before
// after (a key's latest sequence; "" none): made at now, or, if after was
// made at or after now (another node's clock runs ahead), one nanosecond
// after it.
func NewVersionID(now time.Time, after string) string {
	t := now.UnixNano()
	if at, ok := versionTime(after); ok && t <= at {
		t = at + 1
	}
	var r [8]byte
	rand.Read(r[:])
	return fmt.Sprintf("%016x%016x", uint64(math.MaxInt64-t), binary.BigEndian.Uint64(r[:]))
}

// versionTime returns the Unix nanoseconds a version ID was made at.
func versionTime(id string) (int64, bool) {
	if len(id) != versionIDLen {
		return 0, false
	}
	n, err := strconv.ParseUint(id[:16], 16, 64)
	if err != nil || n > math.MaxInt64 {
		return 0, false
	}
	return math.MaxInt64 - int64(n), true
}

// ValidVersionID reports whether id is a version ID a client may name:
// NullVersion, or one NewVersionID makes (32 lower-case hex digits).
func ValidVersionID(id string) bool {
	if id == NullVersion {
		return true
	}
	if len(id) != versionIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// NewVersion is where a write puts its version among the key's.
type NewVersion struct {
	VersionID string // NullVersion unless the bucket is Enabled
	Seq       string // its place among the key's versions (ascending: newest first)
	// ReplacesNull: the key's null version, if any, is removed (its
	// blobs enqueued, its size no longer counted); otherwise every
	// version stays, the latest one no longer latest.
	ReplacesNull bool
}

// PlanVersion decides the version a write into a bucket in state v makes,
// at now, at a key whose latest version is latestID with the sequence
// latestSeq ("": none). A null version that replaces the latest one (the
// only one, in a bucket never versioned) keeps its place, so that an
// overwrite changes no index of the order.
func PlanVersion(v Versioning, latestID, latestSeq string, now time.Time) NewVersion {
	if v != VersioningEnabled && latestID == NullVersion && latestSeq != "" {
		return NewVersion{VersionID: NullVersion, Seq: latestSeq, ReplacesNull: true}
	}
	seq := NewVersionID(now, latestSeq)
	if v == VersioningEnabled {
		return NewVersion{VersionID: seq, Seq: seq}
	}
	return NewVersion{VersionID: NullVersion, Seq: seq, ReplacesNull: true}
}

// ErrNoVersion is the error of a version ID that names no version of the
// key: NotFound with Detail["reason"] = "no_such_version".
func ErrNoVersion(bucket, key, id string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: fmt.Sprintf("version %q of %q not found in bucket %q", id, key, bucket),
		Detail: map[string]any{"reason": "no_such_version", "version_id": id}}
}

// ErrDeleteMarker is GetObject's error when the key's latest version is a
// delete marker: NotFound with Detail["delete_marker"] = true and
// Detail["version_id"] the marker's.
func ErrDeleteMarker(bucket, key, versionID string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: fmt.Sprintf("object %q not found in bucket %q", key, bucket),
		Detail: map[string]any{"delete_marker": true, "version_id": versionID}}
}

// ErrMoveVersioned is MoveObject's refusal when either bucket is or was
// versioned (a move would take a version out of its key's history):
// Conflict with Detail["reason"] = "versioned_bucket". The caller copies
// and deletes instead.
func ErrMoveVersioned() error {
	return &errcode.Error{Code: errcode.Conflict, Message: "objects of versioned buckets are copied and deleted, not moved",
		Detail: map[string]any{"reason": "versioned_bucket"}}
}

// IsMoveVersioned reports whether err is ErrMoveVersioned.
func IsMoveVersioned(err error) bool {
	e := errcode.As(err)
	return e != nil && e.Code == errcode.Conflict && e.Detail["reason"] == "versioned_bucket"
}

// VersionListOptions selects a page of a bucket's versions (S3's
// ListObjectVersions).
type VersionListOptions struct {
	Prefix    string
	Delimiter string
	// KeyMarker alone resumes after every version of that key (and, if it
	// is a common prefix, after everything under it); with
	// VersionIDMarker, after that version of KeyMarker, and if it no
	// longer exists, from the first version of KeyMarker (repeating
	// rather than skipping). VersionIDMarker must be valid
	// (ValidVersionID) and needs a KeyMarker.
	KeyMarker, VersionIDMarker string
	Limit                      int // versions, delete markers and common prefixes; 0 means 1000
}

// CheckVersionListOptions checks opts (InvalidArgument, in S3's words).
func CheckVersionListOptions(opts VersionListOptions) error {
	switch {
	case opts.VersionIDMarker != "" && opts.KeyMarker == "":
		return errcode.New(errcode.InvalidArgument, "A version-id marker cannot be specified without a key marker.")
	case opts.VersionIDMarker != "" && !ValidVersionID(opts.VersionIDMarker):
		return errcode.New(errcode.InvalidArgument, "Invalid version id specified")
	}
	return nil
}

// VersionPage is one page of a version listing: by key in byte order,
// each key's versions newest first.
type VersionPage struct {
	// Versions are the versions and delete markers (DeleteMarker), with
	// VersionID and IsLatest; no inline bytes, envelopes or parts.
	Versions       []Object
	CommonPrefixes []string
	// Truncated says there is more: continue with KeyMarker =
	// NextKeyMarker and VersionIDMarker = NextVersionIDMarker ("" after a
	// common prefix).
	Truncated                          bool
	NextKeyMarker, NextVersionIDMarker string
}

// Versioned is a version as a version scan returns it: the object and its
// sequence.
type Versioned struct {
	Object
	Seq string
}

// VersionScanFunc fetches up to limit versions of one bucket in (key, Seq)
// order, from (fromKey, fromSeq) on (after it unless inclusive), and, if
// end != "", with key < end.
type VersionScanFunc func(ctx context.Context, fromKey, fromSeq string, inclusive bool, end string, limit int) ([]Versioned, error)

// ListVersions implements the listing semantics of VersionListOptions
// (prefix, delimiter roll-up, markers, paging) on a backend's scan, as
// List does for the latest versions; nullSeq returns the sequence of the
// null version of a key (ok false: there is none), for a VersionIDMarker
// of NullVersion.
func ListVersions(ctx context.Context, scan VersionScanFunc, nullSeq func(ctx context.Context, key string) (string, bool, error), opts VersionListOptions) (VersionPage, error) {
	if err := CheckVersionListOptions(opts); err != nil {
		return VersionPage{}, err
	}
	limit := min(PageLimit(opts.Limit, DefaultListLimit, 0), MaxListLimit)
	prefix, delim := opts.Prefix, opts.Delimiter
	end := PrefixEnd(prefix)

	fromKey, fromSeq, inclusive := prefix, "", true
	if km := opts.KeyMarker; km != "" && km >= prefix {
		cp, rolled := commonPrefix(km, prefix, delim)
		switch vm := opts.VersionIDMarker; {
		case rolled && cp == km:
			// A common prefix: after everything under it (whatever
			// version marker came with it).
			if fromKey = PrefixEnd(km); fromKey == "" {
				return VersionPage{}, nil
			}
		case vm == "":
			// After every version of km: from the smallest key after it.
			fromKey = km + "\x00"
		case vm == NullVersion:
			seq, ok, err := nullSeq(ctx, km)
			if err != nil {
				return VersionPage{}, err
			}
			fromKey = km
			if ok {
				fromSeq, inclusive = seq, false
			}
		default:
			fromKey, fromSeq, inclusive = km, vm, false
		}
	}
	var page VersionPage
	if end != "" && fromKey >= end {
		return page, nil
	}
	n := 0
	rolledUp := false
	for {
		want := min(limit-n+1, 1001) // one extra tells whether the page is truncated
		if rolledUp {
			// Right after a common prefix the next row is often
			// another one (a folder per row of the page): a few rows
			// first, not the rest of the page each time.
			want = min(want, rollUpScan)
		}
		batch, err := scan(ctx, fromKey, fromSeq, inclusive, end, want)
		if err != nil {
			return VersionPage{}, err
		}
		jumped := false
		for _, v := range batch {
			if n == limit {
				page.Truncated = true
				return page, nil
			}
			if cp, ok := commonPrefix(v.Key, prefix, delim); ok {
				page.CommonPrefixes = append(page.CommonPrefixes, cp)
				page.NextKeyMarker, page.NextVersionIDMarker = cp, ""
				n++
				fromKey, fromSeq, inclusive = PrefixEnd(cp), "", true
				if fromKey == "" {
					return page, nil
				}
				jumped = true
				break
			}
			page.Versions = append(page.Versions, v.Object)
			page.NextKeyMarker, page.NextVersionIDMarker = v.Key, v.VersionID
			n++
			fromKey, fromSeq, inclusive = v.Key, v.Seq, false
		}
		if !jumped && len(batch) < want {
			return page, nil
		}
		rolledUp = jumped
	}
}

// rollUpScan is how many rows ListVersions asks for right after rolling
// up a common prefix.
const rollUpScan = 16

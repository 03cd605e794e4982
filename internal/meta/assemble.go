package meta

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// What CompleteUpload, CompleteBackendUpload and MoveObject decide, once
// for every backend: a backend reads the rows, calls these, and writes
// what they return.

// Assembly is what CompleteUpload makes of an upload in progress.
type Assembly struct {
	// Object is the object to write: the caller's, at the upload's bucket
	// and key, its Parts the listed parts in order, its Size their sum,
	// with no BlobKey and no Inline bytes.
	Object Object
	// Numbers are the listed part numbers, ascending: the upload parts
	// that become the object's parts (a number serves as its position).
	Numbers []int
	// Discarded are the upload's parts not listed, by number: their bytes
	// leave the owner's usage and their blobs go to the garbage queue.
	Discarded []Part
}

// AssembleUpload checks a CompleteUpload of the upload at bucket/key whose
// recorded parts are have (in any order), and builds its Assembly from
// obj, the caller's object (see Store.CompleteUpload). The checks run in
// the contract's order, each over every listed part before the next:
// invalid_part_order, invalid_part, entity_too_small. That the upload
// exists is checked before, the Cond after (on the object the assembly
// replaces). A zero obj.ModTime is set to now.
func AssembleUpload(obj Object, bucket, key string, have []Part, parts []CompletePart, minPartSize int64, now time.Time) (Assembly, error) {
	if len(parts) == 0 {
		return Assembly{}, PartError("invalid_part_order", 0, "list at least one part")
	}
	for i := 1; i < len(parts); i++ {
		if parts[i].Number <= parts[i-1].Number {
			return Assembly{}, PartError("invalid_part_order", 0, "parts must be listed in strictly ascending order")
		}
	}
	byNumber := make(map[int]Part, len(have))
	for _, p := range have {
		byNumber[p.Number] = p
	}
	for _, cp := range parts {
		p, ok := byNumber[cp.Number]
		if !ok || Unquote(p.ETag) != Unquote(cp.ETag) {
			return Assembly{}, PartError("invalid_part", cp.Number, "part %d was not uploaded or its ETag does not match", cp.Number)
		}
	}
	for _, cp := range parts[:len(parts)-1] {
		if byNumber[cp.Number].Size < minPartSize {
			return Assembly{}, PartError("entity_too_small", cp.Number, "part %d is smaller than the minimum part size %d", cp.Number, minPartSize)
		}
	}
	a := Assembly{Object: obj, Numbers: make([]int, len(parts))}
	o := &a.Object
	o.Bucket, o.Key, o.BlobKey, o.Size, o.Inline = bucket, key, "", 0, nil
	o.ModTime = OrNow(o.ModTime, now)
	o.Parts = make([]ObjectPart, len(parts))
	for i, cp := range parts {
		p := byNumber[cp.Number]
		o.Parts[i] = ObjectPart{BlobKey: p.BlobKey, Size: p.Size, ETag: p.ETag, Checksum: p.Checksum,
			Encryption: p.Encryption, EncryptionKEK: p.EncryptionKEK}
		o.Size += p.Size
		a.Numbers[i] = cp.Number
		delete(byNumber, cp.Number)
	}
	for _, p := range byNumber {
		a.Discarded = append(a.Discarded, p)
	}
	sortParts(a.Discarded)
	return a, nil
}

// AssembleBackendUpload checks a CompleteBackendUpload of upload u (its
// ID, Bucket, Key and BlobKey as stored) and returns the object to write:
// obj, the caller's, at the upload's bucket and key, single-blob, with no
// Inline bytes. obj.BlobKey must be the upload's BlobKey, else
// InvalidArgument. A zero obj.ModTime is set to now. The upload's recorded
// parts, if any, are all discarded (PartsFreed).
func AssembleBackendUpload(obj Object, u Upload, now time.Time) (Object, error) {
	if u.BlobKey == "" || obj.BlobKey != u.BlobKey {
		return Object{}, errcode.New(errcode.InvalidArgument, "upload %q is not assembled by the blob backend into %q", u.ID, obj.BlobKey)
	}
	obj.Bucket, obj.Key, obj.Parts, obj.Inline = u.Bucket, u.Key, nil, nil
	obj.ModTime = OrNow(obj.ModTime, now)
	return obj, nil
}

// PartsFreed returns the total size of parts, the usage they release, and
// their blobs by part number, to enqueue.
func PartsFreed(parts []Part) (int64, []string) {
	parts = slices.Clone(parts)
	sortParts(parts)
	var freed int64
	blobs := make([]string, 0, len(parts))
	for _, p := range parts {
		freed += p.Size
		blobs = append(blobs, p.BlobKey)
	}
	return freed, blobs
}

// Freed is PartsFreed of the discarded parts.
func (a Assembly) Freed() (int64, []string) { return PartsFreed(a.Discarded) }

func sortParts(ps []Part) {
	slices.SortFunc(ps, func(a, b Part) int { return cmp.Compare(a.Number, b.Number) })
}

// PartError is the InvalidArgument error of a CompleteUpload check, with
// Detail["reason"] and, unless number is 0, Detail["part_number"].
func PartError(reason string, number int, format string, args ...any) error {
	e := errcode.As(errcode.New(errcode.InvalidArgument, format, args...))
	e.Detail = map[string]any{"reason": reason}
	if number != 0 {
		e.Detail["part_number"] = number
	}
	return e
}

// Unquote strips the quotes around an ETag.
func Unquote(etag string) string {
	if len(etag) >= 2 && etag[0] == '"' && etag[len(etag)-1] == '"' {
		return etag[1 : len(etag)-1]
	}
	return etag
}

// OrNow returns t, or now if t is zero.
func OrNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

// UsageDelta is a change of one owner's usage.
type UsageDelta struct {
	Owner string
	Bytes int64
}

// MoveUsage is how a MoveObject changes usage: the moved object's srcSize
// leaves srcOwner, and replaces dstSize (the object it replaces; 0 if
// none) at dstOwner. One delta per owner, by owner ID (the order writers
// lock owners in); a delta may be 0.
func MoveUsage(srcOwner string, srcSize int64, dstOwner string, dstSize int64) []UsageDelta {
	if srcOwner == dstOwner {
		return []UsageDelta{{srcOwner, -dstSize}}
	}
	ds := []UsageDelta{{srcOwner, -srcSize}, {dstOwner, srcSize - dstSize}}
	slices.SortFunc(ds, func(a, b UsageDelta) int { return cmp.Compare(a.Owner, b.Owner) })
	return ds
}

// PrecheckMove makes MoveObject's decisions before its transaction: the
// destination must be named (else InvalidArgument), and a move of a key
// onto itself changes nothing but must find the object (NotFound) and
// cond holding for it. done reports that the move is decided (o, err);
// otherwise the caller moves. get is the store's GetObject.
func PrecheckMove(ctx context.Context, get func(ctx context.Context, bucket, key string) (Object, error),
	srcBucket, srcKey, dstBucket, dstKey string, cond Cond) (o Object, done bool, err error) {
	if dstBucket == "" || dstKey == "" {
		return Object{}, true, errcode.New(errcode.InvalidArgument, "destination bucket and key are required")
	}
	if srcBucket != dstBucket || srcKey != dstKey {
		return Object{}, false, nil
	}
	if o, err = get(ctx, srcBucket, srcKey); err != nil {
		return Object{}, true, err
	}
	if err := cond.Check(o, true); err != nil {
		return Object{}, true, err
	}
	return o, true, nil
}

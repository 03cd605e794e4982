package object

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/detach"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Writes
//
// Every object upload (the file API's PUT and form uploads, S3's PutObject
// and CopyObject; not multipart parts) takes one path, top to bottom:
//
//  1. newIncoming checks the request, authorises it, resolves the bucket's
//     backend and decides the encryption of the bytes (writeSSE), before
//     any byte is read;
//  2. the backend writes: it fails fast on what it already knows (a
//     condition, the quota), takes a data key, builds the reader stack —
//     size limit and hashes (incoming.hashed), the upload's reservation
//     (staging.go), the seal (encrypt.go) — and stores the bytes: native
//     buckets inline in the row or in a fresh staged blob (native.stage
//     below), gateway buckets in their backend (gateway.go);
//  3. commit makes the staged uploads visible in one metadata
//     transaction (a gateway's write is visible when stored).

// PutInput describes one object upload.
type PutInput struct {
	Bucket, Key string
	Body        io.Reader
	Size        int64 // exact size, or -1 if unknown (chunked)
	ContentType string
	Metadata    map[string]string
	// Tags is the new version's tag set (nil: none; meta.CheckTags).
	Tags []meta.Tag
	// Lock is the new version's lock (lock.go): only in a bucket with
	// object lock (meta.ErrLockNotEnabled otherwise), a retention in the
	// future (ErrRetentionPast).
	Lock Lock
	// Client-announced digests (raw bytes), checked at EOF.
	SHA256, MD5 []byte
	// ChecksumAlgorithm, if set, makes the service compute and store that
	// S3 checksum; ChecksumWant, if set, must match it.
	ChecksumAlgorithm string
	ChecksumWant      []byte
	Cond              meta.Cond
	// SSE asks for encryption (the zero value: the server's default).
	SSE SSE
	// ACL is the ACL the new version asks for (acl.go; nil: none, the
	// writer's FULL_CONTROL alone). S3's x-amz-acl and x-amz-grant-*
	// headers, the POST form's acl field.
	ACL *ACL
}

// Put streams one object into storage and commits it.
func (s *Service) Put(ctx context.Context, a Actor, in PutInput) (meta.Object, error) {
	return s.put(ctx, a, in, nil)
}

// put is Put of a copy of from (nil: not a copy the blob store may make).
func (s *core) put(ctx context.Context, a Actor, in PutInput, from *copySource) (meta.Object, error) {
	w, err := s.newIncoming(ctx, a, in, from)
	if err != nil {
		return meta.Object{}, err
	}
	defer w.close()
	o, err := w.bucket.put(ctx, w)
	return reported(w.bucket.Bucket, o), err
}

// incoming is an upload checked, authorised, its bucket's backend
// resolved and its encryption decided: PutInput with ContentType and Body
// defaulted and SSE final (Mode 0: plaintext).
type incoming struct {
	PutInput
	bucket bucket
	limit  int64 // Config.MaxObjectSize
	// from is the source of a copy the blob store may make itself (see
	// copy.go); its Body is opened by hashed if the bytes stream after
	// all.
	from   *copySource
	opened io.Closer
	// owner and grants are the new version's Owner and ACL (writeACL).
	owner  string
	grants []meta.Grant
}

// newIncoming is the first step of every upload (see above).
func (s *core) newIncoming(ctx context.Context, a Actor, in PutInput, from *copySource) (*incoming, error) {
	if err := ValidKey(in.Key); err != nil {
		return nil, err
	}
	if err := ValidMetadata(in.Metadata); err != nil {
		return nil, err
	}
	if err := meta.CheckTags(in.Tags, meta.MaxObjectTags); err != nil {
		return nil, err
	}
	if err := checkLock(in.Lock, s.now()); err != nil {
		return nil, err
	}
	b, err := s.authorize(ctx, a, in.Bucket, "s3:PutObject", in.Key)
	if err != nil {
		return nil, err
	}
	if in.Size > s.cfg.MaxObjectSize {
		return nil, errTooLarge(s.cfg.MaxObjectSize)
	}
	owner, grants, err := s.writeACL(ctx, a, b.Bucket, in.ACL)
	if err != nil {
		return nil, err
	}
	if in.SSE, err = s.writeSSE(ctx, a, b.Bucket, in.SSE); err != nil {
		return nil, err
	}
	if in.ContentType == "" {
		in.ContentType = guessType(in.Key)
	}
	if in.Body == nil && from == nil {
		in.Body = strings.NewReader("")
	}
	return &incoming{PutInput: in, bucket: b, limit: s.cfg.MaxObjectSize, from: from, owner: owner, grants: grants}, nil
}

func errTooLarge(limit int64) error {
	return errcode.New(errcode.TooLarge, "object larger than the limit of %d bytes", limit)
}

// hashed returns the body under the size limit, hashed as it streams
// (SHA-256, MD5, the S3 checksum asked for) and checked at EOF against
// the client's digests: the bottom of every upload's reader stack. The
// body of a copy the store did not make is opened here.
func (w *incoming) hashed() (*integrity.Reader, error) {
	if w.Body == nil {
		rc, err := w.from.open()
		if err != nil {
			return nil, err
		}
		w.Body, w.opened = rc, rc
	}
	return integrity.NewReader(w.Body, integrity.Options{
		Size: w.Size, Limit: w.limit, LimitErr: func() error { return errTooLarge(w.limit) },
		SHA256: w.SHA256, MD5: w.MD5,
		ChecksumAlgorithm: w.ChecksumAlgorithm, ChecksumWant: w.ChecksumWant,
	}), nil
}

// close closes what hashed opened.
func (w *incoming) close() {
	if w.opened != nil {
		w.opened.Close()
	}
}

// measured records in o what r measured of the plaintext: its SHA-256
// and S3 checksum.
func (w *incoming) measured(o *meta.Object, r *integrity.Reader) {
	o.SHA256 = hex.EncodeToString(r.SHA256())
	o.Checksum = checksumOf(w.ChecksumAlgorithm, r.Checksum())
}

func checksumOf(name string, sum []byte) meta.Checksum {
	alg, _ := integrity.ParseAlgorithm(name) // the Reader that computed sum parsed it
	if alg == integrity.NoChecksum || sum == nil {
		return meta.Checksum{}
	}
	return meta.Checksum{Algorithm: alg.String(), Type: "FULL_OBJECT", Value: alg.Encode(sum)}
}

// staged is an upload written durably but not yet committed: a staged blob
// (with its reserver), or inline bytes.
type staged struct {
	put meta.Put
	rv  *reserver // nil for inline bytes
}

func (n *native) put(ctx context.Context, w *incoming) (meta.Object, error) {
	st, err := n.stage(ctx, w)
	if err != nil {
		return meta.Object{}, err
	}
	objs, err := n.s.commit(ctx, []staged{st})
	if err != nil {
		return meta.Object{}, err
	}
	return objs[0], nil
}

// stage writes w's bytes: small ones of known size into memory (inline),
// others to a fresh staged blob.
func (n *native) stage(ctx context.Context, w *incoming) (staged, error) {
	s := n.s
	// Fail fast, before reading the body: a lock in a bucket without
	// object lock, create-only on an existing key, If-Match on a missing
	// or different object.
	if w.Lock.set() && !n.bucket.ObjectLock.Enabled {
		return staged{}, meta.ErrLockNotEnabled(n.bucket.Name)
	}
	var old meta.Object
	looked := w.Cond.IfNoneMatch || w.Cond.IfMatch != "" || w.Cond.IfNoneMatchETag != "" // old is the current object, if any
	if looked {
		cur, err := s.meta.GetObject(ctx, n.bucket.Name, w.Key)
		if err != nil && !errcode.Is(err, errcode.NotFound) {
			return staged{}, err
		}
		if err := w.Cond.Check(cur, err == nil); err != nil {
			return staged{}, err
		}
		old = cur
	}
	inline := s.cfg.InlineMax > 0 && w.Size >= 0 && w.Size <= s.cfg.InlineMax
	if inline && s.cfg.Room != nil {
		if err := s.cfg.Room(w.Size); err != nil {
			return staged{}, err
		}
	}
	if inline && !n.unlimited(ctx) {
		// Fail fast on the quota too (the commit checks it exactly).
		owner, err := s.meta.GetUser(ctx, n.bucket.OwnerID)
		if err != nil {
			return staged{}, err
		}
		if owner.QuotaBytes > 0 && w.Size > owner.QuotaBytes-owner.UsageBytes {
			// An overwrite frees the bytes of the version it replaces.
			if old, err = n.replaced(ctx, w.Key, old, looked); err != nil {
				return staged{}, err
			}
			if w.Size > owner.QuotaBytes-owner.UsageBytes+old.Size {
				return staged{}, quotaErr(owner)
			}
		}
	}
	out := staged{put: meta.Put{
		Object: meta.Object{
			Bucket: n.bucket.Name, Key: w.Key, ContentType: w.ContentType, Metadata: w.Metadata, Tags: w.Tags,
			Retention: w.Lock.Retention, LegalHold: w.Lock.LegalHold, Owner: w.owner, ACL: w.grants,
		},
		Cond:        w.Cond,
		BucketOwner: n.bucket.OwnerID,
	}}
	o := &out.put.Object
	// A data key before the first byte: no key, no write (a key service
	// outage fails the upload with Unavailable, never stores plaintext).
	blobKey, identity := "", inlineIdentity
	if !inline {
		blobKey = newBlobKey()
		identity = blobKey
	}
	sl, err := s.newSealer(ctx, identity, w.SSE)
	if err != nil {
		return staged{}, err
	}
	if sl != nil {
		o.Encryption, o.EncryptionKEK = sl.envelope, sl.kek
	}
	st := meta.Staging{BlobKey: blobKey, OwnerID: n.bucket.OwnerID, Bucket: n.bucket.Name, Key: w.Key}
	if !inline && sl == nil && w.from != nil {
		// A plaintext copy of a plaintext blob: the store copies it, and
		// it has the source's digests (copy.go).
		rv, err := s.copyStaged(ctx, st, w.from.blobCopy)
		if err != nil {
			return staged{}, err
		}
		o.BlobKey, o.Size = blobKey, w.from.size
		o.ETag, o.SHA256, o.Checksum = hex.EncodeToString(w.from.md5), hex.EncodeToString(w.from.sha256), w.from.checksum
		o.CRC32C = w.from.crc32c
		o.ModTime = s.now().UTC()
		out.put.Staged, out.rv = true, rv
		return out, nil
	}
	r, err := w.hashed()
	if err != nil {
		return staged{}, err
	}
	var crc *crcReader // a plaintext blob's CRC-32C, for verified reads (verify.go)
	if inline {
		// Small and of known size: keep the bytes for the metadata store.
		buf := bytes.NewBuffer(make([]byte, 0, w.Size+1))
		if _, err := buf.ReadFrom(r); err != nil {
			return staged{}, err
		}
		o.Inline, o.Size = buf.Bytes(), int64(buf.Len())
		if sl != nil {
			size, err := sl.blobSize(o.Size)
			if err != nil {
				return staged{}, err
			}
			ct := bytes.NewBuffer(make([]byte, 0, size+1))
			if _, err := ct.ReadFrom(sl.encrypt(bytes.NewReader(o.Inline))); err != nil {
				return staged{}, err
			}
			clear(o.Inline)
			o.Inline = ct.Bytes()
		}
	} else {
		// Staged before the first byte: reserved against the owner's
		// quota (refused here, before reading, if it cannot fit), and
		// safe from every node's orphan collection.
		var body io.Reader = r
		if sl == nil {
			crc = &crcReader{r: r}
			body = crc
		}
		rv, size, err := s.writeStaged(ctx, st, body, w.Size, sl)
		if err != nil {
			return staged{}, err
		}
		o.BlobKey, o.Size = blobKey, size
		out.put.Staged, out.rv = true, rv
	}
	o.ETag = hex.EncodeToString(r.MD5())
	w.measured(o, r)
	if crc != nil {
		o.CRC32C = crc.sum()
	}
	o.ModTime = s.now().UTC()
	return out, nil
}

// unlimited reports whether the bucket's owner is known, from
// Config.Unlimited's cache, to have no quota (false when not known).
func (n *native) unlimited(ctx context.Context) bool {
	if n.s.cfg.Unlimited == nil {
		return false
	}
	ok, err := n.s.cfg.Unlimited(ctx, n.bucket.OwnerID)
	return err == nil && ok
}

// replaced returns the version a write of key would replace, for a quota
// check made before the commit's: the key's null version, unless the
// bucket is versioned and enabled (where a write replaces nothing);
// latest, if looked, is the key's latest version.
func (n *native) replaced(ctx context.Context, key string, latest meta.Object, looked bool) (meta.Object, error) {
	var o meta.Object
	var err error
	switch {
	case n.bucket.Versioning == meta.VersioningEnabled:
		return meta.Object{}, nil
	case n.bucket.Versioning == meta.VersioningSuspended:
		o, err = n.s.meta.GetObjectVersion(ctx, n.bucket.Name, key, meta.NullVersion)
	case looked:
		return latest, nil
	default:
		o, err = n.s.meta.GetObject(ctx, n.bucket.Name, key)
	}
	if errcode.Is(err, errcode.NotFound) {
		return meta.Object{}, nil
	}
	return o, err
}

// commit makes staged uploads visible atomically, or discards them.
func (s *core) commit(ctx context.Context, sts []staged) ([]meta.Object, error) {
	puts := make([]meta.Put, len(sts))
	for i, st := range sts {
		puts[i] = st.put
	}
	// The blobs are durable; commit even if the client went away meanwhile,
	// so what we may already have acknowledged by side effect stays
	// consistent. A bounded context keeps a stuck store from hanging us.
	cctx, cancel := detach.Context(ctx)
	defer cancel()
	res, err := s.meta.PutObjects(cctx, puts)
	if err != nil {
		s.discard(ctx, sts)
		switch {
		case errcode.Is(err, errcode.QuotaExceeded):
			return nil, errcode.New(errcode.QuotaExceeded, "storage quota exceeded")
		case cctx.Err() != nil:
			return nil, errcode.Retry(errcode.Unavailable, time.Second, "metadata store too slow to commit; retry")
		}
		return nil, err
	}
	// The stagings went with the commit; replaced blobs are reclaimed by
	// the garbage queue.
	var keys []string
	for _, st := range sts {
		if st.rv != nil {
			st.rv.done()
			keys = append(keys, st.put.Object.BlobKey)
		}
	}
	s.endStaging(keys...)
	out := make([]meta.Object, len(res))
	for i, r := range res {
		out[i] = r.Object
	}
	return out, nil
}

// discard drops staged uploads that will never be committed.
func (s *core) discard(ctx context.Context, sts []staged) {
	var keys []string
	for _, st := range sts {
		if st.rv != nil {
			st.rv.done()
			keys = append(keys, st.put.Object.BlobKey)
		}
	}
	s.discardStaged(ctx, keys)
}

// Batch stages several uploads and commits them in one transaction: all
// become visible together, or none does.
type Batch struct {
	s      *core
	a      Actor
	staged []staged
	done   bool
}

// NewBatch starts a batch for a.
func (s *Service) NewBatch(a Actor) *Batch {
	return &Batch{s: s.core, a: a}
}

// Add streams one upload to storage; it becomes visible only at Commit.
func (bt *Batch) Add(ctx context.Context, in PutInput) (meta.Object, error) {
	for _, st := range bt.staged {
		if st.put.Object.Bucket == in.Bucket && st.put.Object.Key == in.Key {
			return meta.Object{}, errcode.New(errcode.InvalidArgument, "key %q appears twice in one upload", in.Key)
		}
	}
	w, err := bt.s.newIncoming(ctx, bt.a, in, nil)
	if err != nil {
		return meta.Object{}, err
	}
	st, err := w.bucket.stage(ctx, w)
	if err != nil {
		return meta.Object{}, err
	}
	bt.staged = append(bt.staged, st)
	return st.put.Object, nil
}

// Commit makes every added object visible at once.
func (bt *Batch) Commit(ctx context.Context) ([]meta.Object, error) {
	bt.done = true
	if len(bt.staged) == 0 {
		return nil, nil
	}
	return bt.s.commit(ctx, bt.staged)
}

// Abort discards everything staged. Safe after Commit (no-op).
func (bt *Batch) Abort() {
	if bt.done {
		return
	}
	bt.done = true
	bt.s.discard(context.Background(), bt.staged)
}

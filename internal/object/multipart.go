package object

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Multipart limits (S3's).
const (
	MinPartSize      = 5 << 20 // every part but the last
	MaxPartSize      = 5 << 30 // any part
	MaxParts         = 10000   // part numbers 1..MaxParts
	DefaultUploadTTL = 7 * 24 * time.Hour
)

// CreateUploadInput starts a multipart upload.
type CreateUploadInput struct {
	Bucket, Key       string
	ContentType       string
	Metadata          map[string]string
	ChecksumAlgorithm string // S3 x-amz-checksum-algorithm, or ""
	ChecksumType      string // S3 x-amz-checksum-type, or ""
	// Size and PartSize are declared by direct-upload sessions (0 if
	// unknown); a declared Size is checked against the quota up front.
	Size, PartSize int64
	// TTL bounds how long the upload may stay incomplete before the
	// janitor aborts it. Default DefaultUploadTTL.
	TTL time.Duration
}

// CreateUpload starts a multipart upload into a bucket a owns.
func (s *Service) CreateUpload(ctx context.Context, a Actor, in CreateUploadInput) (meta.Upload, error) {
	if err := ValidKey(in.Key); err != nil {
		return meta.Upload{}, err
	}
	if err := validMetadata(in.Metadata); err != nil {
		return meta.Upload{}, err
	}
	if in.ChecksumAlgorithm != "" {
		if integrity.ChecksumSize(in.ChecksumAlgorithm) == 0 {
			return meta.Upload{}, errcode.New(errcode.InvalidArgument, "unknown checksum algorithm %q", in.ChecksumAlgorithm)
		}
		in.ChecksumAlgorithm = strings.ToUpper(in.ChecksumAlgorithm)
	}
	b, err := s.authorize(ctx, a, in.Bucket, write)
	if err != nil {
		return meta.Upload{}, err
	}
	if in.Size < 0 || in.Size > MaxParts*MaxPartSize || in.Size > s.cfg.MaxObjectSize {
		return meta.Upload{}, errcode.New(errcode.TooLarge, "declared size %d is over the limit", in.Size)
	}
	if in.Size > 0 {
		owner, err := s.meta.GetUser(ctx, b.OwnerID)
		if err != nil {
			return meta.Upload{}, err
		}
		if owner.QuotaBytes > 0 && owner.UsageBytes+in.Size > owner.QuotaBytes {
			return meta.Upload{}, quotaErr(owner)
		}
	}
	ct := in.ContentType
	if ct == "" {
		ct = guessType(in.Key)
	}
	ttl := in.TTL
	if ttl <= 0 {
		ttl = DefaultUploadTTL
	}
	now := s.now().UTC()
	u := meta.Upload{
		ID: newUploadID(), Bucket: b.Name, Key: in.Key, InitiatorID: a.UserID,
		ContentType: ct, Metadata: in.Metadata,
		ChecksumAlgorithm: in.ChecksumAlgorithm, ChecksumType: strings.ToUpper(in.ChecksumType),
		Size: in.Size, PartSize: in.PartSize,
		CreatedAt: now, ExpiresAt: now.Add(ttl),
	}
	if err := s.meta.CreateUpload(ctx, u); err != nil {
		return meta.Upload{}, err
	}
	return u, nil
}

func newUploadID() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// GetUpload returns an upload in progress in a bucket a owns. bucket and
// key, if not empty, must match the upload's (S3 names both in the URL).
func (s *Service) GetUpload(ctx context.Context, a Actor, bucket, key, id string) (meta.Upload, error) {
	if id == "" {
		return meta.Upload{}, ErrNoUpload(id)
	}
	if bucket != "" {
		if _, err := s.authorize(ctx, a, bucket, write); err != nil {
			return meta.Upload{}, err
		}
	}
	u, err := s.meta.GetUpload(ctx, id)
	if errcode.Is(err, errcode.NotFound) || err == nil && (bucket != "" && u.Bucket != bucket || key != "" && u.Key != key) {
		return meta.Upload{}, ErrNoUpload(id)
	}
	if err != nil {
		return meta.Upload{}, err
	}
	if bucket == "" {
		// Looked up by ID alone (file API): authorise against its bucket,
		// and answer "not found" rather than reveal another user's upload.
		if _, err := s.authorize(ctx, a, u.Bucket, write); err != nil {
			if errcode.Is(err, errcode.PermissionDenied) {
				return meta.Upload{}, ErrNoUpload(id)
			}
			return meta.Upload{}, err
		}
	}
	return u, nil
}

// PartInput is one part upload.
type PartInput struct {
	Bucket, Key, UploadID string // Bucket and Key may be "" (file API)
	Number                int
	Body                  io.Reader
	Size                  int64 // exact, or -1
	MD5, SHA256           []byte
	ChecksumWant          []byte // in the upload's checksum algorithm, if any
}

// PutPart streams one part into storage and records it.
func (s *Service) PutPart(ctx context.Context, a Actor, in PartInput) (meta.Part, error) {
	u, err := s.GetUpload(ctx, a, in.Bucket, in.Key, in.UploadID)
	if err != nil {
		return meta.Part{}, err
	}
	if in.Number < 1 || in.Number > MaxParts {
		return meta.Part{}, &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf("part number must be 1 to %d", MaxParts),
			Detail: map[string]any{"reason": "invalid_part_number"}}
	}
	if in.Size > MaxPartSize {
		return meta.Part{}, errcode.New(errcode.TooLarge, "part larger than %d bytes", int64(MaxPartSize))
	}
	b, err := s.meta.GetBucket(ctx, u.Bucket)
	if err != nil {
		return meta.Part{}, err
	}
	owner, err := s.meta.GetUser(ctx, b.OwnerID)
	if err != nil {
		return meta.Part{}, err
	}
	limit, limitErr := int64(MaxPartSize), errcode.New(errcode.TooLarge, "part larger than %d bytes", int64(MaxPartSize))
	if owner.QuotaBytes > 0 {
		room := owner.QuotaBytes - owner.UsageBytes
		if in.Size >= 0 && in.Size > room {
			return meta.Part{}, quotaErr(owner)
		}
		if room < limit {
			if room <= 0 {
				return meta.Part{}, quotaErr(owner)
			}
			limit, limitErr = room, quotaErr(owner)
		}
	}
	r := integrity.NewReader(in.Body, integrity.Options{
		Size: in.Size, Limit: limit, LimitErr: limitErr, SHA256: in.SHA256, MD5: in.MD5,
		ChecksumAlgorithm: u.ChecksumAlgorithm, ChecksumWant: in.ChecksumWant,
	})
	key := newBlobKey()
	s.beginStaging(key)
	defer s.endStaging(key)
	info, err := s.blobs.Put(ctx, key, r, in.Size)
	if err != nil {
		return meta.Part{}, err
	}
	p := meta.Part{
		UploadID: u.ID, Number: in.Number, Size: info.Size,
		ETag: hex.EncodeToString(r.MD5()), BlobKey: key, ModTime: s.now().UTC(),
	}
	if sum := r.Checksum(); sum != nil {
		p.Checksum = integrity.EncodeChecksum(sum)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := s.meta.PutPart(cctx, p); err != nil {
		s.discardBlobs(key)
		if errcode.Is(err, errcode.NotFound) {
			return meta.Part{}, ErrNoUpload(u.ID)
		}
		return meta.Part{}, err
	}
	return p, nil
}

// CopyPart uploads a byte range of an existing object as a part.
func (s *Service) CopyPart(ctx context.Context, a Actor, in PartInput, src *Reader, offset, length int64) (meta.Part, error) {
	if length < 0 {
		length = src.Object.Size - offset
	}
	if offset < 0 || offset+length > src.Object.Size {
		return meta.Part{}, errcode.New(errcode.RangeNotSatisfiable, "copy range outside the source object")
	}
	rc, err := src.Open(ctx, offset, length)
	if err != nil {
		return meta.Part{}, err
	}
	defer rc.Close()
	in.Body, in.Size = rc, length
	return s.PutPart(ctx, a, in)
}

// ListParts lists the parts of an upload.
func (s *Service) ListParts(ctx context.Context, a Actor, bucket, key, id string, after, limit int) (meta.Upload, []meta.Part, bool, error) {
	u, err := s.GetUpload(ctx, a, bucket, key, id)
	if err != nil {
		return meta.Upload{}, nil, false, err
	}
	parts, more, err := s.meta.ListParts(ctx, id, after, limit)
	if errcode.Is(err, errcode.NotFound) {
		return meta.Upload{}, nil, false, ErrNoUpload(id)
	}
	return u, parts, more, err
}

// ListUploads lists a bucket's uploads in progress.
func (s *Service) ListUploads(ctx context.Context, a Actor, bucket string, opts meta.ListUploadsOptions) ([]meta.Upload, bool, error) {
	if _, err := s.authorize(ctx, a, bucket, write); err != nil {
		return nil, false, err
	}
	return s.meta.ListUploads(ctx, bucket, opts)
}

// AbortUpload discards an upload and its parts.
func (s *Service) AbortUpload(ctx context.Context, a Actor, bucket, key, id string) error {
	if _, err := s.GetUpload(ctx, a, bucket, key, id); err != nil {
		return err
	}
	err := s.meta.AbortUpload(ctx, id)
	if errcode.Is(err, errcode.NotFound) {
		return ErrNoUpload(id)
	}
	return err
}

// CompleteUpload assembles the listed parts into the upload's object. The
// object's ETag is S3's: the MD5 of the concatenated binary part MD5s,
// then "-" and the part count.
func (s *Service) CompleteUpload(ctx context.Context, a Actor, bucket, key, id string, parts []meta.CompletePart, cond meta.Cond) (meta.Object, error) {
	u, err := s.GetUpload(ctx, a, bucket, key, id)
	if err != nil {
		return meta.Object{}, err
	}
	if len(parts) == 0 || len(parts) > MaxParts {
		return meta.Object{}, &errcode.Error{Code: errcode.InvalidArgument, Message: "list between 1 and 10000 parts",
			Detail: map[string]any{"reason": "invalid_part_order"}}
	}
	h := md5.New()
	for i := range parts {
		parts[i].ETag = strings.Trim(strings.TrimSpace(parts[i].ETag), `"`)
		raw, err := hex.DecodeString(parts[i].ETag)
		if err != nil || len(raw) != md5.Size {
			return meta.Object{}, &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf("part %d has a malformed ETag", parts[i].Number),
				Detail: map[string]any{"reason": "invalid_part", "part_number": parts[i].Number}}
		}
		h.Write(raw)
	}
	if u.Size > 0 {
		// A direct-upload session declared its size: the parts must add
		// up to it exactly.
		sizes, err := s.partSizes(ctx, u.ID)
		if err != nil {
			return meta.Object{}, err
		}
		var total int64
		for _, p := range parts {
			total += sizes[p.Number]
		}
		if total != u.Size {
			return meta.Object{}, &errcode.Error{Code: errcode.InvalidArgument,
				Message: fmt.Sprintf("the parts add up to %d bytes, the upload declared %d", total, u.Size),
				Detail:  map[string]any{"reason": "size_mismatch"}}
		}
	}
	obj := meta.Object{
		ETag:        fmt.Sprintf("%s-%d", hex.EncodeToString(h.Sum(nil)), len(parts)),
		ContentType: u.ContentType,
		Metadata:    u.Metadata,
		ModTime:     s.now().UTC(),
	}
	if u.ChecksumAlgorithm != "" && u.ChecksumType != "FULL_OBJECT" {
		c, err := s.compositeChecksum(ctx, u, parts)
		if err != nil {
			return meta.Object{}, err
		}
		obj.Checksum = c
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	o, err := s.meta.CompleteUpload(cctx, id, obj, parts, MinPartSize, cond)
	if errcode.Is(err, errcode.NotFound) {
		return meta.Object{}, ErrNoUpload(id)
	}
	return o, err
}

// compositeChecksum is S3's COMPOSITE checksum of a multipart object: the
// checksum of the concatenated binary part checksums, then "-N". Empty if
// any listed part has no checksum.
func (s *Service) compositeChecksum(ctx context.Context, u meta.Upload, parts []meta.CompletePart) (meta.Checksum, error) {
	sums := map[int]string{}
	after := 0
	for {
		ps, more, err := s.meta.ListParts(ctx, u.ID, after, 1000)
		if err != nil {
			if errcode.Is(err, errcode.NotFound) {
				return meta.Checksum{}, ErrNoUpload(u.ID)
			}
			return meta.Checksum{}, err
		}
		for _, p := range ps {
			sums[p.Number] = p.Checksum
			after = p.Number
		}
		if !more {
			break
		}
	}
	h, err := integrity.NewChecksum(u.ChecksumAlgorithm)
	if err != nil {
		return meta.Checksum{}, err
	}
	for _, p := range parts {
		raw, err := base64.StdEncoding.DecodeString(sums[p.Number])
		if err != nil || len(raw) == 0 {
			return meta.Checksum{}, nil
		}
		h.Write(raw)
	}
	return meta.Checksum{
		Algorithm: u.ChecksumAlgorithm, Type: "COMPOSITE",
		Value: fmt.Sprintf("%s-%d", integrity.EncodeChecksum(h.Sum(nil)), len(parts)),
	}, nil
}

// partSizes returns the size of every uploaded part by number.
func (s *Service) partSizes(ctx context.Context, id string) (map[int]int64, error) {
	sizes := map[int]int64{}
	after := 0
	for {
		ps, more, err := s.meta.ListParts(ctx, id, after, 1000)
		if errcode.Is(err, errcode.NotFound) {
			return nil, ErrNoUpload(id)
		}
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			sizes[p.Number] = p.Size
			after = p.Number
		}
		if !more || len(ps) == 0 {
			return sizes, nil
		}
	}
}

// CollectExpiredUploads aborts uploads past their expiry.
func (s *Service) CollectExpiredUploads(ctx context.Context) (int, error) {
	n := 0
	for {
		us, err := s.meta.ListExpiredUploads(ctx, s.now(), 500)
		if err != nil || len(us) == 0 {
			return n, err
		}
		for _, u := range us {
			if err := s.meta.AbortUpload(ctx, u.ID); err != nil && !errcode.Is(err, errcode.NotFound) {
				return n, err
			}
			n++
		}
		if len(us) < 500 {
			return n, nil
		}
	}
}

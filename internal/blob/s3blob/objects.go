package s3blob

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// The object-level API: what gateway buckets (docs/gateway.md) need of an
// existing bucket that other programs write too. Keys are any object
// keys (not only blob keys), under the store's prefix; the backend's own
// ETag, content type and user metadata travel both ways. Errors are
// classified like the blob API's, and a failed If-Match is
// PreconditionFailed.

// PutOptions are the headers of a PutObject.
type PutOptions struct {
	ContentType string
	// Metadata is the user metadata (x-amz-meta-*), lower-case names.
	Metadata map[string]string
}

func (po PutOptions) putInput(in *s3.PutObjectInput) *s3.PutObjectInput {
	if po.ContentType != "" {
		in.ContentType = aws.String(po.ContentType)
	}
	if len(po.Metadata) > 0 {
		in.Metadata = po.Metadata
	}
	return in
}

func (po PutOptions) createInput(in *s3.CreateMultipartUploadInput) *s3.CreateMultipartUploadInput {
	if po.ContentType != "" {
		in.ContentType = aws.String(po.ContentType)
	}
	if len(po.Metadata) > 0 {
		in.Metadata = po.Metadata
	}
	return in
}

// ObjectInfo is what the backend says of one object.
type ObjectInfo struct {
	Key          string // without the store's prefix
	Size         int64
	ETag         string // unquoted
	ContentType  string // "" in listings
	Metadata     map[string]string
	LastModified time.Time
}

// Prefix returns the prefix every key is stored under.
func (s *Store) Prefix() string { return s.opts.Prefix }

// PutObject streams r (size bytes, or -1 if unknown) to key with po's
// headers, as Put does (one request up to PartSize, a multipart upload
// above, exact sizes), and returns the backend's ETag.
func (s *Store) PutObject(ctx context.Context, key string, r io.Reader, size int64, po PutOptions) (ObjectInfo, error) {
	n, etag, err := s.put(ctx, key, r, size, po)
	if err != nil {
		return ObjectInfo{}, err
	}
	return ObjectInfo{Key: key, Size: n, ETag: etag, ContentType: po.ContentType, Metadata: po.Metadata, LastModified: time.Now().UTC()}, nil
}

// HeadObject returns what the backend says of key; NotFound if missing.
func (s *Store) HeadObject(ctx context.Context, key string) (ObjectInfo, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.opts.Bucket, Key: s.name(key)})
	if err != nil {
		return ObjectInfo{}, classify(err, "head %q", key)
	}
	return ObjectInfo{
		Key: key, Size: aws.ToInt64(out.ContentLength), ETag: unquote(aws.ToString(out.ETag)),
		ContentType: aws.ToString(out.ContentType), Metadata: lower(out.Metadata), LastModified: aws.ToTime(out.LastModified).UTC(),
	}, nil
}

// GetObject streams the bytes [offset, offset+length) of key (length -1:
// to the end; length ≥ 1), only if its ETag is still etag ("" for any):
// PreconditionFailed when the object was replaced meanwhile.
func (s *Store) GetObject(ctx context.Context, key, etag string, offset, length int64) (io.ReadCloser, error) {
	if offset < 0 || length < -1 || length == 0 {
		return nil, errcode.New(errcode.InvalidArgument, "bad range: offset %d, length %d", offset, length)
	}
	in := &s3.GetObjectInput{Bucket: &s.opts.Bucket, Key: s.name(key)}
	if etag != "" {
		in.IfMatch = aws.String(`"` + etag + `"`)
	}
	switch {
	case length > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	case offset > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		return nil, classify(err, "get %q", key)
	}
	return &reader{body: out.Body, key: key}, nil
}

// DeleteObject deletes key (a missing key is not an error: S3's
// DeleteObject is idempotent).
func (s *Store) DeleteObject(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.opts.Bucket, Key: s.name(key)})
	return classify(err, "delete %q", key)
}

// ListResult is one page of ListObjects.
type ListResult struct {
	Objects        []ObjectInfo
	CommonPrefixes []string // without the store's prefix
	Truncated      bool
}

// ListObjects lists one page of at most limit entries (1…1000) of keys
// starting with prefix and sorting after startAfter (both without the
// store's prefix), rolled up at delimiter if set: one ListObjectsV2.
func (s *Store) ListObjects(ctx context.Context, prefix, delimiter, startAfter string, limit int) (ListResult, error) {
	in := &s3.ListObjectsV2Input{Bucket: &s.opts.Bucket, Prefix: aws.String(s.opts.Prefix + prefix), MaxKeys: aws.Int32(int32(limit))}
	if delimiter != "" {
		in.Delimiter = aws.String(delimiter)
	}
	if startAfter != "" {
		in.StartAfter = aws.String(s.opts.Prefix + startAfter)
	}
	out, err := s.client.ListObjectsV2(ctx, in)
	if err != nil {
		return ListResult{}, classify(err, "list %q", prefix)
	}
	res := ListResult{Truncated: aws.ToBool(out.IsTruncated)}
	for _, o := range out.Contents {
		k, ok := strings.CutPrefix(aws.ToString(o.Key), s.opts.Prefix)
		if !ok {
			continue
		}
		res.Objects = append(res.Objects, ObjectInfo{Key: k, Size: aws.ToInt64(o.Size), ETag: unquote(aws.ToString(o.ETag)), LastModified: aws.ToTime(o.LastModified).UTC()})
	}
	for _, p := range out.CommonPrefixes {
		if k, ok := strings.CutPrefix(aws.ToString(p.Prefix), s.opts.Prefix); ok {
			res.CommonPrefixes = append(res.CommonPrefixes, k)
		}
	}
	return res, nil
}

func unquote(etag string) string { return strings.Trim(etag, `"`) }

func lower(md map[string]string) map[string]string {
	if len(md) == 0 {
		return nil
	}
	out := make(map[string]string, len(md))
	for k, v := range md {
		out[strings.ToLower(k)] = v
	}
	return out
}

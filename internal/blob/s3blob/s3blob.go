// Package s3blob is the blob.Store of the scale-out shape: blobs are objects
// of one bucket (under an optional prefix) of any S3-compatible store —
// MinIO, Ceph RGW, AWS S3, GCS's XML API, SeaweedFS, Garage — reached with
// aws-sdk-go-v2.
//
// # Streaming
//
// Nothing is buffered whole. A blob of known size up to PartSize goes up in
// one PutObject whose body is the caller's reader; a larger one goes up as a
// multipart upload whose parts are slices of the same reader, each sent with
// its exact Content-Length, so no part is buffered either. Only a blob of
// unknown size (size -1) buffers, one part at a time (BufferedPartSize).
// Payloads are sent UNSIGNED-PAYLOAD (the SigV4 header signature still
// covers the request); integrity end to end is Coffer's own SHA-256.
//
// # Exact sizes
//
// A reader that yields more bytes than announced must store nothing. The
// body reader looks one byte ahead of the announced end before handing the
// last bytes to the HTTP client, so the store never receives a complete
// body for an oversized blob; a short reader fails the request mid-body.
//
// # Errors and retries
//
// Backend failures map onto errcode: a missing key is NotFound, a bad range
// RangeNotSatisfiable, throttling, 5xx answers and network failures are
// Unavailable with a Retry-After hint. The SDK's standard retryer retries
// with jittered backoff only requests it can replay (GET, HEAD, DELETE,
// LIST, bodies that are seekable); a streamed PUT is never replayed.
//
// # Direct uploads
//
// The store implements blob.MultipartPresigner: clients upload parts of a
// blob straight to the backend with presigned URLs, and the backend
// assembles them, so the bytes never cross Coffer.
package s3blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/detach"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// Options configure a Store.
type Options struct {
	Bucket string
	Prefix string // prepended to every key ("" or ending in "/")
	// Endpoint is the S3 API's base URL; "" means AWS S3 of Region.
	Endpoint string
	// PresignEndpoint, if set, is the base URL put in presigned URLs
	// handed to clients (when they reach the store by another name than
	// Coffer does).
	PresignEndpoint string
	Region          string // default "us-east-1"
	PathStyle       bool   // bucket in the path (MinIO, Ceph, Garage); default on with an Endpoint
	// AccessKey/SecretKey, if set, override the standard AWS credential
	// chain (environment, shared config, instance roles).
	AccessKey, SecretKey string
	// PartSize is the size of the parts of a large blob of known size, and
	// the threshold above which a blob goes up in parts. Default 64 MiB.
	PartSize int64
	// BufferedPartSize is the part size of blobs of unknown size, each part
	// buffered in memory while it is sent. Default 8 MiB (minimum 5 MiB).
	BufferedPartSize int64
	// MaxAttempts of replayable requests (default 3).
	MaxAttempts int
	// HTTPClient, if set, replaces the default client (tests, proxies).
	HTTPClient *http.Client
}

// Store is an S3-backed blob.Store.
type Store struct {
	opts    Options
	client  *s3.Client
	presign *s3.PresignClient
}

var (
	_ blob.Store              = (*Store)(nil)
	_ blob.Copier             = (*Store)(nil)
	_ blob.MultipartPresigner = (*Store)(nil)
)

// ParseURL reads a blob store URL of the form
//
//	s3://BUCKET[/PREFIX]?endpoint=http://127.0.0.1:9000&region=us-east-1&path_style=true&presign_endpoint=…&part_size=67108864
//
// Credentials are not part of the URL: they come from the standard AWS
// chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, …).
func ParseURL(raw string) (Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Options{}, fmt.Errorf("blob URL: %w", err)
	}
	if u.Scheme != "s3" || u.Host == "" {
		return Options{}, fmt.Errorf("blob URL %q: want s3://BUCKET[/PREFIX]?endpoint=…", raw)
	}
	if u.User != nil {
		return Options{}, errors.New("blob URL: put credentials in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, not in the URL")
	}
	q := u.Query()
	o := Options{
		Bucket:          u.Host,
		Prefix:          strings.TrimPrefix(u.Path, "/"),
		Endpoint:        q.Get("endpoint"),
		PresignEndpoint: q.Get("presign_endpoint"),
		Region:          q.Get("region"),
	}
	if o.Prefix != "" && !strings.HasSuffix(o.Prefix, "/") {
		o.Prefix += "/"
	}
	o.PathStyle = o.Endpoint != ""
	if v := q.Get("path_style"); v != "" {
		if o.PathStyle, err = strconv.ParseBool(v); err != nil {
			return Options{}, fmt.Errorf("blob URL: path_style: %w", err)
		}
	}
	if v := q.Get("part_size"); v != "" {
		if o.PartSize, err = strconv.ParseInt(v, 10, 64); err != nil {
			return Options{}, fmt.Errorf("blob URL: part_size: %w", err)
		}
	}
	for k := range q {
		switch k {
		case "endpoint", "presign_endpoint", "region", "path_style", "part_size":
		default:
			return Options{}, fmt.Errorf("blob URL: unknown parameter %q", k)
		}
	}
	return o, nil
}

// Open connects to the store and checks the bucket is reachable.
func Open(ctx context.Context, opts Options) (*Store, error) {
	s, err := openUnchecked(ctx, opts)
	if err != nil {
		return nil, err
	}
	if _, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.opts.Bucket}); err != nil {
		return nil, fmt.Errorf("s3blob: bucket %q: %w", s.opts.Bucket, classify(err, "head bucket"))
	}
	return s, nil
}

// openUnchecked builds the clients without contacting the store.
func openUnchecked(ctx context.Context, opts Options) (*Store, error) {
	if opts.Bucket == "" {
		return nil, errors.New("s3blob: bucket is required")
	}
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.PartSize == 0 {
		opts.PartSize = 64 << 20
	}
	if opts.PartSize < 5<<20 || opts.PartSize > 5<<30 {
		return nil, errors.New("s3blob: part size must be between 5 MiB and 5 GiB")
	}
	if opts.BufferedPartSize == 0 {
		opts.BufferedPartSize = 8 << 20
	}
	opts.BufferedPartSize = max(opts.BufferedPartSize, 5<<20)
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = 3
	}
	loadOpts := []func(*config.LoadOptions) error{
		config.WithRegion(opts.Region),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = opts.MaxAttempts
				o.MaxBackoff = 2 * time.Second
			})
		}),
		// Checksums only where the API requires them: Coffer checks
		// integrity itself, and trailing checksums would need aws-chunked
		// framing that not every S3-compatible store speaks.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if opts.AccessKey != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(opts.AccessKey, opts.SecretKey, "")))
	}
	if opts.HTTPClient != nil {
		loadOpts = append(loadOpts, config.WithHTTPClient(opts.HTTPClient))
	} else {
		loadOpts = append(loadOpts, config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConns = 512
			tr.MaxIdleConnsPerHost = 256
			tr.ResponseHeaderTimeout = 60 * time.Second
			tr.DisableCompression = true
		})))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("s3blob: loading AWS config: %w", err)
	}
	clientFor := func(endpoint string) *s3.Client {
		return s3.NewFromConfig(cfg, func(o *s3.Options) {
			if endpoint != "" {
				o.BaseEndpoint = aws.String(endpoint)
			}
			o.UsePathStyle = opts.PathStyle
		})
	}
	s := &Store{opts: opts, client: clientFor(opts.Endpoint)}
	pe := opts.PresignEndpoint
	if pe == "" {
		pe = opts.Endpoint
	}
	s.presign = s3.NewPresignClient(clientFor(pe))
	return s, nil
}

// Client returns the underlying S3 client (for tests and admin tools).
func (s *Store) Client() *s3.Client { return s.client }

func (s *Store) name(key string) *string { return aws.String(s.opts.Prefix + key) }

// unsigned sends the payload as UNSIGNED-PAYLOAD: the body is a stream the
// signer cannot hash without reading it twice.
// A streamed body cannot be replayed, so such requests are never retried.
func unsigned(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
	o.RetryMaxAttempts = 1
}

// Put implements blob.Store.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) (blob.Info, error) {
	if err := blob.ValidKey(key); err != nil {
		return blob.Info{}, err
	}
	n, _, err := s.put(ctx, key, r, size, PutOptions{})
	if err != nil {
		return blob.Info{}, err
	}
	return blob.Info{Key: key, Size: n, ModTime: time.Now()}, nil
}

// put streams r (size bytes, or -1 if unknown) to key, with po's headers,
// and returns the size stored and the backend's ETag (unquoted).
func (s *Store) put(ctx context.Context, key string, r io.Reader, size int64, po PutOptions) (int64, string, error) {
	if size < 0 {
		return s.putBuffered(ctx, key, r, po)
	}
	if size <= s.opts.PartSize {
		body := newExactReader(r, size)
		if size == 0 {
			// An empty body is never read by the HTTP client.
			if err := body.checkEnd(); err != nil {
				return 0, "", body.cause(ctx, err)
			}
		}
		out, err := s.client.PutObject(ctx, po.putInput(&s3.PutObjectInput{
			Bucket: &s.opts.Bucket, Key: s.name(key), Body: body, ContentLength: aws.Int64(size),
		}), unsigned)
		if err != nil {
			return 0, "", body.cause(ctx, classify(err, "put %q", key))
		}
		return size, unquote(aws.ToString(out.ETag)), nil
	}
	// Large: a multipart upload of slices of one exact reader.
	body := newExactReader(r, size)
	parts := (size + s.opts.PartSize - 1) / s.opts.PartSize
	if parts > 10000 {
		return 0, "", errcode.New(errcode.TooLarge, "blob of %d bytes needs more than 10000 parts of %d bytes", size, s.opts.PartSize)
	}
	return s.multipart(ctx, key, po, func(n int) (io.Reader, int64, bool, error) {
		off := int64(n-1) * s.opts.PartSize
		if off >= size {
			return nil, 0, false, nil
		}
		l := min(s.opts.PartSize, size-off)
		return io.LimitReader(body, l), l, true, nil
	}, body)
}

// putBuffered stores a blob of unknown size: one buffered part at a time.
func (s *Store) putBuffered(ctx context.Context, key string, r io.Reader, po PutOptions) (int64, string, error) {
	buf := make([]byte, s.opts.BufferedPartSize)
	first, err := io.ReadFull(r, buf)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		// Fits one request.
		out, err := s.client.PutObject(ctx, po.putInput(&s3.PutObjectInput{
			Bucket: &s.opts.Bucket, Key: s.name(key), Body: bytes.NewReader(buf[:first]), ContentLength: aws.Int64(int64(first)),
		}), unsigned)
		if err != nil {
			return 0, "", classify(err, "put %q", key)
		}
		return int64(first), unquote(aws.ToString(out.ETag)), nil
	case err != nil:
		return 0, "", fmt.Errorf("reading blob %q: %w", key, err)
	}
	pending := buf[:first]
	done := false
	return s.multipart(ctx, key, po, func(n int) (io.Reader, int64, bool, error) {
		if n == 1 {
			return bytes.NewReader(pending), int64(len(pending)), true, nil
		}
		if done {
			return nil, 0, false, nil
		}
		m, err := io.ReadFull(r, buf)
		switch {
		case err == io.EOF:
			return nil, 0, false, nil
		case err == io.ErrUnexpectedEOF:
			done = true
		case err != nil:
			return nil, 0, false, fmt.Errorf("reading blob %q: %w", key, err)
		}
		if n > 10000 {
			return nil, 0, false, errcode.New(errcode.TooLarge, "blob of unknown size exceeds 10000 parts of %d bytes", s.opts.BufferedPartSize)
		}
		return bytes.NewReader(buf[:m]), int64(m), true, nil
	}, nil)
}

// multipart uploads the parts next(1), next(2), … until next says there
// are no more, then completes; on any failure it aborts the upload, so
// nothing becomes visible.
func (s *Store) multipart(ctx context.Context, key string, po PutOptions, next func(n int) (io.Reader, int64, bool, error), exact *exactReader) (int64, string, error) {
	created, err := s.client.CreateMultipartUpload(ctx, po.createInput(&s3.CreateMultipartUploadInput{Bucket: &s.opts.Bucket, Key: s.name(key)}))
	if err != nil {
		return 0, "", classify(err, "create multipart upload of %q", key)
	}
	abort := func() {
		actx, cancel := detach.Context(ctx)
		defer cancel()
		_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: &s.opts.Bucket, Key: s.name(key), UploadId: created.UploadId})
	}
	var done []types.CompletedPart
	var total int64
	for n := 1; ; n++ {
		body, l, ok, err := next(n)
		if err != nil {
			abort()
			return 0, "", err
		}
		if !ok {
			break
		}
		out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: &s.opts.Bucket, Key: s.name(key), UploadId: created.UploadId,
			PartNumber: aws.Int32(int32(n)), Body: body, ContentLength: aws.Int64(l),
		}, unsigned)
		if err != nil {
			abort()
			err = classify(err, "upload part %d of %q", n, key)
			if exact != nil {
				err = exact.cause(ctx, err)
			}
			return 0, "", err
		}
		done = append(done, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(int32(n))})
		total += l
	}
	out, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &s.opts.Bucket, Key: s.name(key), UploadId: created.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done},
	})
	if err != nil {
		abort()
		return 0, "", classify(err, "complete multipart upload of %q", key)
	}
	return total, unquote(aws.ToString(out.ETag)), nil
}

// Get implements blob.Store.
func (s *Store) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := blob.ValidKey(key); err != nil {
		return nil, err
	}
	if offset < 0 || length < -1 {
		return nil, errcode.New(errcode.InvalidArgument, "bad range: offset %d, length %d", offset, length)
	}
	in := &s3.GetObjectInput{Bucket: &s.opts.Bucket, Key: s.name(key)}
	switch {
	case length == 0:
		// Nothing to read, but the key and offset must be valid.
		info, err := s.Stat(ctx, key)
		if err != nil {
			return nil, err
		}
		if offset > info.Size {
			return nil, errcode.New(errcode.RangeNotSatisfiable, "offset %d beyond blob of %d bytes", offset, info.Size)
		}
		return io.NopCloser(strings.NewReader("")), nil
	case length > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	case offset > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		err = classify(err, "get %q", key)
		if errcode.Is(err, errcode.RangeNotSatisfiable) {
			// S3 answers 416 for a range starting at the end; the
			// contract allows offset == size (an empty read).
			info, serr := s.Stat(ctx, key)
			if serr != nil {
				return nil, serr
			}
			if offset == info.Size {
				return io.NopCloser(strings.NewReader("")), nil
			}
		}
		return nil, err
	}
	return &reader{body: out.Body, key: key}, nil
}

// reader classifies the errors of a streaming GET body.
type reader struct {
	body io.ReadCloser
	key  string
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	if err != nil && err != io.EOF {
		err = errcode.Wrap(errcode.Unavailable, err, "reading blob %q from the S3 store", r.key)
	}
	return n, err
}

func (r *reader) Close() error { return r.body.Close() }

// Stat implements blob.Store.
func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	if err := blob.ValidKey(key); err != nil {
		return blob.Info{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.opts.Bucket, Key: s.name(key)})
	if err != nil {
		return blob.Info{}, classify(err, "stat %q", key)
	}
	return blob.Info{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// Delete implements blob.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.ValidKey(key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.opts.Bucket, Key: s.name(key)})
	if err != nil && !errcode.Is(classify(err, ""), errcode.NotFound) {
		return classify(err, "delete %q", key)
	}
	return nil
}

// List implements blob.Store. S3 lists in UTF-8 binary order, which is the
// byte order of keys.
func (s *Store) List(ctx context.Context, prefix string, fn func(blob.Info) error) error {
	// A prefix with a complete segment no valid key has matches nothing
	// (and some stores refuse it).
	if segs := strings.Split(prefix, "/"); len(segs) > 1 {
		for _, seg := range segs[:len(segs)-1] {
			if seg == "" || seg == "." || seg == ".." {
				return nil
			}
		}
	}
	p := s.opts.Prefix + prefix
	pager := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.opts.Bucket, Prefix: &p})
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return classify(err, "list %q", prefix)
		}
		for _, o := range page.Contents {
			k := strings.TrimPrefix(aws.ToString(o.Key), s.opts.Prefix)
			if err := fn(blob.Info{Key: k, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Copy implements blob.Copier with a server-side copy (multipart copy
// above 5 GiB).
func (s *Store) Copy(ctx context.Context, src, dst string) (blob.Info, error) {
	if err := errors.Join(blob.ValidKey(src), blob.ValidKey(dst)); err != nil {
		return blob.Info{}, err
	}
	info, err := s.Stat(ctx, src)
	if err != nil {
		return blob.Info{}, err
	}
	source := url.PathEscape(s.opts.Bucket) + "/" + escapeKey(s.opts.Prefix+src)
	if info.Size <= 5<<30 {
		if _, err := s.client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &s.opts.Bucket, Key: s.name(dst), CopySource: &source}); err != nil {
			return blob.Info{}, classify(err, "copy %q to %q", src, dst)
		}
		return blob.Info{Key: dst, Size: info.Size, ModTime: time.Now()}, nil
	}
	const part = 1 << 30
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.opts.Bucket, Key: s.name(dst)})
	if err != nil {
		return blob.Info{}, classify(err, "copy %q to %q", src, dst)
	}
	var parts []types.CompletedPart
	for n, off := int32(1), int64(0); off < info.Size; n, off = n+1, off+part {
		end := min(off+part, info.Size) - 1
		out, err := s.client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
			Bucket: &s.opts.Bucket, Key: s.name(dst), UploadId: created.UploadId, PartNumber: aws.Int32(n),
			CopySource: &source, CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, end)),
		})
		if err != nil {
			actx, cancel := detach.Context(ctx)
			_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: &s.opts.Bucket, Key: s.name(dst), UploadId: created.UploadId})
			cancel()
			return blob.Info{}, classify(err, "copy %q to %q", src, dst)
		}
		parts = append(parts, types.CompletedPart{ETag: out.CopyPartResult.ETag, PartNumber: aws.Int32(n)})
	}
	if _, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &s.opts.Bucket, Key: s.name(dst), UploadId: created.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}); err != nil {
		return blob.Info{}, classify(err, "copy %q to %q", src, dst)
	}
	return blob.Info{Key: dst, Size: info.Size, ModTime: time.Now()}, nil
}

func escapeKey(k string) string {
	segs := strings.Split(k, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// ---------------------------------------------------------- direct uploads

// CreateMultipart implements blob.MultipartPresigner.
func (s *Store) CreateMultipart(ctx context.Context, key string) (string, error) {
	if err := blob.ValidKey(key); err != nil {
		return "", err
	}
	out, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.opts.Bucket, Key: s.name(key)})
	if err != nil {
		return "", classify(err, "create multipart upload of %q", key)
	}
	return aws.ToString(out.UploadId), nil
}

// PresignPart implements blob.MultipartPresigner.
func (s *Store) PresignPart(ctx context.Context, key, uploadID string, part int, ttl time.Duration) (string, error) {
	req, err := s.presign.PresignUploadPart(ctx, &s3.UploadPartInput{
		Bucket: &s.opts.Bucket, Key: s.name(key), UploadId: &uploadID, PartNumber: aws.Int32(int32(part)),
	}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", classify(err, "presign part %d of %q", part, key)
	}
	return req.URL, nil
}

// ListMultipartParts implements blob.MultipartPresigner.
func (s *Store) ListMultipartParts(ctx context.Context, key, uploadID string) ([]blob.PartInfo, error) {
	var out []blob.PartInfo
	pager := s3.NewListPartsPaginator(s.client, &s3.ListPartsInput{Bucket: &s.opts.Bucket, Key: s.name(key), UploadId: &uploadID})
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, classify(err, "list parts of %q", key)
		}
		for _, p := range page.Parts {
			out = append(out, blob.PartInfo{Number: int(aws.ToInt32(p.PartNumber)), Size: aws.ToInt64(p.Size), ETag: strings.Trim(aws.ToString(p.ETag), `"`)})
		}
	}
	return out, nil
}

// CompleteMultipart implements blob.MultipartPresigner.
func (s *Store) CompleteMultipart(ctx context.Context, key, uploadID string, parts []blob.PartInfo) (blob.Info, error) {
	var done []types.CompletedPart
	var total int64
	for _, p := range parts {
		done = append(done, types.CompletedPart{ETag: aws.String(`"` + p.ETag + `"`), PartNumber: aws.Int32(int32(p.Number))})
		total += p.Size
	}
	_, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &s.opts.Bucket, Key: s.name(key), UploadId: &uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done},
	})
	if err != nil {
		err = classify(err, "complete multipart upload of %q", key)
		if !errcode.Is(err, errcode.NotFound) {
			return blob.Info{}, err
		}
		// Completed already (by another node, or a retry after a lost
		// answer)? Then the blob is there with the parts' total size.
		info, serr := s.Stat(ctx, key)
		if serr != nil || info.Size != total {
			return blob.Info{}, err
		}
		return info, nil
	}
	return blob.Info{Key: key, Size: total, ModTime: time.Now()}, nil
}

// AbortMultipart implements blob.MultipartPresigner. Aborting a finished
// or unknown upload is not an error.
func (s *Store) AbortMultipart(ctx context.Context, key, uploadID string) error {
	_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.opts.Bucket, Key: s.name(key), UploadId: &uploadID})
	if err != nil && !errcode.Is(classify(err, ""), errcode.NotFound) {
		return classify(err, "abort multipart upload of %q", key)
	}
	return nil
}

// ------------------------------------------------------------------ errors

const retryAfter = time.Second

// classify maps an SDK error onto errcode.
func classify(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if errcode.As(err) != nil {
		return err
	}
	msg := fmt.Sprintf(format, args...)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", msg, err)
	}
	var code string
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	status := 0
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	switch {
	case code == "XMinioStorageFull" || code == "XMinioDiskFull" || status == 507:
		return errcode.Wrap(errcode.StorageFull, err, "%s: S3 store is full", msg)
	case code == "NoSuchKey" || code == "NotFound" || code == "NoSuchUpload" || (status == 404 && code != "NoSuchBucket"):
		return errcode.Wrap(errcode.NotFound, err, "%s: not found", msg)
	case code == "InvalidRange" || status == 416:
		return errcode.Wrap(errcode.RangeNotSatisfiable, err, "%s: range not satisfiable", msg)
	case code == "PreconditionFailed" || status == 412:
		return errcode.Wrap(errcode.PreconditionFailed, err, "%s: precondition failed", msg)
	case code == "EntityTooLarge":
		return errcode.Wrap(errcode.TooLarge, err, "%s: too large", msg)
	case code == "SlowDown" || code == "ServiceUnavailable" || code == "InternalError" || code == "RequestTimeout" ||
		code == "XMinioServerNotInitialized" || status == 429 || status >= 500 ||
		// The store lost our request's body on the way (MinIO's 499
		// after a connection to it was cut mid-upload): a transfer
		// fault, worth retrying, not an error of the request.
		code == "ClientDisconnected" || status == 499:
		return retryable(err, "%s: S3 store unavailable (%s)", msg, firstNonEmpty(code, strconv.Itoa(status)))
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "connection refused") ||
		strings.Contains(err.Error(), "exceeded maximum number of attempts") {
		return retryable(err, "%s: S3 store unreachable", msg)
	}
	return errcode.Wrap(errcode.Unknown, err, "%s: S3 store error %s", msg, firstNonEmpty(code, strconv.Itoa(status)))
}

func retryable(err error, format string, args ...any) error {
	e := errcode.As(errcode.Retry(errcode.Unavailable, retryAfter, format, args...))
	e.Err = err
	return e
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ------------------------------------------------------------ exact reader

var errTooLarge = errcode.New(errcode.TooLarge, "blob is longer than announced")

// exactReader yields exactly size bytes of r. Before it hands out the last
// byte it checks that r has nothing more, so an oversized body fails before
// the store could receive a complete request. A short r fails with
// IncompleteBody. The first failure is kept for cause.
type exactReader struct {
	r         io.Reader
	remaining int64
	size      int64
	checked   bool // r is known to end at size
	mu        sync.Mutex
	failure   error
}

func newExactReader(r io.Reader, size int64) *exactReader {
	return &exactReader{r: r, remaining: size, size: size}
}

func (e *exactReader) fail(err error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failure == nil {
		e.failure = err
	}
	return err
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.remaining == 0 {
		if !e.checked {
			if err := e.checkEnd(); err != nil {
				return 0, err
			}
		}
		return 0, io.EOF
	}
	if int64(len(p)) > e.remaining {
		p = p[:e.remaining]
	}
	n, err := e.r.Read(p)
	e.remaining -= int64(n)
	switch {
	case err == io.EOF && e.remaining > 0:
		return n, e.fail(errcode.New(errcode.IncompleteBody, "blob has %d bytes, %d announced", e.size-e.remaining, e.size))
	case err != nil && err != io.EOF:
		return n, e.fail(err)
	}
	if e.remaining == 0 {
		// Look one byte past the announced end before the last bytes go.
		if err := e.checkEnd(); err != nil {
			e.remaining += int64(n) // never deliver the tail
			return 0, err
		}
	}
	return n, nil
}

// checkEnd makes sure r has no byte left.
func (e *exactReader) checkEnd() error {
	var one [1]byte
	for {
		m, err := e.r.Read(one[:])
		if m > 0 {
			return e.fail(errTooLarge)
		}
		if err == io.EOF {
			e.checked = true
			return nil
		}
		if err != nil {
			return e.fail(err)
		}
	}
}

// cause returns the reader's own failure (size mismatch, the caller's
// reader error, the caller's cancellation) in preference to the transport
// error it caused.
func (e *exactReader) cause(ctx context.Context, transport error) error {
	e.mu.Lock()
	f := e.failure
	e.mu.Unlock()
	if f != nil {
		if errcode.As(f) != nil {
			return f
		}
		return fmt.Errorf("reading blob: %w", f)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), transport)
	}
	return transport
}

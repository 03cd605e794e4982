package s3api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

func (api *API) createMultipartUpload(q *request) (response, error) {
	sse, keyMD5, err := writeSSE(q)
	if err != nil {
		return nil, err
	}
	tags, err := headerTags(q)
	if err != nil {
		return nil, err
	}
	lock, err := headerLock(q, false)
	if err != nil {
		return nil, err
	}
	acl, err := aclHeaders(q.Header)
	if err != nil {
		return nil, err
	}
	md, err := objectMetadata(q.Header)
	if err != nil {
		return nil, err
	}
	u, err := api.uploads.CreateUpload(ctxOf(q), q.actor, object.CreateUploadInput{
		Bucket: q.bucket, Key: q.key, ContentType: contentType(q.Header),
		Metadata: md, Tags: tags, Lock: lock, ChecksumAlgorithm: q.Header.Get("X-Amz-Checksum-Algorithm"),
		ChecksumType: q.Header.Get("X-Amz-Checksum-Type"), SSE: sse, ACL: acl,
	})
	if err != nil {
		return nil, writeLockErr(err)
	}
	h := http.Header{}
	if u.ChecksumAlgorithm != "" { // the canonical name of the one asked for
		h.Set("X-Amz-Checksum-Algorithm", u.ChecksumAlgorithm)
		if u.ChecksumType != "" {
			h.Set("X-Amz-Checksum-Type", u.ChecksumType)
		}
	}
	sseHeaders(h, api.uploads.UploadEncryption(u))
	if keyMD5 != "" {
		sseCHeaders(h, keyMD5)
	}
	return xmlResponse{header: h, body: initiateMultipartUploadResult{Xmlns: s3NS, Bucket: q.bucket, Key: q.key, UploadID: u.ID}}, nil
}

func partNumber(q *request) (int, error) {
	n, err := strconv.Atoi(q.query().Get("partNumber"))
	if err != nil || n < 1 || n > object.MaxParts {
		return 0, s3err.New(s3err.InvalidArgument, "Part number must be an integer between 1 and 10000, inclusive")
	}
	return n, nil
}

func (api *API) uploadPart(q *request) (response, error) {
	n, err := partNumber(q)
	if err != nil {
		return nil, err
	}
	body, size, err := q.body()
	if err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, s3err.New(s3err.MissingContentLength, "")
	}
	if size > object.MaxPartSize {
		return nil, s3err.New(s3err.EntityTooLarge, "")
	}
	md5sum, err := contentMD5(q.Header)
	if err != nil {
		return nil, err
	}
	_, want, err := headerChecksum(q.Header)
	if err != nil {
		return nil, err
	}
	key, keyMD5, err := customerKey(q, sseCPrefix)
	if err != nil {
		return nil, err
	}
	p, err := api.uploads.PutPart(ctxOf(q), q.actor, object.PartInput{
		Bucket: q.bucket, Key: q.key, UploadID: q.query().Get("uploadId"), Number: n,
		Body: body, Size: size, MD5: md5sum, SHA256: q.pay.sha256, ChecksumWant: want, CustomerKey: key,
		Direct: q.direct,
	})
	if err != nil {
		return nil, err
	}
	h := http.Header{"Etag": {`"` + p.ETag + `"`}}
	sseHeaders(h, object.PartEncryption(p))
	if keyMD5 != "" {
		sseCHeaders(h, keyMD5)
	}
	if c := api.partChecksum(q, p); c.alg != integrity.NoChecksum {
		h.Set(c.alg.Header(), c.value)
	}
	return empty{header: h}, nil
}

// partChecksum is part p's checksum in its upload's algorithm (none if
// either is missing).
func (api *API) partChecksum(q *request, p meta.Part) checksumElement {
	if p.Checksum == "" {
		return checksumElement{}
	}
	u, err := api.uploads.GetUpload(ctxOf(q), q.actor, q.bucket, q.key, p.UploadID)
	if err != nil {
		return checksumElement{}
	}
	return checksumElement{storedAlgorithm(u.ChecksumAlgorithm), p.Checksum}
}

func (api *API) uploadPartCopy(q *request) (response, error) {
	n, err := partNumber(q)
	if err != nil {
		return nil, err
	}
	sb, sk, sv, err := copySource(q.Header)
	if err != nil {
		return nil, err
	}
	srcKey, _, err := customerKey(q, copySSECPrefix)
	if err != nil {
		return nil, err
	}
	key, keyMD5, err := customerKey(q, sseCPrefix)
	if err != nil {
		return nil, err
	}
	src, err := api.objects.GetVersion(ctxOf(q), q.actor, sb, sk, sv)
	if err != nil {
		return nil, err
	}
	// The source's customer key is checked before any byte is read.
	if err := object.CheckCustomerKey(src.Object, srcKey); err != nil {
		return nil, err
	}
	src.CustomerKey = srcKey
	if err := checkCopySourceConds(q.Header, src.Object); err != nil {
		return nil, err
	}
	offset, length := int64(0), src.Object.Size
	if rg := q.Header.Get("X-Amz-Copy-Source-Range"); rg != "" {
		var err error
		if offset, length, err = copySourceRange(rg, src.Object.Size); err != nil {
			return nil, err
		}
	}
	if length > object.MaxPartSize {
		return nil, s3err.New(s3err.EntityTooLarge, "")
	}
	p, err := api.uploads.CopyPart(ctxOf(q), q.actor, object.PartInput{
		Bucket: q.bucket, Key: q.key, UploadID: q.query().Get("uploadId"), Number: n, CustomerKey: key,
	}, src, offset, length)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	copySourceVersionHeader(h, src, sv)
	sseHeaders(h, object.PartEncryption(p))
	if keyMD5 != "" {
		sseCHeaders(h, keyMD5)
	}
	return xmlResponse{header: h, body: copyPartResult{Xmlns: s3NS, LastModified: iso8601(p.ModTime), ETag: `"` + p.ETag + `"`,
		Checksum: api.partChecksum(q, p)}}, nil
}

// copySourceRange parses x-amz-copy-source-range: bytes=first-last, both
// given (no suffix or open-ended range), within the source's size bytes;
// S3 copies exactly that range or refuses it, never a clipped one.
func copySourceRange(rg string, size int64) (offset, length int64, err error) {
	res, s, l := httpx.ParseRange(rg, size)
	_, spec, _ := strings.Cut(rg, "=") // the unit is ParseRange's to check
	first, last, _ := strings.Cut(spec, "-")
	if res == httpx.RangeNone || first == "" || last == "" {
		return 0, 0, s3err.New(s3err.InvalidArgument, "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy")
	}
	if end, perr := strconv.ParseInt(last, 10, 64); res != httpx.RangeOK || perr != nil || end >= size {
		return 0, 0, s3err.New(s3err.InvalidArgument, "Range specified is not valid for source object of size: "+strconv.FormatInt(size, 10))
	}
	return s, l, nil
}

func (api *API) completeMultipartUpload(q *request) (response, error) {
	var req completeMultipartUpload
	if err := api.readXML(q, &req); err != nil {
		return nil, err
	}
	parts, err := completedParts(req)
	if err != nil {
		return nil, err
	}
	cond, err := writeCond(q.Header)
	if err != nil {
		return nil, err
	}
	// SSE-C headers are optional on completion (s3transfer sends them);
	// given, they must be the upload's.
	key, _, err := customerKey(q, sseCPrefix)
	if err != nil {
		return nil, err
	}
	if key != nil {
		u, err := api.uploads.GetUpload(ctxOf(q), q.actor, q.bucket, q.key, q.query().Get("uploadId"))
		if err != nil {
			return nil, err
		}
		if err := object.CheckUploadCustomerKey(u, key); err != nil {
			return nil, err
		}
	}
	want, err := completionExpect(q.Header)
	if err != nil {
		return nil, err
	}
	o, err := api.uploads.CompleteUploadExpecting(ctxOf(q), q.actor, q.bucket, q.key, q.query().Get("uploadId"), parts, cond, want)
	if err != nil {
		return nil, err
	}
	res := completeMultipartUploadResult{Xmlns: s3NS, Location: api.objectURL(q), Bucket: q.bucket, Key: q.key, ETag: `"` + o.ETag + `"`,
		Checksum: checksumElement{storedAlgorithm(o.Checksum.Algorithm), o.Checksum.Value}, ChecksumType: o.Checksum.Type}
	h := http.Header{}
	versionHeader(h, o.VersionID)
	sseHeaders(h, object.EncryptionOf(o))
	return xmlResponse{header: h, body: res}, nil
}

func (api *API) abortMultipartUpload(q *request) (response, error) {
	if err := api.uploads.AbortUpload(ctxOf(q), q.actor, q.bucket, q.key, q.query().Get("uploadId")); err != nil {
		return nil, err
	}
	return empty{status: http.StatusNoContent}, nil
}

func (api *API) listParts(q *request) (response, error) {
	v := q.query()
	after, limit := 0, 1000
	if s := v.Get("part-number-marker"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, s3err.New(s3err.InvalidArgument, "invalid part-number-marker")
		}
		after = n
	}
	if s := v.Get("max-parts"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, s3err.New(s3err.InvalidArgument, "invalid max-parts")
		}
		limit = min(n, 1000)
	}
	u, parts, more, err := api.uploads.ListParts(ctxOf(q), q.actor, q.bucket, q.key, v.Get("uploadId"), after, max(limit, 1))
	if err != nil {
		return nil, err
	}
	if limit == 0 {
		parts, more = nil, len(parts) > 0
	}
	res := listPartsResult{
		Xmlns: s3NS, Bucket: q.bucket, Key: q.key, UploadID: u.ID, Initiator: ownerOf(u.InitiatorID), Owner: ownerOf(u.InitiatorID),
		StorageClass: "STANDARD", PartNumberMarker: after, MaxParts: limit, IsTruncated: more, ChecksumAlgorithm: u.ChecksumAlgorithm,
	}
	alg := storedAlgorithm(u.ChecksumAlgorithm)
	for _, p := range parts {
		res.Parts = append(res.Parts, partInfo{PartNumber: p.Number, LastModified: iso8601(p.ModTime), ETag: `"` + p.ETag + `"`, Size: p.Size,
			Checksum: checksumElement{alg, p.Checksum}})
		res.NextPartNumberMarker = p.Number
	}
	return xmlResponse{body: res}, nil
}

func (api *API) listMultipartUploads(q *request) (response, error) {
	v := q.query()
	limit := 1000
	if s := v.Get("max-uploads"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, s3err.New(s3err.InvalidArgument, "invalid max-uploads")
		}
		limit = min(n, 1000)
	}
	p := listParams{prefix: v.Get("prefix"), delimiter: v.Get("delimiter"), encode: v.Get("encoding-type") == "url"}
	opts := meta.ListUploadsOptions{Prefix: p.prefix, KeyMarker: v.Get("key-marker"), UploadIDMarker: v.Get("upload-id-marker"), Limit: max(limit, 1)}
	res := listMultipartUploadsResult{
		Xmlns: s3NS, Bucket: q.bucket, KeyMarker: p.enc(opts.KeyMarker), UploadIDMarker: opts.UploadIDMarker,
		Prefix: p.enc(p.prefix), Delimiter: p.enc(p.delimiter), MaxUploads: limit,
	}
	if p.encode {
		res.EncodingType = "url"
	}
	ups, more, err := api.uploads.ListUploads(ctxOf(q), q.actor, q.bucket, opts)
	if err != nil {
		return nil, err
	}
	if limit == 0 {
		ups, more = nil, len(ups) > 0
	}
	seen := map[string]bool{}
	for _, u := range ups {
		if p.delimiter != "" {
			rest := strings.TrimPrefix(u.Key, p.prefix)
			if i := strings.Index(rest, p.delimiter); i >= 0 {
				cp := p.prefix + rest[:i+len(p.delimiter)]
				if !seen[cp] {
					seen[cp] = true
					res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: p.enc(cp)})
				}
				continue
			}
		}
		res.Uploads = append(res.Uploads, uploadInfo{
			Key: p.enc(u.Key), UploadID: u.ID, Initiator: ownerOf(u.InitiatorID), Owner: ownerOf(u.InitiatorID),
			StorageClass: "STANDARD", Initiated: iso8601(u.CreatedAt),
		})
	}
	res.IsTruncated = more
	if more && len(ups) > 0 {
		last := ups[len(ups)-1]
		res.NextKeyMarker, res.NextUploadIDMarker = p.enc(last.Key), last.ID
	}
	return xmlResponse{body: res}, nil
}

// completedParts reads a CompleteMultipartUpload body's parts as S3
// does: at least one, each with its PartNumber (at least 1) and ETag
// (else MalformedXML), and at most one well-formed part checksum.
func completedParts(req completeMultipartUpload) ([]meta.CompletePart, error) {
	if len(req.Parts) == 0 {
		return nil, s3err.New(s3err.MalformedXML, "")
	}
	parts := make([]meta.CompletePart, len(req.Parts))
	for i, p := range req.Parts {
		if p.PartNumber == nil || p.ETag == nil {
			return nil, s3err.New(s3err.MalformedXML, "")
		}
		if *p.PartNumber < 1 {
			return nil, s3err.New(s3err.InvalidArgument, "PartNumber must be >= 1")
		}
		parts[i] = meta.CompletePart{Number: *p.PartNumber, ETag: *p.ETag}
		for _, c := range [...]struct {
			alg   integrity.Algorithm
			value string
		}{{integrity.CRC32, p.ChecksumCRC32}, {integrity.CRC32C, p.ChecksumCRC32C}, {integrity.CRC64NVME, p.ChecksumCRC64NVME},
			{integrity.SHA1, p.ChecksumSHA1}, {integrity.SHA256, p.ChecksumSHA256}} {
			if c.value == "" {
				continue
			}
			if _, ok := c.alg.Decode(c.value); !ok || parts[i].Checksum.Algorithm != "" {
				return nil, s3err.New(s3err.InvalidArgument, "Invalid Base64 or multiple checksums present in request")
			}
			parts[i].Checksum = meta.Checksum{Algorithm: c.alg.String(), Value: c.value}
		}
	}
	return parts, nil
}

// completionExpect reads what a CompleteMultipartUpload asserts of the
// object: one x-amz-checksum-ALG (a COMPOSITE value ends in "-N"), its
// x-amz-checksum-type (alone, the upload's), and x-amz-mp-object-size.
// Malformed values are InvalidRequest, in S3's words.
func completionExpect(h http.Header) (object.Expect, error) {
	want := object.Expect{Size: -1}
	for _, a := range integrity.Algorithms {
		v := h.Get(a.Header())
		if v == "" {
			continue
		}
		if want.Checksum.Algorithm != "" {
			return want, s3err.New(s3err.InvalidRequest, multipleChecksums)
		}
		value, n, composite := strings.Cut(v, "-")
		if _, ok := a.Decode(value); !ok || composite && !validPartCount(n) {
			return want, s3err.New(s3err.InvalidRequest, "Value for "+a.Header()+" header is invalid.")
		}
		want.Checksum = meta.Checksum{Algorithm: a.String(), Value: v}
	}
	if t := h.Get("X-Amz-Checksum-Type"); t != "" {
		if !strings.EqualFold(t, "COMPOSITE") && !strings.EqualFold(t, "FULL_OBJECT") {
			return want, s3err.New(s3err.InvalidRequest, "Value for x-amz-checksum-type header is invalid.")
		}
		want.Checksum.Type = strings.ToUpper(t)
	}
	if v := h.Get("X-Amz-Mp-Object-Size"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			return want, s3err.New(s3err.InvalidRequest, "Value for x-amz-mp-object-size header is invalid: '"+v+"'")
		case n < 0:
			return want, s3err.New(s3err.InvalidRequest, "Value for x-amz-mp-object-size header is less than zero: '"+v+"'")
		}
		want.Size = n
	}
	return want, nil
}

// multipleChecksums is S3's refusal of a request with several
// x-amz-checksum-ALG headers.
const multipleChecksums = "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed."

// validPartCount reports whether n is a composite checksum's part count.
func validPartCount(n string) bool {
	c, err := strconv.Atoi(n)
	return err == nil && c >= 1 && c <= 10000
}

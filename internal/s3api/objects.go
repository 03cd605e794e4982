package s3api

import (
	"encoding/base64"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// MaxPutSize is the largest single PutObject (S3's limit).
const MaxPutSize = 5 << 30

// objectMetadata is the metadata an object write keeps: its x-amz-meta-*
// headers (names lower-cased, prefix removed; a value of RFC 2047 encoded
// words stored decoded, as S3 does: metadataHeader encodes it again on
// the way out), and the standard headers S3 keeps with an object
// (standardHeaders, under object.StandardMetadataPrefix). A user
// metadata name under that prefix is InvalidArgument.
func objectMetadata(h http.Header) (map[string]string, error) {
	var md map[string]string
	set := func(k, v string) {
		if md == nil {
			md = map[string]string{}
		}
		md[k] = v
	}
	for k, v := range h {
		lk := strings.ToLower(k)
		if name, ok := strings.CutPrefix(lk, "x-amz-meta-"); ok && name != "" {
			if strings.HasPrefix(name, object.StandardMetadataPrefix) {
				return nil, s3err.New(s3err.InvalidArgument, "the x-amz-meta-"+object.StandardMetadataPrefix+"* names are reserved by Coffer")
			}
			val := strings.Join(v, ",")
			if d, err := new(mime.WordDecoder).DecodeHeader(val); err == nil {
				val = d // an unknown charset: kept as sent
			}
			set(name, val)
		}
	}
	for _, name := range standardHeaders {
		v := strings.Join(h.Values(name), ",")
		if name == "Content-Encoding" {
			v = contentEncoding(v)
		}
		if v != "" {
			set(object.StandardMetadataPrefix+strings.ToLower(name), v)
		}
	}
	return md, nil
}

// standardHeaders are the HTTP headers S3 keeps with an object besides
// Content-Type, and answers on GET and HEAD (docs/s3.md).
var standardHeaders = []string{"Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires"}

// contentEncoding is a Content-Encoding as S3 keeps it: without
// aws-chunked (the body's framing, not the object's encoding), otherwise
// as sent.
func contentEncoding(v string) string {
	var keep []string
	for t := range strings.SplitSeq(v, ",") {
		if t = strings.TrimSpace(t); t != "" && !strings.EqualFold(t, "aws-chunked") {
			keep = append(keep, t)
		}
	}
	if len(keep) == 0 {
		return ""
	}
	if !strings.Contains(strings.ToLower(v), "aws-chunked") {
		return strings.TrimSpace(v)
	}
	return strings.Join(keep, ", ")
}

// metadataHeader is a stored metadata value as S3 answers it: a value
// with non-US-ASCII characters RFC 2047-encoded (one UTF-8 base64
// encoded word), so that headers stay ASCII.
func metadataHeader(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] >= utf8.RuneSelf {
			return "=?UTF-8?B?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
		}
	}
	return v
}

// defaultContentType is what S3 stores for an object written without a
// Content-Type (it does not guess from the key, as the file API does).
const defaultContentType = "binary/octet-stream"

// contentType is the request's Content-Type, or S3's default.
func contentType(h http.Header) string {
	if ct := h.Get("Content-Type"); ct != "" {
		return ct
	}
	return defaultContentType
}

// contentMD5 decodes Content-MD5; malformed (empty too: a header sent
// is a digest to check) is InvalidDigest.
func contentMD5(h http.Header) ([]byte, error) {
	vs := h.Values("Content-Md5")
	if len(vs) == 0 {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(vs[0]))
	if err != nil || len(b) != 16 {
		return nil, s3err.New(s3err.InvalidDigest, "")
	}
	return b, nil
}

// headerChecksum finds an x-amz-checksum-<alg> header (not a trailer):
// its algorithm and digest; without one, the algorithm of
// x-amz-sdk-checksum-algorithm if it names one (computed, not checked).
// More than one is InvalidRequest, whatever their values; a malformed
// (or empty) value InvalidDigest.
func headerChecksum(h http.Header) (alg integrity.Algorithm, want []byte, err error) {
	for _, a := range integrity.Algorithms {
		if len(h.Values(a.Header())) == 0 {
			continue
		}
		if alg != integrity.NoChecksum {
			return 0, nil, s3err.New(s3err.InvalidRequest, multipleChecksums)
		}
		alg = a
	}
	if alg != integrity.NoChecksum {
		var ok bool
		if want, ok = alg.Decode(h.Get(alg.Header())); !ok { // an empty value is malformed too
			return 0, nil, s3err.New(s3err.InvalidDigest, alg.Header()+" is malformed")
		}
		return alg, want, nil
	}
	if alg == integrity.NoChecksum {
		alg, _ = integrity.ParseAlgorithm(h.Get("X-Amz-Sdk-Checksum-Algorithm"))
	}
	return alg, want, nil
}

// storedAlgorithm is the algorithm of a checksum the object service
// stored (under its canonical name).
func storedAlgorithm(name string) integrity.Algorithm {
	a, _ := integrity.ParseAlgorithm(name)
	return a
}

func writeCond(h http.Header) (meta.Cond, error) {
	var c meta.Cond
	switch inm := strings.TrimSpace(h.Get("If-None-Match")); inm {
	case "":
	case "*":
		c.IfNoneMatch = true
	default:
		c.IfNoneMatchETag = strings.Trim(inm, `"`)
	}
	if im := strings.TrimSpace(h.Get("If-Match")); im != "" {
		c.IfMatch = strings.Trim(im, `"`)
	}
	return c, nil
}

func (api *API) putObject(q *request) (response, error) {
	body, size, err := q.body()
	if err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, s3err.New(s3err.MissingContentLength, "")
	}
	if size > MaxPutSize {
		return nil, s3err.New(s3err.EntityTooLarge, "")
	}
	_, h, err := api.storeObject(q, body, size)
	if err != nil {
		return nil, err
	}
	return empty{header: h}, nil
}

// storeObject writes body (size bytes, -1 if unknown) as the object q
// addresses, with the object headers of q (Content-MD5, checksums,
// Content-Type, SSE, tags, lock, metadata, write conditions): PutObject's
// path, which PostObject takes too. It returns the object and the
// response headers that describe it.
func (api *API) storeObject(q *request, body io.Reader, size int64) (meta.Object, http.Header, error) {
	fail := func(err error) (meta.Object, http.Header, error) { return meta.Object{}, nil, err }
	md5sum, err := contentMD5(q.Header)
	if err != nil {
		return fail(err)
	}
	alg, want, err := headerChecksum(q.Header)
	if err != nil {
		return fail(err)
	}
	if q.pay.trailerAlg != integrity.NoChecksum {
		alg, want = q.pay.trailerAlg, nil // verified by the trailer decoder
	}
	cond, err := writeCond(q.Header)
	if err != nil {
		return fail(err)
	}
	ct := contentType(q.Header)
	if _, _, err := mime.ParseMediaType(ct); err != nil {
		return fail(s3err.New(s3err.InvalidArgument, "Content-Type is malformed"))
	}
	sse, keyMD5, err := writeSSE(q)
	if err != nil {
		return fail(err)
	}
	tags, err := headerTags(q)
	if err != nil {
		return fail(err)
	}
	lock, err := headerLock(q, true)
	if err != nil {
		return fail(err)
	}
	acl, err := aclHeaders(q.Header)
	if err != nil {
		return fail(err)
	}
	md, err := objectMetadata(q.Header)
	if err != nil {
		return fail(err)
	}
	o, err := api.objects.Put(ctxOf(q), q.actor, object.PutInput{
		Bucket: q.bucket, Key: q.key, Body: body, Size: size, ContentType: ct,
		Metadata: md, Tags: tags, Lock: lock, MD5: md5sum, SHA256: q.pay.sha256,
		ChecksumAlgorithm: alg.String(), ChecksumWant: want, Cond: cond, SSE: sse, ACL: acl,
	})
	if err != nil {
		return fail(writeLockErr(err))
	}
	h := http.Header{"Etag": {`"` + o.ETag + `"`}}
	if o.VersionID != meta.NullVersion {
		// S3 names no version on a PUT into a suspended bucket (the
		// null version): its PutObject reference's "versioning
		// suspended" example answers without x-amz-version-id.
		versionHeader(h, o.VersionID)
	}
	checksumHeaders(h, o.Checksum)
	sseHeaders(h, object.EncryptionOf(o))
	if keyMD5 != "" {
		sseCHeaders(h, keyMD5)
	}
	if b, err := api.buckets.GetBucket(ctxOf(q), q.actor, q.bucket); err == nil {
		api.expirationHeader(h, b, o)
	}
	return o, h, nil
}

// versionHeader sets x-amz-version-id to id, the version a write made or
// a read read, unless id is "" (a bucket never versioned).
func versionHeader(h http.Header, id string) {
	if id != "" {
		h.Set("X-Amz-Version-Id", id)
	}
}

// versionParam returns the versionId parameter of q ("" if absent):
// InvalidArgument if it is there but empty or malformed.
func versionParam(q *request) (string, error) {
	vs, ok := q.query()["versionId"]
	switch {
	case !ok:
		return "", nil
	case vs[0] == "":
		return "", s3err.New(s3err.InvalidArgument, "Version id cannot be the empty string")
	case !meta.ValidVersionID(vs[0]):
		return "", s3err.New(s3err.InvalidArgument, "Invalid version id specified")
	}
	return vs[0], nil
}

// readVersion returns the version a read names or reads: none in a bucket
// never versioned, unless the request named one.
func readVersion(rd *object.Reader, named string) string {
	switch {
	case named != "":
		return named
	case rd.Bucket.Versioning == meta.Unversioned:
		return ""
	}
	return rd.Object.VersionID
}

// checksumHeaderKeys is each algorithm's header in canonical form
// (Header.Set would canonicalise, allocating, on every response).
var checksumHeaderKeys = func() map[integrity.Algorithm]string {
	m := map[integrity.Algorithm]string{}
	for _, a := range integrity.Algorithms {
		m[a] = http.CanonicalHeaderKey(a.Header())
	}
	return m
}()

func checksumHeaders(h http.Header, c meta.Checksum) {
	a := storedAlgorithm(c.Algorithm)
	if a == integrity.NoChecksum {
		return
	}
	h[checksumHeaderKeys[a]] = []string{c.Value}
	if c.Type != "" {
		h.Set("X-Amz-Checksum-Type", c.Type)
	}
}

// namedVersion reads the version q's versionId names (the latest if none)
// and returns it with that versionId.
func (api *API) namedVersion(q *request) (*object.Reader, string, error) {
	vid, err := versionParam(q)
	if err != nil {
		return nil, "", err
	}
	rd, err := api.objects.GetVersion(ctxOf(q), q.actor, q.bucket, q.key, vid)
	return rd, vid, err
}

// getObject serves GetObject and HeadObject.
func (api *API) getObject(q *request) (response, error) {
	v := q.query()
	for name := range v {
		if strings.HasPrefix(name, "response-") && !q.authed {
			return nil, s3err.New(s3err.InvalidRequest, "Request specific response headers cannot be used for anonymous GET requests.")
		}
	}
	key, keyMD5, err := customerKey(q, sseCPrefix)
	if err != nil {
		return nil, err
	}
	// partNumber is checked before the key is looked up, as S3 does.
	part := 0
	if s := v.Get("partNumber"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > object.MaxParts {
			return nil, s3err.New(s3err.InvalidArgument, "Part number must be an integer between 1 and 10000, inclusive.")
		}
		if q.Header.Get("Range") != "" {
			return nil, s3err.New(s3err.InvalidRequest, "Cannot specify both Range header and partNumber query parameter")
		}
		part = n
	}
	rd, vid, err := api.namedVersion(q)
	if err != nil {
		return nil, err
	}
	// SSE-C: the key is checked before anything is sent (HEAD too).
	if err := object.CheckCustomerKey(rd.Object, key); err != nil {
		return nil, err
	}
	rd.CustomerKey = key
	return &objectResponse{api: api, rd: rd, part: part, keyMD5: keyMD5, version: readVersion(rd, vid)}, nil
}

// responseOverrides are the query parameters of a GetObject that set a
// response header.
var responseOverrides = []struct{ param, header string }{
	{"response-content-type", "Content-Type"}, {"response-content-language", "Content-Language"},
	{"response-expires", "Expires"}, {"response-cache-control", "Cache-Control"},
	{"response-content-disposition", "Content-Disposition"}, {"response-content-encoding", "Content-Encoding"},
}

type objectResponse struct {
	api     *API
	rd      *object.Reader
	part    int
	keyMD5  string // SSE-C: echoed
	version string // x-amz-version-id, if any
}

func (or *objectResponse) respond(w http.ResponseWriter, q *request) {
	o := or.rd.Object
	h := w.Header()
	h.Set("Content-Type", o.ContentType)
	versionHeader(h, or.version)
	sseHeaders(h, object.EncryptionOf(o))
	if or.keyMD5 != "" {
		sseCHeaders(h, or.keyMD5)
	}
	for k, val := range o.Metadata {
		if name, ok := strings.CutPrefix(k, object.StandardMetadataPrefix); ok {
			h.Set(name, val) // a standard header S3 keeps (objectMetadata)
			continue
		}
		h["X-Amz-Meta-"+k] = []string{metadataHeader(val)}
	}
	taggingCount(h, o)
	or.api.expirationHeader(h, or.rd.Bucket, o)
	lockHeaders(h, or.rd.Bucket, o)
	var fixed *httpx.Span
	if or.part > 0 {
		// A part is a range of the object (206 with its Content-Range;
		// a single-blob object is its own part 1), with the part count
		// of a multipart object only, as S3 answers; an empty object is
		// answered whole (no range of it exists).
		s, n, count, ok := partRange(o, or.part)
		if !ok {
			or.api.fail(w, q, s3err.New(s3err.InvalidPartNumber, ""))
			return
		}
		if o.Parts != nil {
			h.Set("X-Amz-Mp-Parts-Count", strconv.Itoa(count))
		}
		fixed = &httpx.Span{Status: http.StatusPartialContent, Start: s, Length: n}
		if o.Size == 0 {
			fixed.Status = http.StatusOK
		}
	}
	sp, ok, err := httpx.PlanDownload(w, q.Request, httpx.Representation{ETag: o.ETag, ModTime: o.ModTime, Size: o.Size}, fixed)
	if err != nil {
		or.api.fail(w, q, err)
	}
	if !ok {
		return
	}
	if sp.Status == http.StatusOK && strings.EqualFold(q.Header.Get("X-Amz-Checksum-Mode"), "ENABLED") {
		checksumHeaders(h, o.Checksum)
	}
	if raw := q.URL.RawQuery; strings.Contains(raw, "response-") || strings.Contains(raw, "%") {
		for _, o := range responseOverrides {
			if val := q.query().Get(o.param); val != "" {
				h.Set(o.header, val)
			}
		}
	}
	if err := httpx.SendSpan(w, q.Request, or.rd, sp, or.api.log, "bucket", o.Bucket, "key", o.Key); err != nil {
		or.api.fail(w, q, err)
	}
}

// partRange returns the byte range of part n (1-based) of o, and the part
// count. A single-blob object has one part.
func partRange(o meta.Object, n int) (start, length int64, count int, ok bool) {
	if o.Parts == nil {
		return 0, o.Size, 1, n == 1
	}
	if n > len(o.Parts) {
		return 0, 0, len(o.Parts), false
	}
	for _, p := range o.Parts[:n-1] {
		start += p.Size
	}
	return start, o.Parts[n-1].Size, len(o.Parts), true
}

// copySource parses x-amz-copy-source: [/]bucket/key[?versionId=...],
// URL-encoded ("" version: the latest).
func copySource(h http.Header) (bucket, key, version string, err error) {
	src := h.Get("X-Amz-Copy-Source")
	if i := strings.Index(src, "?"); i >= 0 {
		vals, perr := url.ParseQuery(src[i+1:])
		vs, named := vals["versionId"]
		switch {
		case perr != nil:
			return "", "", "", s3err.New(s3err.InvalidArgument, "Copy Source must mention the source bucket and key: sourcebucket/sourcekey")
		case named && (vs[0] == "" || !meta.ValidVersionID(vs[0])):
			return "", "", "", s3err.New(s3err.InvalidArgument, "Invalid version id specified")
		case named:
			version = vs[0]
		}
		src = src[:i]
	}
	dec, derr := url.PathUnescape(src)
	if derr != nil || !utf8.ValidString(dec) {
		return "", "", "", s3err.New(s3err.InvalidArgument, "Copy Source must mention the source bucket and key: sourcebucket/sourcekey")
	}
	dec = strings.TrimPrefix(dec, "/")
	bucket, key, ok := strings.Cut(dec, "/")
	if !ok || bucket == "" || key == "" {
		return "", "", "", s3err.New(s3err.InvalidArgument, "Copy Source must mention the source bucket and key: sourcebucket/sourcekey")
	}
	return bucket, key, version, nil
}

// checkCopySourceConds evaluates x-amz-copy-source-if-* against src.
func checkCopySourceConds(h http.Header, src meta.Object) error {
	if v := h.Get("X-Amz-Copy-Source-If-Match"); v != "" && !httpx.MatchETag(v, src.ETag, false) {
		return s3err.New(s3err.PreconditionFailed, "")
	}
	if v := h.Get("X-Amz-Copy-Source-If-None-Match"); v != "" && httpx.MatchETag(v, src.ETag, false) {
		return s3err.New(s3err.PreconditionFailed, "")
	}
	mod := src.ModTime.Truncate(time.Second)
	if v := h.Get("X-Amz-Copy-Source-If-Unmodified-Since"); v != "" && h.Get("X-Amz-Copy-Source-If-Match") == "" {
		if t, err := http.ParseTime(v); err == nil && mod.After(t) {
			return s3err.New(s3err.PreconditionFailed, "")
		}
	}
	if v := h.Get("X-Amz-Copy-Source-If-Modified-Since"); v != "" && h.Get("X-Amz-Copy-Source-If-None-Match") == "" {
		if t, err := http.ParseTime(v); err == nil && !mod.After(t) {
			return s3err.New(s3err.PreconditionFailed, "")
		}
	}
	return nil
}

func (api *API) copyObject(q *request) (response, error) {
	sb, sk, sv, err := copySource(q.Header)
	if err != nil {
		return nil, err
	}
	srcKey, _, err := customerKey(q, copySSECPrefix)
	if err != nil {
		return nil, err
	}
	sse, keyMD5, err := writeSSE(q)
	if err != nil {
		return nil, err
	}
	src, err := api.objects.GetVersion(ctxOf(q), q.actor, sb, sk, sv)
	if err != nil {
		return nil, err
	}
	if err := object.CheckCustomerKey(src.Object, srcKey); err != nil {
		return nil, err
	}
	src.CustomerKey = srcKey
	if err := checkCopySourceConds(q.Header, src.Object); err != nil {
		return nil, err
	}
	directive := strings.ToUpper(q.Header.Get("X-Amz-Metadata-Directive"))
	if directive != "" && directive != "COPY" && directive != "REPLACE" {
		return nil, s3err.New(s3err.InvalidArgument, "Unknown metadata directive.")
	}
	replace := directive == "REPLACE"
	// x-amz-tagging-directive is COPY or REPLACE (the table,
	// unsupported.go); under COPY, the default, x-amz-tagging is not used.
	replaceTags := strings.EqualFold(strings.TrimSpace(q.Header.Get("X-Amz-Tagging-Directive")), "REPLACE")
	var tags []meta.Tag
	if replaceTags {
		if tags, err = headerTags(q); err != nil {
			return nil, err
		}
	}
	if sb == q.bucket && sk == q.key && !replace && !replaceTags && sv == "" {
		return nil, s3err.New(s3err.InvalidRequest, "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
	}
	if src.Object.Size > MaxPutSize {
		return nil, s3err.New(s3err.InvalidRequest, "The specified copy source is larger than the maximum allowable size for a copy source: 5368709120")
	}
	cond, err := writeCond(q.Header)
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
	in := object.CopyInput{DstBucket: q.bucket, DstKey: q.key, Cond: cond, ReplaceMetadata: replace, ReplaceTags: replaceTags, Tags: tags,
		Lock: lock, SSE: sse, ACL: acl}
	if replace {
		in.ContentType = contentType(q.Header)
		if in.Metadata, err = objectMetadata(q.Header); err != nil {
			return nil, err
		}
	}
	o, err := api.objects.CopyFrom(ctxOf(q), q.actor, src, in)
	if err != nil {
		return nil, writeLockErr(err)
	}
	h := http.Header{}
	versionHeader(h, o.VersionID)
	copySourceVersionHeader(h, src, sv)
	sseHeaders(h, object.EncryptionOf(o))
	if keyMD5 != "" {
		sseCHeaders(h, keyMD5)
	}
	res := copyObjectResult{Xmlns: s3NS, LastModified: iso8601(o.ModTime), ETag: `"` + o.ETag + `"`,
		Checksum: checksumElement{storedAlgorithm(o.Checksum.Algorithm), o.Checksum.Value}}
	if res.Checksum.alg != integrity.NoChecksum {
		res.ChecksumType = o.Checksum.Type
	}
	return xmlResponse{header: h, body: res}, nil
}

// copySourceVersionHeader sets x-amz-copy-source-version-id to the
// version a copy read (named, or the latest of a versioned bucket).
func copySourceVersionHeader(h http.Header, src *object.Reader, named string) {
	if v := readVersion(src, named); v != "" {
		h.Set("X-Amz-Copy-Source-Version-Id", v)
	}
}

// deleteHeaders are the answer's headers of a delete that removed or
// wrote the version o (nothing in a bucket never versioned).
func deleteHeaders(o meta.Object) http.Header {
	h := http.Header{}
	versionHeader(h, o.VersionID)
	if o.DeleteMarker {
		h.Set("X-Amz-Delete-Marker", "true")
	}
	return h
}

// deleteObject deletes a key (a delete marker in a versioned bucket) or,
// with versionId, one version for good. S3 answers 204 for a missing key
// or version (but not a missing bucket).
func (api *API) deleteObject(q *request) (response, error) {
	cond, err := writeCond(q.Header)
	if err != nil {
		return nil, err
	}
	cond.BypassGovernance = bypassGovernance(q)
	vid, err := versionParam(q)
	if err != nil {
		return nil, err
	}
	var o meta.Object
	if vid != "" {
		o, err = api.objects.DeleteVersion(ctxOf(q), q.actor, q.bucket, q.key, vid, cond)
		o.VersionID = vid
	} else {
		o, err = api.objects.Delete(ctxOf(q), q.actor, q.bucket, q.key, cond)
	}
	if err != nil && !missingKey(err) {
		return nil, err
	}
	return empty{status: http.StatusNoContent, header: deleteHeaders(o)}, nil
}

// missingKey reports whether err is the service's NotFound of a key or a
// version (not of a bucket).
func missingKey(err error) bool {
	e := errcode.As(err)
	return e != nil && e.Code == errcode.NotFound && (e.Detail["resource"] == "key" || e.Detail["resource"] == "version")
}

// maxDeleteObjects is S3's limit of keys per DeleteObjects.
const maxDeleteObjects = 1000

func (api *API) deleteObjects(q *request) (response, error) {
	var req deleteRequest
	if err := api.readXML(q, &req); err != nil {
		return nil, err
	}
	// S3 requires Content-MD5 or a checksum (checked once the body is
	// verified, before anything is deleted).
	if err := requireChecksum(q); err != nil {
		return nil, err
	}
	if len(req.Objects) > maxDeleteObjects {
		return nil, s3err.New(s3err.MalformedXML, "at most 1000 keys per request")
	}
	if len(req.Objects) == 0 {
		return nil, s3err.New(s3err.MalformedXML, "name at least one Object")
	}
	if _, err := api.buckets.GetBucket(ctxOf(q), q.actor, q.bucket); err != nil {
		return nil, err
	}
	res := deleteResult{Xmlns: s3NS}
	for _, o := range req.Objects {
		var err error
		var del meta.Object
		cond := meta.Cond{IfMatch: strings.Trim(strings.TrimSpace(o.ETag), `"`), BypassGovernance: bypassGovernance(q)}
		switch {
		case o.VersionID != "" && !meta.ValidVersionID(o.VersionID):
			err = s3err.New(s3err.InvalidArgument, "Invalid version id specified")
		case o.LastModifiedTime != nil || o.Size != nil:
			err = s3err.New(s3err.NotImplemented, "LastModifiedTime and Size delete conditions are not implemented by Coffer")
		case o.VersionID != "":
			del, err = api.objects.DeleteVersion(ctxOf(q), q.actor, q.bucket, o.Key, o.VersionID, cond)
		default:
			del, err = api.objects.Delete(ctxOf(q), q.actor, q.bucket, o.Key, cond)
		}
		if err != nil && !(missingKey(err) && o.ETag == "") {
			row := s3err.Translate(err)
			res.Errors = append(res.Errors, deleteError{Key: o.Key, VersionID: o.VersionID, Code: row.Code, Message: row.Message})
			continue
		}
		if req.Quiet {
			continue
		}
		d := deletedObject{Key: o.Key, VersionID: o.VersionID}
		switch {
		case err == nil && del.DeleteMarker:
			// A marker written (no version named), or removed.
			d.DeleteMarker, d.DeleteMarkerVersionID = new(true), del.VersionID
		case err == nil && o.VersionID != "":
			// A version removed that was not a marker: S3 says so
			// (DeletedObject's DeleteMarker: "was (true) or was not
			// (false) a delete marker before deletion").
			d.DeleteMarker = new(false)
		}
		res.Deleted = append(res.Deleted, d)
	}
	return xmlResponse{body: res}, nil
}

package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

type fileJSON struct {
	Bucket       string            `json:"bucket"`
	Key          string            `json:"key"`
	Size         int64             `json:"size"`
	SHA256       string            `json:"sha256,omitempty"`
	ETag         string            `json:"etag"`
	ContentType  string            `json:"content_type,omitempty"` // none in gateway buckets' listings (docs/gateway.md)
	LastModified time.Time         `json:"last_modified"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	// VersionID is the version written, moved or restored ("null" in a
	// bucket not Enabled; the object service leaves it out of some writes
	// into a bucket never versioned); none in listings.
	VersionID string `json:"version_id,omitempty"`
}

func toFileJSON(o meta.Object) fileJSON {
	return fileJSON{
		Bucket: o.Bucket, Key: o.Key, Size: o.Size, SHA256: o.SHA256, ETag: o.ETag,
		ContentType: o.ContentType, LastModified: o.ModTime, Metadata: object.UserMetadata(o.Metadata), VersionID: o.VersionID,
	}
}

// clientDigests reads the checksums a client may announce for an upload:
// Content-Digest (RFC 9530, sha-256), X-Checksum-Sha256 (hex) and
// Content-MD5 (base64).
func clientDigests(h http.Header) (sha, md5sum []byte, err error) {
	bad := func(what string) error {
		return errcode.New(errcode.InvalidArgument, "%s header is malformed", what)
	}
	if cd := h.Get("Content-Digest"); cd != "" {
		for member := range strings.SplitSeq(cd, ",") {
			name, val, found := strings.Cut(strings.TrimSpace(member), "=")
			if !found {
				return nil, nil, bad("Content-Digest")
			}
			if strings.ToLower(strings.TrimSpace(name)) != "sha-256" {
				continue // other algorithms are allowed and ignored
			}
			val, _, _ = strings.Cut(val, ";")
			val = strings.TrimSpace(val)
			if len(val) < 2 || val[0] != ':' || val[len(val)-1] != ':' {
				return nil, nil, bad("Content-Digest")
			}
			b, err := base64.StdEncoding.DecodeString(val[1 : len(val)-1])
			if err != nil || len(b) != 32 {
				return nil, nil, bad("Content-Digest")
			}
			sha = b
		}
	}
	if xs := h.Get("X-Checksum-Sha256"); xs != "" {
		b, err := hex.DecodeString(strings.TrimSpace(xs))
		if err != nil || len(b) != 32 {
			return nil, nil, bad("X-Checksum-Sha256")
		}
		if sha != nil && string(sha) != string(b) {
			return nil, nil, errcode.New(errcode.InvalidArgument, "Content-Digest and X-Checksum-Sha256 disagree")
		}
		sha = b
	}
	if cm := h.Get("Content-MD5"); cm != "" {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cm))
		if err != nil || len(b) != 16 {
			return nil, nil, bad("Content-MD5")
		}
		md5sum = b
	}
	return sha, md5sum, nil
}

// writeCond maps If-None-Match: * and If-Match on a write to a meta.Cond.
func writeCond(h http.Header) (meta.Cond, error) {
	var c meta.Cond
	if inm := strings.TrimSpace(h.Get("If-None-Match")); inm != "" {
		if inm != "*" {
			return c, errcode.New(errcode.InvalidArgument, "If-None-Match on uploads supports only *")
		}
		c.IfNoneMatch = true
	}
	if im := strings.TrimSpace(h.Get("If-Match")); im != "" {
		if strings.Contains(im, ",") {
			return c, errcode.New(errcode.InvalidArgument, "If-Match on writes takes one entity tag or *")
		}
		if strings.HasPrefix(im, "W/") {
			// A weak tag never matches in a strong comparison (RFC 9110).
			return c, errcode.New(errcode.PreconditionFailed, "If-Match with a weak entity tag never matches")
		}
		c.IfMatch = strings.Trim(im, `"`)
	}
	return c, nil
}

// fileHandlers are the routes of a bucket's files: uploads (raw and
// multipart/form-data), downloads, listing, move, copy, zip downloads and
// batch deletes (batch.go).
type fileHandlers struct {
	jsonDecoder
	files        Files
	buckets      Buckets // versions.go: gateway buckets have none
	zips         *zipper
	maxFormFiles int           // Config.MaxFormFiles
	publicMaxAge time.Duration // Config.PublicMaxAge
	log          *slog.Logger
}

func (h *fileHandlers) putFile(r *http.Request, p auth.Principal) (response, error) {
	sha, md5sum, err := clientDigests(r.Header)
	if err != nil {
		return nil, err
	}
	cond, err := writeCond(r.Header)
	if err != nil {
		return nil, err
	}
	ct := r.Header.Get("Content-Type")
	if ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return nil, errcode.New(errcode.InvalidArgument, "Content-Type is malformed")
		}
		if mt == "application/x-www-form-urlencoded" {
			// curl --data-binary's default, never a file's real type:
			// guess from the key instead.
			ct = ""
		}
	}
	o, err := h.files.Put(r.Context(), actor(r, p), object.PutInput{
		Bucket: r.PathValue("bucket"), Key: r.PathValue("key"),
		Body: r.Body, Size: r.ContentLength, ContentType: ct,
		SHA256: sha, MD5: md5sum, Cond: cond,
	})
	if err != nil {
		return nil, err
	}
	return jsonResponse{status: http.StatusCreated, body: toFileJSON(o),
		header: http.Header{"Etag": {httpx.QuoteETag(o.ETag)}}}, nil
}

func (h *fileHandlers) uploadForm(r *http.Request, p auth.Principal) (response, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, errcode.New(errcode.InvalidArgument, "body must be multipart/form-data")
	}
	bucket := r.PathValue("bucket")
	batch := h.files.NewBatch(actor(r, p))
	defer batch.Abort()
	prefix := ""
	n := 0
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if code := errcode.Of(err); code == errcode.Timeout || code == errcode.Canceled {
				return nil, err
			}
			return nil, errcode.Wrap(errcode.InvalidArgument, err, "multipart body is malformed")
		}
		_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		if err != nil {
			return nil, errcode.New(errcode.InvalidArgument, "a part has a malformed Content-Disposition")
		}
		filename, isFile := params["filename"]
		if !isFile {
			val, err := io.ReadAll(io.LimitReader(part, 4097))
			if err != nil {
				return nil, err
			}
			if len(val) > 4096 {
				return nil, errcode.New(errcode.TooLarge, "form field %q is too long", params["name"])
			}
			switch params["name"] {
			case "prefix":
				prefix = string(val)
			default:
				return nil, errcode.New(errcode.InvalidArgument, "unknown form field %q (expected prefix or files)", params["name"])
			}
			continue
		}
		if n++; n > h.maxFormFiles {
			return nil, errcode.New(errcode.TooLarge, "more than %d files in one upload", h.maxFormFiles)
		}
		ct := part.Header.Get("Content-Type")
		if ct == "application/octet-stream" {
			ct = "" // browsers' "unknown": guess from the name instead
		}
		if _, err := batch.Add(r.Context(), object.PutInput{
			Bucket: bucket, Key: prefix + filename, Body: part, Size: -1, ContentType: ct,
		}); err != nil {
			return nil, err
		}
	}
	if n == 0 {
		return nil, errcode.New(errcode.InvalidArgument, "no file parts in the form")
	}
	objs, err := batch.Commit(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]fileJSON, len(objs))
	for i, o := range objs {
		out[i] = toFileJSON(o)
	}
	return created(map[string]any{"files": out}), nil
}

// getFile downloads the file, or with ?version_id= one of its versions
// (versions.go), with the same HTTP semantics; ?versions is redirected to
// the version list.
func (h *fileHandlers) getFile(r *http.Request, p auth.Principal) (response, error) {
	if rd, ok := versionsRedirect(r); ok {
		return rd, nil
	}
	versionID, err := versionParam(r)
	if err != nil {
		return nil, err
	}
	rd, err := h.files.GetVersion(r.Context(), actor(r, p), r.PathValue("bucket"), r.PathValue("key"), versionID)
	if err != nil {
		return nil, markerNotFound(err)
	}
	return &fileResponse{maxAge: h.publicMaxAge, log: h.log, rd: rd}, nil
}

// fileResponse serves an object with HTTP semantics: validators,
// conditional requests, a single byte range, caching and disposition.
type fileResponse struct {
	maxAge time.Duration // of public-read objects
	log    *slog.Logger
	rd     *object.Reader
}

func (f *fileResponse) respond(w http.ResponseWriter, r *http.Request) {
	o := f.rd.Object
	h := w.Header()
	// Shared caches may keep what anyone may read; a bucket policy may
	// refuse some readers (by address, transport, time), so not then.
	if f.rd.Bucket.Visibility == meta.PublicRead && f.rd.Bucket.Policy == "" {
		h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(f.maxAge.Seconds())))
	} else {
		h.Set("Cache-Control", "private, no-cache")
	}
	sp, ok, err := httpx.PlanDownload(w, r, httpx.Representation{ETag: o.ETag, ModTime: o.ModTime, Size: o.Size}, nil)
	if err != nil {
		WriteProblem(w, r, f.log, err)
	}
	if !ok {
		return
	}
	setObjectHeaders(h, r, o, sp.Status)
	if err := httpx.SendSpan(w, r, f.rd, sp, f.log, "bucket", o.Bucket, "key", o.Key); err != nil {
		WriteProblem(w, r, f.log, err)
	}
}

// deleteFile deletes the file (a delete marker in a versioned bucket),
// or with ?version_id= one of its versions for good (versions.go).
func (h *fileHandlers) deleteFile(r *http.Request, p auth.Principal) (response, error) {
	cond, err := writeCond(r.Header)
	if err != nil {
		return nil, err
	}
	versionID, err := versionParam(r)
	if err != nil {
		return nil, err
	}
	if versionID != "" {
		if cond.IfNoneMatch {
			return nil, errcode.New(errcode.InvalidArgument, "If-None-Match has no meaning on a delete")
		}
		if _, err := h.files.DeleteVersion(r.Context(), actor(r, p), r.PathValue("bucket"), r.PathValue("key"), versionID, cond); err != nil {
			return nil, err
		}
		return noContent{}, nil
	}
	if err := deleteFile(r.Context(), h.files, actor(r, p), r.PathValue("bucket"), r.PathValue("key"), cond); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

// deleteFile deletes the file at key, which must be there (NotFound
// otherwise, as the file API answers whatever the bucket's versioning):
// in a versioned bucket the object service would write a delete marker
// over nothing, as S3's DeleteObject does.
func deleteFile(ctx context.Context, files Files, a object.Actor, bucket, key string, cond meta.Cond) error {
	implicit := !cond.Any()
	if implicit {
		cond.IfMatch = "*"
	}
	_, err := files.Delete(ctx, a, bucket, key, cond)
	if implicit && errcode.Is(err, errcode.PreconditionFailed) {
		return object.ErrNoObject(key)
	}
	return err
}

func (h *fileHandlers) listFiles(r *http.Request, p auth.Principal) (response, error) {
	q, opts, err := listQuery(r)
	if err != nil {
		return nil, err
	}
	opts.Delimiter = q.Get("delimiter")
	if len(opts.Delimiter) > 32 || !utf8.ValidString(opts.Delimiter) {
		return nil, errcode.New(errcode.InvalidArgument, "delimiter must be valid UTF-8 of at most 32 bytes")
	}
	opts.NoParts = true // toFileJSON shows none of them
	page, err := h.files.List(r.Context(), actor(r, p), r.PathValue("bucket"), opts)
	if err != nil {
		return nil, err
	}
	files := make([]fileJSON, len(page.Objects))
	for i, o := range page.Objects {
		files[i] = toFileJSON(o)
	}
	folders := page.CommonPrefixes
	if folders == nil {
		folders = []string{}
	}
	return ok(withCursor(map[string]any{"files": files, "folders": folders}, page)), nil
}

// listQuery reads the query of a listing: prefix, limit (1 to 1000,
// default 100) and cursor (the next_cursor of the page before).
func listQuery(r *http.Request) (url.Values, meta.ListOptions, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, meta.ListOptions{}, errcode.New(errcode.InvalidArgument, "query string is malformed")
	}
	opts := meta.ListOptions{Prefix: q.Get("prefix"), Limit: 100}
	if len(opts.Prefix) > object.MaxKeyLen || !utf8.ValidString(opts.Prefix) {
		return nil, opts, errcode.New(errcode.InvalidArgument, "prefix must be valid UTF-8 of at most 1024 bytes")
	}
	if opts.Limit, err = limitParam(q, 100); err != nil {
		return nil, opts, err
	}
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil || len(b) == 0 || len(b) > object.MaxKeyLen+1 {
			return nil, opts, errcode.New(errcode.InvalidArgument, "cursor is malformed")
		}
		opts.StartAfter = string(b)
	}
	return q, opts, nil
}

// limitParam reads the query's limit: 1 to 1000, def if absent.
func limitParam(q url.Values, def int) (int, error) {
	s := q.Get("limit")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1000 {
		return 0, errcode.New(errcode.InvalidArgument, "limit must be an integer from 1 to 1000")
	}
	return n, nil
}

// withCursor adds the next page's cursor to body if page is truncated.
func withCursor(body map[string]any, page meta.ListPage) map[string]any {
	if page.Truncated {
		body["next_cursor"] = base64.RawURLEncoding.EncodeToString([]byte(page.NextStartAfter))
	}
	return body
}

type moveBody struct {
	From      string `json:"from"`
	To        string `json:"to"`
	ToBucket  string `json:"to_bucket"`
	Overwrite bool   `json:"overwrite"`
}

func (h *fileHandlers) moveBody(r *http.Request) (moveBody, meta.Cond, error) {
	var b moveBody
	if err := h.decodeJSON(r, &b); err != nil {
		return b, meta.Cond{}, err
	}
	if b.From == "" || b.To == "" {
		return b, meta.Cond{}, errcode.New(errcode.InvalidArgument, "from and to are required")
	}
	if b.ToBucket == "" {
		b.ToBucket = r.PathValue("bucket")
	}
	return b, meta.Cond{IfNoneMatch: !b.Overwrite}, nil
}

func (h *fileHandlers) moveFile(r *http.Request, p auth.Principal) (response, error) {
	b, cond, err := h.moveBody(r)
	if err != nil {
		return nil, err
	}
	o, err := h.files.Move(r.Context(), actor(r, p), r.PathValue("bucket"), b.From, b.ToBucket, b.To, cond)
	if err != nil {
		return nil, err
	}
	return ok(toFileJSON(o)), nil
}

func (h *fileHandlers) copyFile(r *http.Request, p auth.Principal) (response, error) {
	b, cond, err := h.moveBody(r)
	if err != nil {
		return nil, err
	}
	o, err := h.files.Copy(r.Context(), actor(r, p), object.CopyInput{
		SrcBucket: r.PathValue("bucket"), SrcKey: b.From, DstBucket: b.ToBucket, DstKey: b.To, Cond: cond,
	})
	if err != nil {
		return nil, err
	}
	return created(toFileJSON(o)), nil
}

// zipFiles is POST /buckets/{bucket}/zip. Its planning is bounded: the
// prefixes are de-duplicated and those another covers dropped (so no
// object is listed twice), as are repeated keys and keys under a prefix;
// at most maxZipPrefixes prefixes and MaxZipEntries keys remain, the
// entry and byte limits stop the listing, and ZipPlanTimeout the whole.
func (h *fileHandlers) zipFiles(r *http.Request, p auth.Principal) (response, error) {
	var b struct {
		Keys     []string `json:"keys"`
		Prefixes []string `json:"prefixes"`
		Compress bool     `json:"compress"`
		Name     string   `json:"name"`
	}
	if err := h.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	if len(b.Keys) == 0 && len(b.Prefixes) == 0 {
		return nil, errcode.New(errcode.InvalidArgument, "give keys or prefixes")
	}
	for _, pfx := range b.Prefixes {
		if len(pfx) > object.MaxKeyLen || !utf8.ValidString(pfx) {
			return nil, errcode.New(errcode.InvalidArgument, "prefix must be valid UTF-8 of at most 1024 bytes")
		}
	}
	prefixes := coverPrefixes(b.Prefixes)
	keys := uncoveredKeys(b.Keys, prefixes)
	switch {
	case len(prefixes) > maxZipPrefixes:
		return nil, &errcode.Error{Code: errcode.TooLarge, Message: fmt.Sprintf("a zip takes at most %d prefixes (none inside another)", maxZipPrefixes),
			Detail: map[string]any{"reason": "zip_too_large", "max_prefixes": maxZipPrefixes}}
	case len(keys) > h.zips.limits.Entries:
		return nil, &errcode.Error{Code: errcode.TooLarge, Message: fmt.Sprintf("the zip would hold more than %d files", h.zips.limits.Entries),
			Detail: map[string]any{"reason": "zip_too_large", "max_entries": h.zips.limits.Entries}}
	}
	bucket := r.PathValue("bucket")
	a := actor(r, p)
	ctx, done := h.zips.planning(r)
	plan, err := h.zips.plan(ctx, a, bucket, keys, prefixes)
	if err = done(err); err != nil {
		return nil, err
	}
	name := b.Name
	if name == "" {
		name = bucket + ".zip"
	}
	return h.zips.stream(name, plan, a, bucket, b.Compress), nil
}

// setObjectHeaders sets what every download of an object says about it
// (the file API's and a share link's): its type, its disposition (inline,
// or attachment with ?download=1, with the key's last segment as the file
// name) and, on a whole-object answer, its SHA-256. Multipart objects have
// no whole-object SHA-256 (their parts are joined without rehashing):
// they say nothing rather than something false.
func setObjectHeaders(h http.Header, r *http.Request, o meta.Object, status int) {
	h.Set("Content-Type", o.ContentType)
	disp := "inline"
	if r.URL.Query().Get("download") == "1" {
		disp = "attachment"
	}
	if name := path.Base(o.Key); name != "" && utf8.ValidString(name) {
		if v := mime.FormatMediaType(disp, map[string]string{"filename": name}); v != "" {
			disp = v
		}
	}
	h.Set("Content-Disposition", disp)
	if status == http.StatusOK && o.SHA256 != "" {
		h.Set("X-Checksum-Sha256", o.SHA256)
		if raw, err := hex.DecodeString(o.SHA256); err == nil {
			h.Set("Repr-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(raw)+":")
		}
	}
}

package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
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
	"github.com/coffer-storage/coffer/internal/ratelimit"
)

// Share links: the owner's API under /api/v1/shares, and anonymous
// access under /s/{token} (see docs/api.md#share-links). Everything a
// link reaches goes through object.ShareKey, which confines it to the
// share; nothing a link answers names the owner, the bucket or any key
// outside the share.

// shareCookie is the cookie an unlocked password-protected link gets
// (Path=/s/{token}); shareGrantHeader carries the same grant for clients
// without cookies.
const (
	shareCookie      = "coffer_share"
	shareGrantHeader = "X-Share-Grant"
)

type shareJSON struct {
	ID           string     `json:"id"`
	Bucket       string     `json:"bucket"`
	Key          string     `json:"key,omitempty"`
	Prefix       *string    `json:"prefix,omitempty"`
	Folder       bool       `json:"folder"`
	Password     bool       `json:"password"`
	Note         string     `json:"note,omitempty"`
	AllowUpload  bool       `json:"allow_upload"`
	MaxDownloads int64      `json:"max_downloads"`
	Downloads    int64      `json:"downloads"`
	CreatedAt    time.Time  `json:"created_at"`
	ExpiresAt    time.Time  `json:"expires_at"`
	LastAccess   *time.Time `json:"last_access,omitempty"`
	State        string     `json:"state"`
	Grant        bool       `json:"grant,omitempty"`
	Token        string     `json:"token,omitempty"`
	URL          string     `json:"url,omitempty"`
}

func toShareJSON(sh meta.Share, now time.Time) shareJSON {
	j := shareJSON{
		ID: sh.ID, Bucket: sh.Bucket, Folder: sh.Folder, Password: sh.Password != "", Note: sh.Note,
		AllowUpload: sh.AllowUpload, MaxDownloads: sh.MaxDownloads, Downloads: sh.Downloads,
		CreatedAt: sh.CreatedAt, ExpiresAt: sh.ExpiresAt, State: sh.State(now), Grant: sh.Grant,
	}
	if sh.Folder {
		p := sh.Key
		j.Prefix = &p
	} else {
		j.Key = sh.Key
	}
	if !sh.LastAccess.IsZero() {
		la := sh.LastAccess
		j.LastAccess = &la
	}
	return j
}

type createShareBody struct {
	Bucket       string     `json:"bucket"`
	Key          *string    `json:"key"`
	Prefix       *string    `json:"prefix"`
	ExpiresIn    *int64     `json:"expires_in"` // seconds
	ExpiresAt    *time.Time `json:"expires_at"`
	Password     string     `json:"password"`
	MaxDownloads int64      `json:"max_downloads"`
	AllowUpload  bool       `json:"allow_upload"`
	Note         string     `json:"note"`
	Grant        bool       `json:"grant"`
}

// shareExpiry resolves expires_in/expires_at against the default and the
// maximum.
func (api *API) shareExpiry(in *int64, at *time.Time, now time.Time) (time.Time, error) {
	switch {
	case in != nil && at != nil:
		return time.Time{}, errcode.New(errcode.InvalidArgument, "give expires_in or expires_at, not both")
	case in != nil:
		if *in <= 0 {
			return time.Time{}, errcode.New(errcode.InvalidArgument, "expires_in must be positive")
		}
		if *in > int64(api.cfg.ShareMaxExpiry/time.Second) {
			return time.Time{}, api.expiryTooLong()
		}
		return now.Add(time.Duration(*in) * time.Second), nil
	case at != nil:
		if !at.After(now) {
			return time.Time{}, errcode.New(errcode.InvalidArgument, "expires_at must be in the future")
		}
		if at.Sub(now) > api.cfg.ShareMaxExpiry {
			return time.Time{}, api.expiryTooLong()
		}
		return *at, nil
	}
	return now.Add(min(api.cfg.ShareDefaultExpiry, api.cfg.ShareMaxExpiry)), nil
}

func (api *API) expiryTooLong() error {
	return errcode.New(errcode.InvalidArgument, "a share link expires within %s at most (--share-max-expiry)", api.cfg.ShareMaxExpiry)
}

func (api *API) createShare(r *http.Request, p auth.Principal) (response, error) {
	var b createShareBody
	if err := api.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	if (b.Key == nil) == (b.Prefix == nil) {
		return nil, errcode.New(errcode.InvalidArgument, "give key (a file) or prefix (a folder), exactly one")
	}
	now := time.Now()
	exp, err := api.shareExpiry(b.ExpiresIn, b.ExpiresAt, now)
	if err != nil {
		return nil, err
	}
	if !utf8.ValidString(b.Note) {
		return nil, errcode.New(errcode.InvalidArgument, "note must be valid UTF-8")
	}
	ns := object.NewShare{Bucket: b.Bucket, Note: b.Note, AllowUpload: b.AllowUpload, MaxDownloads: b.MaxDownloads, ExpiresAt: exp, Grant: b.Grant}
	if b.Key != nil {
		ns.Key = *b.Key
	} else {
		ns.Key, ns.Folder = *b.Prefix, true
	}
	if b.Password != "" {
		if len(b.Password) > 256 {
			return nil, errcode.New(errcode.InvalidArgument, "password is longer than 256 bytes")
		}
		// Checked before hashing, so a bad request costs no argon2id.
		if _, err := api.buckets.GetBucket(r.Context(), actor(p), b.Bucket); err != nil {
			return nil, err
		}
		ns.PasswordHash, err = api.shareAuth.HashPassword(r.Context(), b.Password)
		if err != nil {
			return nil, err
		}
	}
	sh, token, err := api.shares.CreateShare(r.Context(), actor(p), ns)
	if err != nil {
		return nil, err
	}
	j := toShareJSON(sh, now)
	j.Token, j.URL = token, "/s/"+token
	return created(j), nil
}

func (api *API) listShares(r *http.Request, p auth.Principal) (response, error) {
	grants, err := boolParam(r, "grants")
	if err != nil {
		return nil, err
	}
	shs, err := api.shares.ListShares(r.Context(), actor(p), grants)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]shareJSON, len(shs))
	for i, sh := range shs {
		out[i] = toShareJSON(sh, now)
	}
	return ok(map[string]any{"shares": out}), nil
}

func (api *API) getShare(r *http.Request, p auth.Principal) (response, error) {
	sh, err := api.shares.GetShare(r.Context(), actor(p), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return ok(toShareJSON(sh, time.Now())), nil
}

func (api *API) patchShare(r *http.Request, p auth.Principal) (response, error) {
	var b struct {
		ExpiresIn *int64     `json:"expires_in"`
		ExpiresAt *time.Time `json:"expires_at"`
	}
	if err := api.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	if b.ExpiresIn == nil && b.ExpiresAt == nil {
		return nil, errcode.New(errcode.InvalidArgument, "nothing to change: give expires_in or expires_at")
	}
	now := time.Now()
	exp, err := api.shareExpiry(b.ExpiresIn, b.ExpiresAt, now)
	if err != nil {
		return nil, err
	}
	sh, err := api.shares.SetShareExpiry(r.Context(), actor(p), r.PathValue("id"), exp)
	if err != nil {
		return nil, err
	}
	return ok(toShareJSON(sh, now)), nil
}

// revokeShare is DELETE /shares/{id}: an active link is revoked (and
// stays listed, revoked); a link that no longer works, and any download
// grant, is removed.
func (api *API) revokeShare(r *http.Request, p auth.Principal) (response, error) {
	if _, err := api.shares.DeleteShare(r.Context(), actor(p), r.PathValue("id"), time.Now()); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

// ---- anonymous access ----

// shareAccess is what a request does through a link (openShare).
type shareAccess int

const (
	shareUse    shareAccess = iota // anything the two below are not
	shareUnlock                    // POST unlock: no grant needed yet
	shareRead                      // GET of the link's content
)

// openShare resolves the request's link: active, its owner enabled, and,
// if it has a password, unlocked by a valid grant (unless unlocking). A
// ranged GET of content also gets through a used-up link: it may resume
// a download the link counted (object.ReadShare decides).
func (api *API) openShare(r *http.Request, access shareAccess) (meta.Share, error) {
	now := time.Now()
	sh, err := api.shares.ShareByToken(r.Context(), r.PathValue("token"), now)
	if err != nil && (access != shareRead || r.Header.Get("Range") == "" || sh.ID == "" || sh.State(now) != "used_up") {
		return meta.Share{}, err
	}
	httpx.SetShare(r.Context(), sh.ID)
	// Every request through a link is charged to the link (--rate-share).
	if err := httpx.Limit(r.Context(), ratelimit.DimShare, sh.ID); err != nil {
		return meta.Share{}, err
	}
	active, err := api.accounts.UserActive(r.Context(), sh.OwnerID)
	if err != nil {
		return meta.Share{}, err
	}
	if !active {
		return meta.Share{}, meta.ErrShareUnavailable("unavailable")
	}
	if sh.Password != "" && access != shareUnlock && !api.shareUnlocked(r, sh, now) {
		return meta.Share{}, &errcode.Error{Code: errcode.Unauthenticated,
			Message: "this share link has a password: POST {\"password\": ...} to /s/{token}/unlock first",
			Detail:  map[string]any{"reason": "share_locked"}}
	}
	api.log.Info("share access", "request_id", httpx.RequestID(r.Context()), "share", sh.ID, "method", r.Method,
		"path", r.PathValue("path"), "client", httpx.ClientIP(r, api.cfg.TrustedProxies).String())
	return sh, nil
}

func (api *API) shareUnlocked(r *http.Request, sh meta.Share, now time.Time) bool {
	if g := r.Header.Get(shareGrantHeader); g != "" && api.shareAuth.CheckShareGrant(sh.ID, g, now) {
		return true
	}
	for _, c := range r.CookiesNamed(shareCookie) {
		if api.shareAuth.CheckShareGrant(sh.ID, c.Value, now) {
			return true
		}
	}
	return false
}

// shareGet is GET /s/{token}: a file share's file; a folder share's
// listing (?cursor=, ?limit=), or its zip with ?zip=1; what the link is
// (shareInfo) with ?info=1.
func (api *API) shareGet(r *http.Request, _ auth.Principal) (response, error) {
	sh, err := api.openShare(r, shareRead)
	if err != nil {
		return nil, err
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, errcode.New(errcode.InvalidArgument, "query string is malformed")
	}
	if q.Get("info") == "1" {
		return api.shareInfo(r, sh)
	}
	if !sh.Folder {
		return api.shareFile(r, sh, "")
	}
	if st := sh.State(time.Now()); st != "active" {
		// A used-up folder link resumes a file's download (shareGetPath),
		// never lists or zips.
		return nil, meta.ErrShareUnavailable(st)
	}
	if q.Get("zip") == "1" {
		return api.shareZip(r, sh, q.Get("compress") == "1")
	}
	return api.shareList(r, sh, q)
}

// shareGetPath is GET /s/{token}/{path...}: a file of a folder share.
func (api *API) shareGetPath(r *http.Request, _ auth.Principal) (response, error) {
	sh, err := api.openShare(r, shareRead)
	if err != nil {
		return nil, err
	}
	return api.shareFile(r, sh, r.PathValue("path"))
}

func (api *API) shareFile(r *http.Request, sh meta.Share, rel string) (response, error) {
	key, err := object.ShareKey(sh, rel)
	if err != nil {
		return nil, err
	}
	rd, err := api.files.Get(r.Context(), object.ShareActor(sh), sh.Bucket, key)
	if err != nil {
		if errcode.Is(err, errcode.NotFound) && !sh.Folder {
			return nil, meta.ErrShareUnavailable("gone")
		}
		if errcode.Is(err, errcode.NotFound) || errcode.Is(err, errcode.PermissionDenied) || errcode.Is(err, errcode.Unauthenticated) {
			// Never the owner's bucket or key in the answer.
			return nil, errcode.New(errcode.NotFound, "no such file in this share")
		}
		return nil, shareSafe(err, sh)
	}
	return &shareFileResponse{api: api, rd: rd, sh: sh}, nil
}

// shareFileResponse serves a file through a link on the shared download
// path, counting downloads as object.ReadShare says.
type shareFileResponse struct {
	api *API
	rd  *object.Reader
	sh  meta.Share
}

func (f *shareFileResponse) respond(w http.ResponseWriter, r *http.Request) {
	o := f.rd.Object
	h := w.Header()
	h.Set("Cache-Control", "private, no-store")
	h.Set("Referrer-Policy", "no-referrer")
	now := time.Now()
	rep := httpx.Representation{ETag: o.ETag, ModTime: o.ModTime, Size: o.Size}
	read := object.ShareRead{Client: object.ShareClient(httpx.ClientIP(r, f.api.cfg.TrustedProxies)), Key: o.Key, ETag: o.ETag}
	counted := false
	if f.sh.State(now) == "used_up" {
		// Only the resume of a download the link counted goes on, decided
		// before any header: a used-up link answers nothing else, not even
		// a 304 or a 416.
		err := meta.ErrShareUnavailable("used_up")
		if start, ok := resumeStart(r, rep); ok {
			read.Offset = start
			err = f.api.shares.ReadShare(r.Context(), f.sh, read, now)
		}
		if err != nil {
			WriteProblem(w, r, f.api.log, err)
			return
		}
		counted = true
	}
	sp, ok, err := httpx.PlanDownload(w, r, rep, nil)
	if err != nil {
		WriteProblem(w, r, f.api.log, err)
		return
	}
	if !ok {
		return
	}
	if !counted {
		// A GET is a download unless it resumes one (ReadShare); HEAD and
		// 304 are not.
		if r.Method == http.MethodGet {
			read.Offset = sp.Start
			err = f.api.shares.ReadShare(r.Context(), f.sh, read, now)
		} else {
			err = f.api.shares.UseShare(r.Context(), f.sh, false, now)
		}
	}
	if err != nil {
		for _, k := range []string{"ETag", "Last-Modified", "Accept-Ranges", "Content-Range"} {
			h.Del(k)
		}
		WriteProblem(w, r, f.api.log, err)
		return
	}
	setObjectHeaders(h, r, o, sp.Status)
	if err := httpx.SendSpan(w, r, f.rd, sp, f.api.log, "share", f.sh.ID); err != nil {
		WriteProblem(w, r, f.api.log, err)
	}
}

// resumeStart is the first byte a GET asks for with a single Range that
// applies (If-Range) and is satisfiable, when that byte is not the first:
// the only kind of request that may resume a download.
func resumeStart(r *http.Request, rep httpx.Representation) (int64, bool) {
	if r.Method != http.MethodGet || !httpx.RangeApplies(r, httpx.Validators{ETag: rep.ETag, ModTime: rep.ModTime, Exists: true}) {
		return 0, false
	}
	res, start, _ := httpx.ParseRange(r.Header.Get("Range"), rep.Size)
	return start, res == httpx.RangeOK && start > 0
}

// shareInfoJSON is what a recipient may know of a link (GET
// /s/{token}?info=1): what it shares, named relative to nothing of the
// owner's (a folder by its last segment, a file by its name), and on what
// terms. Never the bucket, the owner or a key.
type shareInfoJSON struct {
	Kind          string    `json:"kind"` // "file" or "folder"
	Name          string    `json:"name"` // a file's name, a folder's last segment ("" for a whole bucket)
	Size          *int64    `json:"size,omitempty"`
	ContentType   string    `json:"content_type,omitempty"`
	Note          string    `json:"note,omitempty"`
	ExpiresAt     time.Time `json:"expires_at"`
	DownloadsLeft *int64    `json:"downloads_left,omitempty"` // absent: no limit
	AllowUpload   bool      `json:"allow_upload,omitempty"`
}

// shareInfo answers what link sh is, for the share page. It records an
// access but no download, and is refused like any use once the link is
// revoked, expired or used up, or its file or bucket is gone.
func (api *API) shareInfo(r *http.Request, sh meta.Share) (response, error) {
	if err := api.shares.UseShare(r.Context(), sh, false, time.Now()); err != nil {
		return nil, err
	}
	info := shareInfoJSON{Kind: "folder", Note: sh.Note, ExpiresAt: sh.ExpiresAt.UTC(), AllowUpload: sh.AllowUpload}
	if sh.MaxDownloads > 0 {
		left := max(0, sh.MaxDownloads-sh.Downloads)
		info.DownloadsLeft = &left
	}
	if !sh.Folder {
		rd, err := api.files.Get(r.Context(), object.ShareActor(sh), sh.Bucket, sh.Key)
		if err != nil {
			if errcode.Is(err, errcode.NotFound) {
				return nil, meta.ErrShareUnavailable("gone")
			}
			return nil, shareSafe(err, sh)
		}
		size := rd.Object.Size
		info.Kind, info.Name, info.Size, info.ContentType = "file", path.Base(sh.Key), &size, rd.Object.ContentType
		return ok(info), nil
	}
	// A folder link answers only while its owner still has the bucket, as
	// its listing, zip and drop box do.
	if _, err := api.buckets.GetBucket(r.Context(), object.ShareActor(sh), sh.Bucket); err != nil {
		return nil, shareSafe(err, sh)
	}
	if p := strings.TrimSuffix(sh.Key, "/"); p != "" {
		info.Name = path.Base(p)
	}
	return ok(info), nil
}

type shareEntryJSON struct {
	Name         string    `json:"name"` // relative to the share
	Size         int64     `json:"size"`
	ETag         string    `json:"etag"`
	ContentType  string    `json:"content_type,omitempty"` // none in gateway buckets' listings
	LastModified time.Time `json:"last_modified"`
}

func (api *API) shareList(r *http.Request, sh meta.Share, q url.Values) (response, error) {
	opts := meta.ListOptions{Prefix: sh.Key, Limit: 100}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			return nil, errcode.New(errcode.InvalidArgument, "limit must be an integer from 1 to 1000")
		}
		opts.Limit = n
	}
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil || len(b) == 0 || len(b) > object.MaxKeyLen {
			return nil, errcode.New(errcode.InvalidArgument, "cursor is malformed")
		}
		// The cursor is a name relative to the share: the listing can
		// only resume inside it.
		opts.StartAfter = sh.Key + string(b)
	}
	if err := api.shares.UseShare(r.Context(), sh, false, time.Now()); err != nil {
		return nil, err
	}
	page, err := api.files.List(r.Context(), object.ShareActor(sh), sh.Bucket, opts)
	if err != nil {
		return nil, shareSafe(err, sh)
	}
	files := make([]shareEntryJSON, 0, len(page.Objects))
	for _, o := range page.Objects {
		files = append(files, shareEntryJSON{Name: strings.TrimPrefix(o.Key, sh.Key), Size: o.Size, ETag: o.ETag,
			ContentType: o.ContentType, LastModified: o.ModTime})
	}
	body := map[string]any{"files": files}
	if sh.Note != "" {
		body["note"] = sh.Note
	}
	if sh.AllowUpload {
		body["allow_upload"] = true
	}
	if page.Truncated {
		body["next_cursor"] = base64.RawURLEncoding.EncodeToString([]byte(strings.TrimPrefix(page.NextStartAfter, sh.Key)))
	}
	return ok(body), nil
}

// shareZip streams a folder share as a zip (one download).
func (api *API) shareZip(r *http.Request, sh meta.Share, compress bool) (response, error) {
	plan := newZipPlan(api.zipLimits())
	a := object.ShareActor(sh)
	ctx, done := api.zipPlanning(r)
	if err := done(api.planPrefix(ctx, a, sh.Bucket, sh.Key, plan)); err != nil {
		return nil, shareSafe(err, sh)
	}
	if err := api.shares.UseShare(r.Context(), sh, r.Method == http.MethodGet, time.Now()); err != nil {
		return nil, err
	}
	name := "share.zip"
	if base := path.Base(strings.TrimSuffix(sh.Key, "/")); sh.Key != "" && base != "" && base != "." && base != "/" {
		name = base + ".zip"
	}
	return &zipResponse{log: api.log, filename: name, entries: plan.entries, compress: compress,
		open: objectZipOpener(api.files, a, sh.Bucket), before: api.cfg.BeforeZipEntry}, nil
}

// sharePost is POST /s/{token}/{path...}: "unlock" takes the password of
// a password-protected link.
func (api *API) sharePost(r *http.Request, _ auth.Principal) (response, error) {
	if r.PathValue("path") != "unlock" {
		return nil, errcode.New(errcode.NotFound, "no such endpoint")
	}
	sh, err := api.openShare(r, shareUnlock)
	if err != nil {
		return nil, err
	}
	var b struct {
		Password string `json:"password"`
	}
	if err := api.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	if sh.Password == "" {
		return nil, errcode.New(errcode.InvalidArgument, "this share link has no password")
	}
	if err := api.shareAuth.CheckSharePassword(r.Context(), sh.ID, b.Password, sh.Password, httpx.ClientIP(r, api.cfg.TrustedProxies).String()); err != nil {
		return nil, err
	}
	exp := time.Now().Add(api.cfg.ShareGrantTTL)
	if exp.After(sh.ExpiresAt) {
		exp = sh.ExpiresAt
	}
	grant := api.shareAuth.ShareGrant(sh.ID, exp)
	c := &http.Cookie{Name: shareCookie, Value: grant, Path: "/s/" + r.PathValue("token"), Expires: exp,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	return jsonResponse{status: http.StatusOK, body: map[string]any{"grant": grant, "expires_at": exp.UTC()},
		header: http.Header{"Set-Cookie": {c.String()}}}, nil
}

// sharePut is PUT /s/{token}/{path...}: an upload into a drop box (a
// folder share with allow_upload). It never replaces a file: a name that
// is taken gets 412. The owner's quota applies.
func (api *API) sharePut(r *http.Request, _ auth.Principal) (response, error) {
	sh, err := api.openShare(r, shareUse)
	if err != nil {
		return nil, err
	}
	if !sh.AllowUpload {
		return nil, errcode.New(errcode.PermissionDenied, "this share link does not take uploads")
	}
	key, err := object.ShareKey(sh, r.PathValue("path"))
	if err != nil {
		return nil, err
	}
	sha, md5sum, err := clientDigests(r.Header)
	if err != nil {
		return nil, err
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); ct != "" && (err != nil || mt == "application/x-www-form-urlencoded") {
		ct = ""
	}
	o, err := api.files.Put(r.Context(), object.ShareActor(sh), object.PutInput{
		Bucket: sh.Bucket, Key: key, Body: r.Body, Size: r.ContentLength, ContentType: ct,
		SHA256: sha, MD5: md5sum, Cond: meta.Cond{IfNoneMatch: true},
	})
	if err != nil {
		return nil, shareSafe(err, sh)
	}
	return jsonResponse{status: http.StatusCreated, body: shareEntryJSON{Name: strings.TrimPrefix(o.Key, sh.Key), Size: o.Size,
		ETag: o.ETag, ContentType: o.ContentType, LastModified: o.ModTime}, header: http.Header{"Etag": {httpx.QuoteETag(o.ETag)}}}, nil
}

// shareSafe is what an anonymous client of link sh may learn of err:
// nothing of the owner's account (a quota refusal loses its quota and
// usage), nor the bucket or the shared prefix (a message naming them is
// replaced by a generic one of the same code); the bucket or the owner's
// access gone makes the link unavailable.
func shareSafe(err error, sh meta.Share) error {
	code := errcode.Of(err)
	switch {
	case code == errcode.PermissionDenied || code == errcode.Unauthenticated ||
		(code == errcode.NotFound && errcode.As(err) != nil && errcode.As(err).Detail["resource"] != "key"):
		return meta.ErrShareUnavailable("gone")
	case code == errcode.QuotaExceeded:
		return errcode.New(errcode.QuotaExceeded, "the owner of this link has no storage left")
	case code == errcode.PreconditionFailed:
		return errcode.New(errcode.PreconditionFailed, "a file of this name exists already")
	}
	msg := errcode.Message(err)
	if (sh.Key != "" && strings.Contains(msg, sh.Key)) || strings.Contains(msg, sh.Bucket) {
		return errcode.New(code, "%s", http.StatusText(statusOf[code]))
	}
	return err
}

// ---- zip of a bucket's objects ----

func (api *API) zipLimits() zipLimits {
	return zipLimits{Entries: api.cfg.MaxZipEntries, Bytes: api.cfg.MaxZipBytes}
}

// zipPlanning returns the context a zip is planned in: the request's,
// with ZipPlanTimeout (the route streams, so the request timeout does not
// bound it). done turns an error of planning into the answer: a planning
// that ran out of time is a zip too large to plan.
func (api *API) zipPlanning(r *http.Request) (ctx context.Context, done func(error) error) {
	ctx, cancel := context.WithTimeout(r.Context(), api.cfg.ZipPlanTimeout)
	return ctx, func(err error) error {
		cancel()
		if err != nil && ctx.Err() == context.DeadlineExceeded && r.Context().Err() == nil {
			return &errcode.Error{Code: errcode.TooLarge,
				Message: fmt.Sprintf("the zip could not be planned within %s: ask for fewer files or folders", api.cfg.ZipPlanTimeout),
				Detail:  map[string]any{"reason": "zip_too_large", "plan_timeout_seconds": api.cfg.ZipPlanTimeout.Seconds()}}
		}
		return err
	}
}

// planPrefix plans every object under prefix, named relative to it.
func (api *API) planPrefix(ctx context.Context, a object.Actor, bucket, prefix string, plan *zipPlan) error {
	opts := meta.ListOptions{Prefix: prefix, Limit: 1000}
	for {
		page, err := api.files.List(ctx, a, bucket, opts)
		if err != nil {
			return err
		}
		for _, o := range page.Objects {
			if err := plan.add(o, strings.TrimPrefix(o.Key, prefix)); err != nil {
				return err
			}
		}
		if !page.Truncated {
			return nil
		}
		opts.StartAfter = page.NextStartAfter
	}
}

// zipFiles is POST /buckets/{bucket}/zip. Its planning is bounded: the
// prefixes are de-duplicated and those another covers dropped (so no
// object is listed twice), as are repeated keys and keys under a prefix;
// at most maxZipPrefixes prefixes and MaxZipEntries keys remain, the
// entry and byte limits stop the listing, and ZipPlanTimeout the whole.
func (api *API) zipFiles(r *http.Request, p auth.Principal) (response, error) {
	var b struct {
		Keys     []string `json:"keys"`
		Prefixes []string `json:"prefixes"`
		Compress bool     `json:"compress"`
		Name     string   `json:"name"`
	}
	if err := api.decodeJSON(r, &b); err != nil {
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
	case len(keys) > api.cfg.MaxZipEntries:
		return nil, &errcode.Error{Code: errcode.TooLarge, Message: fmt.Sprintf("the zip would hold more than %d files", api.cfg.MaxZipEntries),
			Detail: map[string]any{"reason": "zip_too_large", "max_entries": api.cfg.MaxZipEntries}}
	}
	bucket := r.PathValue("bucket")
	a := actor(p)
	ctx, done := api.zipPlanning(r)
	plan, err := api.planZip(ctx, a, bucket, keys, prefixes)
	if err = done(err); err != nil {
		return nil, err
	}
	name := b.Name
	if name == "" {
		name = bucket + ".zip"
	}
	return &zipResponse{log: api.log, filename: name, entries: plan.entries, compress: b.Compress,
		open: objectZipOpener(api.files, a, bucket), before: api.cfg.BeforeZipEntry}, nil
}

// planZip plans keys (each its own name), then every object under
// prefixes (named relative to its prefix).
func (api *API) planZip(ctx context.Context, a object.Actor, bucket string, keys, prefixes []string) (*zipPlan, error) {
	if _, err := api.buckets.GetBucket(ctx, a, bucket); err != nil {
		return nil, err
	}
	plan := newZipPlan(api.zipLimits())
	for _, k := range keys {
		rd, err := api.files.Get(ctx, a, bucket, k)
		if err != nil {
			return nil, err
		}
		if err := plan.add(rd.Object, k); err != nil {
			return nil, err
		}
	}
	for _, pfx := range prefixes {
		if err := api.planPrefix(ctx, a, bucket, pfx, plan); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// ---- batch delete ----

// batchDeleteLine is a line of a batch delete's NDJSON answer about one
// key (or, without a key, a prefix listing that failed).
type batchDeleteLine struct {
	Key    string `json:"key,omitempty"`
	Status string `json:"status"` // deleted, not_found, error
	Error  string `json:"error,omitempty"`
	Code   string `json:"code,omitempty"`
}

// batchDeleteTotals is the last line of a batch delete's answer.
type batchDeleteTotals struct {
	Done     bool  `json:"done"`
	Deleted  int64 `json:"deleted"`
	NotFound int64 `json:"not_found"`
	Errors   int64 `json:"errors"`
}

// maxBatchDeleteKeys bounds the keys of one batch delete by keys.
const maxBatchDeleteKeys = 1000

func (api *API) batchDelete(r *http.Request, p auth.Principal) (response, error) {
	var b struct {
		Keys   []string `json:"keys"`
		Prefix *string  `json:"prefix"`
	}
	if err := api.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	switch {
	case (len(b.Keys) > 0) == (b.Prefix != nil):
		return nil, errcode.New(errcode.InvalidArgument, "give keys or prefix, exactly one")
	case len(b.Keys) > maxBatchDeleteKeys:
		return nil, errcode.New(errcode.TooLarge, "at most %d keys per request; delete by prefix for more", maxBatchDeleteKeys)
	case b.Prefix != nil && (len(*b.Prefix) > object.MaxKeyLen || !utf8.ValidString(*b.Prefix)):
		return nil, errcode.New(errcode.InvalidArgument, "prefix must be valid UTF-8 of at most 1024 bytes")
	}
	bucket := r.PathValue("bucket")
	// Authorised before the first line: a refusal is a problem, not a
	// stream of errors.
	if _, err := api.files.List(r.Context(), actor(p), bucket, meta.ListOptions{Limit: 1}); err != nil {
		return nil, err
	}
	return &batchDeleteResponse{api: api, a: actor(p), bucket: bucket, keys: b.Keys, prefix: b.Prefix}, nil
}

// batchDeleteResponse streams one NDJSON line per key, then the totals.
// A prefix is deleted page by page (1000 keys a page, listed again from
// the start each time, so keys added meanwhile may go too).
type batchDeleteResponse struct {
	api    *API
	a      object.Actor
	bucket string
	keys   []string
	prefix *string
}

func (d *batchDeleteResponse) respond(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	var total batchDeleteTotals
	del := func(key string) {
		line := batchDeleteLine{Key: key, Status: "deleted"}
		_, err := d.api.files.Delete(r.Context(), d.a, d.bucket, key, meta.Cond{})
		switch {
		case err == nil:
			total.Deleted++
		case errcode.Is(err, errcode.NotFound):
			line.Status = "not_found"
			total.NotFound++
		default:
			line.Status, line.Error, line.Code = "error", errcode.Message(err), errcode.Of(err).String()
			total.Errors++
		}
		_ = enc.Encode(line)
	}
	if d.prefix == nil {
		for _, k := range d.keys {
			del(k)
		}
	} else {
		after := ""
		for r.Context().Err() == nil {
			page, err := d.api.files.List(r.Context(), d.a, d.bucket, meta.ListOptions{Prefix: *d.prefix, StartAfter: after, Limit: 1000})
			if err != nil {
				total.Errors++
				_ = enc.Encode(batchDeleteLine{Status: "error", Error: errcode.Message(err), Code: errcode.Of(err).String()})
				break
			}
			for _, o := range page.Objects {
				del(o.Key)
			}
			if flusher != nil {
				flusher.Flush()
			}
			if !page.Truncated || len(page.Objects) == 0 {
				break
			}
			after = page.Objects[len(page.Objects)-1].Key
		}
	}
	total.Done = true
	_ = enc.Encode(total)
}

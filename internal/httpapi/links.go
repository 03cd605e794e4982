package httpapi

import (
	"encoding/base64"
	"github.com/coffer-storage/coffer/internal/audit"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/ratelimit"
)

// Anonymous access to share links under /s/{token}: a file link's file, a
// folder link's listing, files and zip, a drop box's uploads, and the
// unlocking of a password-protected link. Everything a link reaches goes
// through object.ShareKey, which confines it to the share; nothing a link
// answers names the owner, the bucket or any key outside the share
// (shareSafe).

// shareCookie is the cookie an unlocked password-protected link gets
// (Path=/s/{token}); shareGrantHeader carries the same grant for clients
// without cookies.
const (
	shareCookie      = "coffer_share"
	shareGrantHeader = "X-Share-Grant"
)

// linkHandlers are the anonymous routes of share links (/s/{token}):
// the link is the credential.
type linkHandlers struct {
	jsonDecoder
	shares    Shares
	files     Files
	buckets   Buckets   // a folder link's bucket
	accounts  Accounts  // is the link's owner enabled
	shareAuth ShareAuth // link passwords and grants
	zips      *zipper
	grantTTL  time.Duration  // Config.ShareGrantTTL
	proxies   []netip.Prefix // Config.TrustedProxies: the client's address
	log       *slog.Logger
	audit     *audit.Logger // Config.Audit: every open of a link is recorded
}

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
func (h *linkHandlers) openShare(r *http.Request, access shareAccess) (meta.Share, error) {
	sh, id, err := h.resolveShare(r, access)
	if h.audit != nil && access != shareUnlock {
		// Unlocking is recorded by the password check (share.unlock). An
		// unknown token has no ID: the token itself is never recorded.
		e := audit.Event{Action: audit.ShareOpen, Actor: audit.Actor{Type: audit.ActorAnonymous, User: sh.OwnerID},
			Target: audit.Target{Share: id, Bucket: sh.Bucket, Key: sh.Key}}.Result(err)
		if d := errcode.As(err); d != nil && d.Detail["state"] == "used_up" {
			e.Action, e.Reason = audit.ShareExhausted, audit.ReasonLimit
		}
		h.audit.Log(r.Context(), e)
	}
	return sh, err
}

// resolveShare is openShare without the audit record; id is the link's
// ID if the token named one.
func (h *linkHandlers) resolveShare(r *http.Request, access shareAccess) (_ meta.Share, id string, _ error) {
	now := time.Now()
	sh, err := h.shares.ShareByToken(r.Context(), r.PathValue("token"), now)
	id = sh.ID
	if err != nil && (access != shareRead || r.Header.Get("Range") == "" || sh.ID == "" || sh.State(now) != "used_up") {
		return meta.Share{}, id, err
	}
	httpx.SetShare(r.Context(), sh.ID)
	// Every request through a link is charged to the link (--rate-share).
	if err := httpx.Limit(r.Context(), ratelimit.DimShare, sh.ID); err != nil {
		return meta.Share{}, id, err
	}
	active, err := h.accounts.UserActive(r.Context(), sh.OwnerID)
	if err != nil {
		return meta.Share{}, id, err
	}
	if !active {
		return meta.Share{}, id, meta.ErrShareUnavailable("unavailable")
	}
	if sh.Password != "" && access != shareUnlock && !h.shareUnlocked(r, sh, now) {
		return meta.Share{}, id, &errcode.Error{Code: errcode.Unauthenticated,
			Message: "this share link has a password: POST {\"password\": ...} to /s/{token}/unlock first",
			Detail:  map[string]any{"reason": "share_locked"}}
	}
	h.log.InfoContext(r.Context(), "share access", "request_id", httpx.RequestID(r.Context()), "share", sh.ID, "method", r.Method,
		"path", r.PathValue("path"), "client", httpx.ClientIP(r, h.proxies).String())
	return sh, id, nil
}

func (h *linkHandlers) shareUnlocked(r *http.Request, sh meta.Share, now time.Time) bool {
	if g := r.Header.Get(shareGrantHeader); g != "" && h.shareAuth.CheckShareGrant(sh.ID, g, now) {
		return true
	}
	for _, c := range r.CookiesNamed(shareCookie) {
		if h.shareAuth.CheckShareGrant(sh.ID, c.Value, now) {
			return true
		}
	}
	return false
}

// shareGet is GET /s/{token}: a file share's file; a folder share's
// listing (?cursor=, ?limit=), or its zip with ?zip=1; what the link is
// (shareInfo) with ?info=1.
func (h *linkHandlers) shareGet(r *http.Request, _ auth.Principal) (response, error) {
	sh, err := h.openShare(r, shareRead)
	if err != nil {
		return nil, err
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, errcode.New(errcode.InvalidArgument, "query string is malformed")
	}
	if q.Get("info") == "1" {
		return h.shareInfo(r, sh)
	}
	if !sh.Folder {
		return h.shareFile(r, sh, "")
	}
	if st := sh.State(time.Now()); st != "active" {
		// A used-up folder link resumes a file's download (shareGetPath),
		// never lists or zips.
		return nil, meta.ErrShareUnavailable(st)
	}
	if q.Get("zip") == "1" {
		return h.shareZip(r, sh, q.Get("compress") == "1")
	}
	return h.shareList(r, sh, q)
}

// shareGetPath is GET /s/{token}/{path...}: a file of a folder share.
func (h *linkHandlers) shareGetPath(r *http.Request, _ auth.Principal) (response, error) {
	sh, err := h.openShare(r, shareRead)
	if err != nil {
		return nil, err
	}
	return h.shareFile(r, sh, r.PathValue("path"))
}

func (h *linkHandlers) shareFile(r *http.Request, sh meta.Share, rel string) (response, error) {
	key, err := object.ShareKey(sh, rel)
	if err != nil {
		return nil, err
	}
	rd, err := h.files.Get(r.Context(), object.ShareActor(sh), sh.Bucket, key)
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
	return &shareFileResponse{links: h, rd: rd, sh: sh}, nil
}

// shareFileResponse serves a file through a link on the shared download
// path, counting downloads as object.ReadShare says.
type shareFileResponse struct {
	links *linkHandlers
	rd    *object.Reader
	sh    meta.Share
}

func (f *shareFileResponse) respond(w http.ResponseWriter, r *http.Request) {
	o := f.rd.Object
	h := w.Header()
	h.Set("Cache-Control", "private, no-store")
	h.Set("Referrer-Policy", "no-referrer")
	now := time.Now()
	rep := httpx.Representation{ETag: o.ETag, ModTime: o.ModTime, Size: o.Size}
	read := object.ShareRead{Client: object.ShareClient(httpx.ClientIP(r, f.links.proxies)), Key: o.Key, ETag: o.ETag}
	counted := false
	if f.sh.State(now) == "used_up" {
		// Only the resume of a download the link counted goes on, decided
		// before any header: a used-up link answers nothing else, not even
		// a 304 or a 416.
		err := meta.ErrShareUnavailable("used_up")
		if start, ok := resumeStart(r, rep); ok {
			read.Offset = start
			err = f.links.shares.ReadShare(r.Context(), f.sh, read, now)
		}
		if err != nil {
			WriteProblem(w, r, f.links.log, err)
			return
		}
		counted = true
	}
	sp, ok, err := httpx.PlanDownload(w, r, rep, nil)
	if err != nil {
		WriteProblem(w, r, f.links.log, err)
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
			err = f.links.shares.ReadShare(r.Context(), f.sh, read, now)
		} else {
			err = f.links.shares.UseShare(r.Context(), f.sh, false, now)
		}
	}
	if err != nil {
		for _, k := range []string{"ETag", "Last-Modified", "Accept-Ranges", "Content-Range"} {
			h.Del(k)
		}
		WriteProblem(w, r, f.links.log, err)
		return
	}
	setObjectHeaders(h, r, o, sp.Status)
	if err := httpx.SendSpan(w, r, f.rd, sp, f.links.log, "share", f.sh.ID); err != nil {
		WriteProblem(w, r, f.links.log, err)
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
func (h *linkHandlers) shareInfo(r *http.Request, sh meta.Share) (response, error) {
	if err := h.shares.UseShare(r.Context(), sh, false, time.Now()); err != nil {
		return nil, err
	}
	info := shareInfoJSON{Kind: "folder", Note: sh.Note, ExpiresAt: sh.ExpiresAt.UTC(), AllowUpload: sh.AllowUpload}
	if sh.MaxDownloads > 0 {
		left := max(0, sh.MaxDownloads-sh.Downloads)
		info.DownloadsLeft = &left
	}
	if !sh.Folder {
		rd, err := h.files.Get(r.Context(), object.ShareActor(sh), sh.Bucket, sh.Key)
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
	if _, err := h.buckets.GetBucket(r.Context(), object.ShareActor(sh), sh.Bucket); err != nil {
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

func (h *linkHandlers) shareList(r *http.Request, sh meta.Share, q url.Values) (response, error) {
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
	if err := h.shares.UseShare(r.Context(), sh, false, time.Now()); err != nil {
		return nil, err
	}
	page, err := h.files.List(r.Context(), object.ShareActor(sh), sh.Bucket, opts)
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
func (h *linkHandlers) shareZip(r *http.Request, sh meta.Share, compress bool) (response, error) {
	plan := newZipPlan(h.zips.limits)
	a := object.ShareActor(sh)
	ctx, done := h.zips.planning(r)
	if err := done(h.zips.planPrefix(ctx, a, sh.Bucket, sh.Key, plan)); err != nil {
		return nil, shareSafe(err, sh)
	}
	if err := h.shares.UseShare(r.Context(), sh, r.Method == http.MethodGet, time.Now()); err != nil {
		return nil, err
	}
	name := "share.zip"
	if base := path.Base(strings.TrimSuffix(sh.Key, "/")); sh.Key != "" && base != "" && base != "." && base != "/" {
		name = base + ".zip"
	}
	return h.zips.stream(name, plan, a, sh.Bucket, compress), nil
}

// sharePost is POST /s/{token}/{path...}: "unlock" takes the password of
// a password-protected link.
func (h *linkHandlers) sharePost(r *http.Request, _ auth.Principal) (response, error) {
	if r.PathValue("path") != "unlock" {
		return nil, errcode.New(errcode.NotFound, "no such endpoint")
	}
	sh, err := h.openShare(r, shareUnlock)
	if err != nil {
		return nil, err
	}
	var b struct {
		Password string `json:"password"`
	}
	if err := h.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	if sh.Password == "" {
		return nil, errcode.New(errcode.InvalidArgument, "this share link has no password")
	}
	if err := h.shareAuth.CheckSharePassword(r.Context(), sh.ID, b.Password, sh.Password, httpx.ClientIP(r, h.proxies).String()); err != nil {
		return nil, err
	}
	exp := time.Now().Add(h.grantTTL)
	if exp.After(sh.ExpiresAt) {
		exp = sh.ExpiresAt
	}
	grant := h.shareAuth.ShareGrant(sh.ID, exp)
	c := &http.Cookie{Name: shareCookie, Value: grant, Path: "/s/" + r.PathValue("token"), Expires: exp,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	return jsonResponse{status: http.StatusOK, body: map[string]any{"grant": grant, "expires_at": exp.UTC()},
		header: http.Header{"Set-Cookie": {c.String()}}}, nil
}

// sharePut is PUT /s/{token}/{path...}: an upload into a drop box (a
// folder share with allow_upload). It never replaces a file: a name that
// is taken gets 412. The owner's quota applies.
func (h *linkHandlers) sharePut(r *http.Request, _ auth.Principal) (response, error) {
	sh, err := h.openShare(r, shareUse)
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
	o, err := h.files.Put(r.Context(), object.ShareActor(sh), object.PutInput{
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

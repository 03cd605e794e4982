package httpapi

import (
	"context"
	"encoding/base64"
	"github.com/coffer-storage/coffer/internal/audit"
	"net/http"
	"strconv"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// ServerInfo is what the server tells the admin API about itself.
type ServerInfo struct {
	Version   string    // module version, e.g. "v0.3.0" or "(devel)"
	Revision  string    // VCS revision, "" if unknown
	GoVersion string    // the Go release that built the binary
	Started   time.Time // when the server started
	MetaStore string    // "sqlite" or "postgres"
	BlobStore string    // "disk" or "s3"
	// Counts returns totals over the metadata store; nil: none reported.
	Counts func(ctx context.Context) (meta.Counts, error)
}

// adminUserJSON is a user as administrators see it.
type adminUserJSON struct {
	ID         string    `json:"id"`
	Email      string    `json:"email"`
	QuotaBytes int64     `json:"quota_bytes"`
	UsageBytes int64     `json:"usage_bytes"`
	Admin      bool      `json:"admin"`
	Disabled   bool      `json:"disabled"`
	CreatedAt  time.Time `json:"created_at"`
}

func toAdminUserJSON(u meta.User) adminUserJSON {
	return adminUserJSON{ID: u.ID, Email: u.Email, QuotaBytes: u.QuotaBytes, UsageBytes: u.UsageBytes,
		Admin: u.Admin, Disabled: u.Disabled, CreatedAt: u.CreatedAt}
}

// adminHandlers are the administrators' routes of users and invites
// (under /api/v1/admin, every one Admin) and the server's description.
type adminHandlers struct {
	jsonDecoder
	accounts   Accounts
	userAdmin  UserAdmin
	accessKeys AccessKeys
	uploads    Uploads // a deleted user's direct uploads at the backend
	info       ServerInfo
	scrub      func(ctx context.Context) (object.ScrubStatus, error) // Config.Scrub
	audit      *audit.Logger                                         // Config.Audit
}

// adminAudit is GET /api/v1/admin/audit: the audit log's recent events on
// this node, newest first, from its in-memory ring (--audit-recent), with
// the filters since (RFC 3339), actor (a user or key ID, or an e-mail
// address), action (an action, or a prefix ending in ".") and limit
// (default 100, at most 1000). The file (--audit-log) holds the whole log.
func (h *adminHandlers) adminAudit(r *http.Request, _ auth.Principal) (response, error) {
	q := r.URL.Query()
	f := audit.Filter{Actor: q.Get("actor"), Action: q.Get("action"), Limit: 100}
	if s := q.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, errcode.New(errcode.InvalidArgument, "since must be an RFC 3339 time")
		}
		f.Since = t
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			return nil, errcode.New(errcode.InvalidArgument, "limit must be 1 to 1000")
		}
		f.Limit = n
	}
	events := h.audit.Recent(f)
	if events == nil {
		events = []audit.Event{}
	}
	return ok(map[string]any{"enabled": h.audit != nil, "events": events}), nil
}

// adminScrub reports the scrub: the run in progress, the last finished
// one and the damaged blobs on record (docs/operations.md).
func (h *adminHandlers) adminScrub(r *http.Request, _ auth.Principal) (response, error) {
	if h.scrub == nil {
		return nil, errcode.New(errcode.NotImplemented, "this server does not report a scrub")
	}
	st, err := h.scrub(r.Context())
	if err != nil {
		return nil, err
	}
	return ok(st), nil
}

func (h *adminHandlers) adminServer(r *http.Request, _ auth.Principal) (response, error) {
	in := h.info
	body := map[string]any{
		"version":        in.Version,
		"revision":       in.Revision,
		"go_version":     in.GoVersion,
		"started_at":     in.Started.UTC(),
		"uptime_seconds": int64(time.Since(in.Started).Seconds()),
		"meta_store":     in.MetaStore,
		"blob_store":     in.BlobStore,
	}
	if in.Counts != nil {
		c, err := in.Counts(r.Context())
		if err != nil {
			return nil, err
		}
		body["users"], body["buckets"], body["objects"], body["bytes"] = c.Users, c.Buckets, c.Objects, c.Bytes
	}
	return ok(body), nil
}

func (h *adminHandlers) adminListUsers(r *http.Request, _ auth.Principal) (response, error) {
	q := r.URL.Query()
	opts := meta.ListUsersOptions{Query: q.Get("q")}
	if c := q.Get("cursor"); c != "" {
		after, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil || len(after) == 0 {
			return nil, errcode.New(errcode.InvalidArgument, "cursor is not one this API returned")
		}
		opts.After = string(after)
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			return nil, errcode.New(errcode.InvalidArgument, "limit must be an integer from 1 to 1000")
		}
		opts.Limit = n
	}
	if len(opts.Query) > 254 {
		return nil, errcode.New(errcode.InvalidArgument, "q is longer than 254 bytes")
	}
	us, more, err := h.userAdmin.ListUsers(r.Context(), opts)
	if err != nil {
		return nil, err
	}
	out := make([]adminUserJSON, len(us))
	for i, u := range us {
		out[i] = toAdminUserJSON(u)
	}
	body := map[string]any{"users": out}
	if more && len(us) > 0 {
		body["next_cursor"] = base64.RawURLEncoding.EncodeToString([]byte(us[len(us)-1].Email))
	}
	return ok(body), nil
}

func (h *adminHandlers) adminCreateUser(r *http.Request, _ auth.Principal) (response, error) {
	var body struct {
		Email      string `json:"email"`
		Password   string `json:"password"`
		Admin      bool   `json:"admin"`
		QuotaBytes *int64 `json:"quota_bytes"`
	}
	if err := h.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	u, b, err := h.userAdmin.CreateUser(r.Context(), auth.NewUser{Email: body.Email, Password: body.Password, Admin: body.Admin, QuotaBytes: body.QuotaBytes})
	if err != nil {
		return nil, err
	}
	return created(map[string]any{"user": toAdminUserJSON(u), "bucket": toBucketJSON(b)}), nil
}

func (h *adminHandlers) adminGetUser(r *http.Request, _ auth.Principal) (response, error) {
	u, err := h.accounts.User(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return ok(toAdminUserJSON(u)), nil
}

// notSelf refuses an administrator's action on their own account that
// could lock every administrator out.
func notSelf(r *http.Request, p auth.Principal, what string) error {
	if r.PathValue("id") == p.UserID {
		return &errcode.Error{Code: errcode.Conflict, Message: "administrators cannot " + what + " their own account here",
			Detail: map[string]any{"reason": "own_account"}}
	}
	return nil
}

func (h *adminHandlers) adminDeleteUser(r *http.Request, p auth.Principal) (response, error) {
	if err := notSelf(r, p, "delete"); err != nil {
		return nil, err
	}
	purge, err := boolParam(r, "purge")
	if err != nil {
		return nil, err
	}
	res, err := h.userAdmin.DeleteUser(r.Context(), r.PathValue("id"), purge)
	if err != nil {
		return nil, err
	}
	h.uploads.AbortBackendUploads(r.Context(), res.BackendUploads)
	return noContent{}, nil
}

// boolParam parses an optional boolean query parameter.
func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errcode.New(errcode.InvalidArgument, "%s must be true or false", name)
	}
	return b, nil
}

func (h *adminHandlers) adminSetQuota(r *http.Request, _ auth.Principal) (response, error) {
	var body struct {
		QuotaBytes *int64 `json:"quota_bytes"`
	}
	if err := h.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	if body.QuotaBytes == nil {
		return nil, errcode.New(errcode.InvalidArgument, "quota_bytes is required (0 = unlimited)")
	}
	u, err := h.userAdmin.SetQuota(r.Context(), r.PathValue("id"), *body.QuotaBytes)
	if err != nil {
		return nil, err
	}
	return ok(toAdminUserJSON(u)), nil
}

func (h *adminHandlers) adminDisable(r *http.Request, p auth.Principal) (response, error) {
	if err := notSelf(r, p, "disable"); err != nil {
		return nil, err
	}
	u, err := h.userAdmin.Disable(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return ok(toAdminUserJSON(u)), nil
}

func (h *adminHandlers) adminEnable(r *http.Request, _ auth.Principal) (response, error) {
	u, err := h.userAdmin.Enable(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return ok(toAdminUserJSON(u)), nil
}

func (h *adminHandlers) adminSetPassword(r *http.Request, _ auth.Principal) (response, error) {
	var body struct {
		Password string `json:"password"`
	}
	if err := h.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	if _, err := h.userAdmin.SetPassword(r.Context(), r.PathValue("id"), body.Password); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

func (h *adminHandlers) adminListBuckets(r *http.Request, _ auth.Principal) (response, error) {
	bs, err := h.accounts.UserBuckets(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	out := make([]bucketJSON, len(bs))
	for i, b := range bs {
		out[i] = toBucketJSON(b)
	}
	return ok(map[string]any{"buckets": out}), nil
}

func (h *adminHandlers) adminListKeys(r *http.Request, _ auth.Principal) (response, error) {
	id := r.PathValue("id")
	if _, err := h.accounts.User(r.Context(), id); err != nil {
		return nil, err
	}
	return keysResponse(r.Context(), h.accessKeys, id, time.Now())
}

func (h *adminHandlers) adminDeleteKey(r *http.Request, _ auth.Principal) (response, error) {
	if err := h.accessKeys.DeleteAccessKey(r.Context(), r.PathValue("id"), r.PathValue("key")); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

// limitsJSON is a per-user rate limit override: requests and body bytes per
// window_seconds; 0 = the server's default for that part.
type limitsJSON struct {
	UserID        string `json:"user_id"`
	Requests      int64  `json:"requests"`
	Bytes         int64  `json:"bytes"`
	WindowSeconds int64  `json:"window_seconds"`
	Override      bool   `json:"override"`
}

func (h *adminHandlers) adminGetLimits(r *http.Request, _ auth.Principal) (response, error) {
	l, ok2, err := h.userAdmin.Limits(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return ok(limitsJSON{UserID: l.UserID, Requests: l.Requests, Bytes: l.Bytes, WindowSeconds: int64(l.Window / time.Second), Override: ok2}), nil
}

func (h *adminHandlers) adminSetLimits(r *http.Request, _ auth.Principal) (response, error) {
	var body struct {
		Requests      *int64 `json:"requests"`
		Bytes         *int64 `json:"bytes"`
		WindowSeconds *int64 `json:"window_seconds"`
	}
	if err := h.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	if body.Requests == nil || body.Bytes == nil {
		return nil, errcode.New(errcode.InvalidArgument, "requests and bytes are required (0 = the server's default; both 0 removes the override)")
	}
	l := meta.UserLimits{UserID: r.PathValue("id"), Requests: *body.Requests, Bytes: *body.Bytes, Window: time.Minute}
	if body.WindowSeconds != nil {
		if *body.WindowSeconds < 1 || *body.WindowSeconds > 86400 {
			return nil, errcode.New(errcode.InvalidArgument, "window_seconds must be 1 to 86400")
		}
		l.Window = time.Duration(*body.WindowSeconds) * time.Second
	}
	if err := h.userAdmin.SetLimits(r.Context(), l); err != nil {
		return nil, err
	}
	return h.adminGetLimits(r, auth.Principal{})
}

package httpapi

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/meta"
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

// adminRoutes are the routes under /api/v1/admin, every one Admin.
func (api *API) adminRoutes() []Route {
	const u = "/api/v1/admin/users/{id}"
	return []Route{
		{Method: "GET", Pattern: "/api/v1/admin/server", Access: Admin, handle: api.adminServer},
		{Method: "GET", Pattern: "/api/v1/admin/users", Access: Admin, handle: api.adminListUsers},
		{Method: "POST", Pattern: "/api/v1/admin/users", Access: Admin, handle: api.adminCreateUser},
		{Method: "GET", Pattern: u, Access: Admin, handle: api.adminGetUser},
		{Method: "DELETE", Pattern: u, Access: Admin, handle: api.adminDeleteUser},
		{Method: "PUT", Pattern: u + "/quota", Access: Admin, handle: api.adminSetQuota},
		{Method: "GET", Pattern: u + "/limits", Access: Admin, handle: api.adminGetLimits},
		{Method: "PUT", Pattern: u + "/limits", Access: Admin, handle: api.adminSetLimits},
		{Method: "POST", Pattern: u + "/disable", Access: Admin, handle: api.adminDisable},
		{Method: "POST", Pattern: u + "/enable", Access: Admin, handle: api.adminEnable},
		{Method: "POST", Pattern: u + "/password", Access: Admin, handle: api.adminSetPassword},
		{Method: "GET", Pattern: u + "/buckets", Access: Admin, handle: api.adminListBuckets},
		{Method: "GET", Pattern: u + "/keys", Access: Admin, handle: api.adminListKeys},
		{Method: "DELETE", Pattern: u + "/keys/{key}", Access: Admin, handle: api.adminDeleteKey},
		{Method: "POST", Pattern: "/api/v1/admin/kms/rotate", Access: Admin, handle: api.adminRotateKeys},
	}
}

// adminRotateKeys rotates the default key-encryption key of encryption at
// rest (docs/encryption.md) and starts the background re-wrap of the data
// keys already issued (the "rewrap" job; see GET /api/v1/admin/kms/jobs).
func (api *API) adminRotateKeys(r *http.Request, _ auth.Principal) (response, error) {
	if api.cfg.RotateKeys == nil {
		return nil, errcode.New(errcode.NotImplemented, "no key provider: start the server with --encryption on or --kms")
	}
	prev, cur, err := api.cfg.RotateKeys(r.Context())
	if err != nil {
		return nil, err
	}
	body := map[string]any{"kek": cur, "previous_kek": prev, "rotated": prev != cur}
	if prev != cur {
		j, err := api.encryption.StartRewrap(r.Context())
		if err != nil {
			return nil, err
		}
		body["job"] = toKMSJobJSON(j)
	}
	return ok(body), nil
}

func (api *API) adminServer(r *http.Request, _ auth.Principal) (response, error) {
	in := api.cfg.Info
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

func (api *API) adminListUsers(r *http.Request, _ auth.Principal) (response, error) {
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
	us, more, err := api.userAdmin.ListUsers(r.Context(), opts)
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

func (api *API) adminCreateUser(r *http.Request, _ auth.Principal) (response, error) {
	var body struct {
		Email      string `json:"email"`
		Password   string `json:"password"`
		Admin      bool   `json:"admin"`
		QuotaBytes *int64 `json:"quota_bytes"`
	}
	if err := api.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	u, b, err := api.userAdmin.CreateUser(r.Context(), auth.NewUser{Email: body.Email, Password: body.Password, Admin: body.Admin, QuotaBytes: body.QuotaBytes})
	if err != nil {
		return nil, err
	}
	return created(map[string]any{"user": toAdminUserJSON(u), "bucket": toBucketJSON(b)}), nil
}

func (api *API) adminGetUser(r *http.Request, _ auth.Principal) (response, error) {
	u, err := api.accounts.User(r.Context(), r.PathValue("id"))
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

func (api *API) adminDeleteUser(r *http.Request, p auth.Principal) (response, error) {
	if err := notSelf(r, p, "delete"); err != nil {
		return nil, err
	}
	purge, err := boolParam(r, "purge")
	if err != nil {
		return nil, err
	}
	res, err := api.userAdmin.DeleteUser(r.Context(), r.PathValue("id"), purge)
	if err != nil {
		return nil, err
	}
	api.uploads.AbortBackendUploads(r.Context(), res.BackendUploads)
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

func (api *API) adminSetQuota(r *http.Request, _ auth.Principal) (response, error) {
	var body struct {
		QuotaBytes *int64 `json:"quota_bytes"`
	}
	if err := api.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	if body.QuotaBytes == nil {
		return nil, errcode.New(errcode.InvalidArgument, "quota_bytes is required (0 = unlimited)")
	}
	u, err := api.userAdmin.SetQuota(r.Context(), r.PathValue("id"), *body.QuotaBytes)
	if err != nil {
		return nil, err
	}
	return ok(toAdminUserJSON(u)), nil
}

func (api *API) adminDisable(r *http.Request, p auth.Principal) (response, error) {
	if err := notSelf(r, p, "disable"); err != nil {
		return nil, err
	}
	u, err := api.userAdmin.Disable(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return ok(toAdminUserJSON(u)), nil
}

func (api *API) adminEnable(r *http.Request, _ auth.Principal) (response, error) {
	u, err := api.userAdmin.Enable(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return ok(toAdminUserJSON(u)), nil
}

func (api *API) adminSetPassword(r *http.Request, _ auth.Principal) (response, error) {
	var body struct {
		Password string `json:"password"`
	}
	if err := api.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	if _, err := api.userAdmin.SetPassword(r.Context(), r.PathValue("id"), body.Password); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

func (api *API) adminListBuckets(r *http.Request, _ auth.Principal) (response, error) {
	bs, err := api.accounts.UserBuckets(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	out := make([]bucketJSON, len(bs))
	for i, b := range bs {
		out[i] = toBucketJSON(b)
	}
	return ok(map[string]any{"buckets": out}), nil
}

func (api *API) adminListKeys(r *http.Request, _ auth.Principal) (response, error) {
	id := r.PathValue("id")
	if _, err := api.accounts.User(r.Context(), id); err != nil {
		return nil, err
	}
	return api.listKeys(r, auth.Principal{UserID: id})
}

func (api *API) adminDeleteKey(r *http.Request, _ auth.Principal) (response, error) {
	if err := api.accessKeys.DeleteAccessKey(r.Context(), r.PathValue("id"), r.PathValue("key")); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

// ---- self-service ----

func (api *API) changePassword(r *http.Request, p auth.Principal) (response, error) {
	var body struct {
		OldPassword string `json:"old_password"`
		NewPassword string `json:"new_password"`
	}
	if err := api.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	s, err := api.accounts.ChangePassword(r.Context(), p.UserID, body.OldPassword, body.NewPassword, httpx.ClientIP(r, api.cfg.TrustedProxies).String())
	if err != nil {
		return nil, err
	}
	return sessionResponse(r, s), nil
}

func (api *API) deleteMe(r *http.Request, p auth.Principal) (response, error) {
	var body struct {
		Password string `json:"password"`
		Purge    bool   `json:"purge"`
	}
	if err := api.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	res, err := api.accounts.DeleteAccount(r.Context(), p.UserID, body.Password, body.Purge, httpx.ClientIP(r, api.cfg.TrustedProxies).String())
	if err != nil {
		return nil, err
	}
	api.uploads.AbortBackendUploads(r.Context(), res.BackendUploads)
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

func (api *API) adminGetLimits(r *http.Request, _ auth.Principal) (response, error) {
	l, ok2, err := api.userAdmin.Limits(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return ok(limitsJSON{UserID: l.UserID, Requests: l.Requests, Bytes: l.Bytes, WindowSeconds: int64(l.Window / time.Second), Override: ok2}), nil
}

func (api *API) adminSetLimits(r *http.Request, _ auth.Principal) (response, error) {
	var body struct {
		Requests      *int64 `json:"requests"`
		Bytes         *int64 `json:"bytes"`
		WindowSeconds *int64 `json:"window_seconds"`
	}
	if err := api.decodeJSON(r, &body); err != nil {
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
	if err := api.userAdmin.SetLimits(r.Context(), l); err != nil {
		return nil, err
	}
	return api.adminGetLimits(r, auth.Principal{})
}

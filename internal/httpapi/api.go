// Package httpapi is Coffer's file REST API under /api/v1: accounts and
// sessions, buckets, streaming uploads (raw and multipart/form-data),
// HTTP-correct downloads, listing, move and copy. Every error is an RFC 9457
// problem details body with a stable code (see problem.go, docs/errors.md).
//
// Handlers return (response, error); one wrapper authenticates, writes the
// response or the problem, and nothing else writes to the wire. Every route
// is declared once in the table returned by Routes, which the cross-user
// test walks, so a new route cannot skip its authorisation test.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/coffer-storage/coffer/internal/audit"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/ratelimit"
	"github.com/coffer-storage/coffer/internal/tus"
)

// Config of the file API. New takes it as given: ConfigFrom fills the
// limits from config.Config (config.Defaults() for the defaults); the
// server adds the rest.
type Config struct {
	// TrustedProxies may set X-Forwarded-For; empty trusts nobody.
	TrustedProxies []netip.Prefix
	// PublicMaxAge is the Cache-Control max-age of public-read objects.
	PublicMaxAge time.Duration
	// MaxJSONBody bounds JSON request bodies.
	MaxJSONBody int64
	// MaxFormFiles bounds the files of one multipart/form-data upload.
	MaxFormFiles int
	// Presign makes the part URLs of direct uploads; nil disables them.
	Presign Presigner
	// Info is what GET /api/v1/admin/server reports.
	Info ServerInfo
	// RotateKeys makes a new version of the default key-encryption key
	// current (POST /api/v1/admin/kms/rotate) and returns the previous and
	// the new one; nil: no key provider (501).
	RotateKeys func(ctx context.Context) (previous, current string, err error)
	// Gateways manages gateway buckets (/api/v1/admin/gateways); nil:
	// 501.
	Gateways GatewayAdmin
	// Scrub reports the scrub (GET /api/v1/admin/scrub); nil: 501.
	Scrub func(ctx context.Context) (object.ScrubStatus, error)
	// Audit is the audit log: share links' opens are recorded in it, and
	// GET /api/v1/admin/audit queries its recent events (nil: off).
	Audit *audit.Logger
	// ShareDefaultExpiry is the lifetime of a share link created without
	// one.
	ShareDefaultExpiry time.Duration
	// ShareMaxExpiry is the longest lifetime a share link may have
	// (--share-max-expiry).
	ShareMaxExpiry time.Duration
	// ShareGrantTTL is how long an unlocked password-protected link stays
	// unlocked (its cookie or X-Share-Grant).
	ShareGrantTTL time.Duration
	// MaxZipEntries and MaxZipBytes bound one zip download.
	MaxZipEntries int
	MaxZipBytes   int64
	// DirectUploadExpiry is how long a direct-upload session may stay
	// incomplete before the janitor aborts it.
	DirectUploadExpiry time.Duration
	// ZipPlanTimeout bounds the planning of one zip (listing what goes in,
	// before the first byte): --request-timeout.
	ZipPlanTimeout time.Duration
	// BeforeZipEntry, if set, runs before each entry of a zip is opened:
	// fault injection for tests (an object deleted mid-zip). Nil in
	// production.
	BeforeZipEntry func(key string)

	// Tus enables the tus 1.0 endpoint at TusBase when Store is set.
	Tus TusConfig

	// CORSOrigins may call the CORS routes across origins (cors.go,
	// --cors-origins); empty: none.
	CORSOrigins []string
}

// TusConfig configures the tus endpoint (internal/tus): ConfigFrom fills
// the lifetimes (tus.ConfigFrom), the server adds Store.
type TusConfig struct {
	Store     meta.Tus
	TTL       time.Duration // unfinished uploads expire after (--tus-expiry)
	LockLease time.Duration // an upload's lock
}

// API is the file API: the route table, the router and the wrapper that
// authenticates every request and writes its answer. The handlers live in
// groups by area, each holding only the services and settings it uses:
// sessions and the signed-in account (accounts.go), buckets (buckets.go),
// files with their zips and batch deletes (files.go, zip.go, batch.go),
// share links (shares.go: the owner's; links.go: /s/), S3 keys (keys.go),
// direct uploads (uploads.go), the administrators' users and invites
// (admin.go, invites.go), gateway buckets (gateways.go), encryption at
// rest (encryptionjobs.go) and tus (tus.go).
type API struct {
	cfg      Config // as New was given it
	log      *slog.Logger
	accounts Accounts // every request's token; the admin role
	router   *router

	sessions   *sessionHandlers
	buckets    *bucketHandlers
	files      *fileHandlers
	shares     *shareHandlers
	links      *linkHandlers
	keys       *keyHandlers
	uploads    *uploadHandlers
	admin      *adminHandlers
	gateways   *gatewayHandlers
	encryption *encryptionHandlers
	tus        *tusHandlers
}

// ConfigFrom returns the file API's limits in c (its public max-age, JSON,
// form and zip bounds, share link lifetimes, zip planning timeout,
// direct-upload and tus lifetimes); TrustedProxies included. The wiring
// (Presign, Info, RotateKeys, Gateways, Tus.Store) is the caller's to
// add.
func ConfigFrom(c config.Config) Config {
	t := tus.ConfigFrom(c)
	return Config{
		TrustedProxies: c.TrustedProxies,
		PublicMaxAge:   c.PublicMaxAge, MaxJSONBody: c.MaxJSONBody, MaxFormFiles: c.MaxFormFiles,
		ShareDefaultExpiry: c.ShareDefaultExpiry, ShareMaxExpiry: c.ShareMaxExpiry, ShareGrantTTL: c.ShareGrantTTL,
		MaxZipEntries: c.MaxZipEntries, MaxZipBytes: c.MaxZipBytes,
		// A zip streams (no request timeout), but its planning does not.
		ZipPlanTimeout:     c.RequestTimeout,
		DirectUploadExpiry: c.DirectUploadExpiry,
		Tus:                TusConfig{TTL: t.TTL, LockLease: t.LockLease},
		CORSOrigins:        c.CORSOrigins,
	}
}

// New returns the API over svc, configured by cfg as it is (see
// ConfigFrom).
func New(svc Services, cfg Config, log *slog.Logger) *API {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	body := jsonDecoder{maxBody: cfg.MaxJSONBody}
	zips := &zipper{files: svc.Files, buckets: svc.Buckets, log: log,
		limits: zipLimits{Entries: cfg.MaxZipEntries, Bytes: cfg.MaxZipBytes}, planTimeout: cfg.ZipPlanTimeout, before: cfg.BeforeZipEntry}
	api := &API{cfg: cfg, log: log, accounts: svc.Accounts, tus: &tusHandlers{}}
	api.sessions = &sessionHandlers{jsonDecoder: body,
		accounts: svc.Accounts, uploads: svc.Uploads, proxies: cfg.TrustedProxies}
	api.buckets = &bucketHandlers{jsonDecoder: body, buckets: svc.Buckets}
	api.files = &fileHandlers{jsonDecoder: body, files: svc.Files, buckets: svc.Buckets, zips: zips,
		maxFormFiles: cfg.MaxFormFiles, publicMaxAge: cfg.PublicMaxAge, log: log}
	api.shares = &shareHandlers{jsonDecoder: body, shares: svc.Shares, buckets: svc.Buckets, shareAuth: svc.ShareAuth,
		defaultExpiry: cfg.ShareDefaultExpiry, maxExpiry: cfg.ShareMaxExpiry}
	api.links = &linkHandlers{jsonDecoder: body, shares: svc.Shares, files: svc.Files, buckets: svc.Buckets,
		accounts: svc.Accounts, shareAuth: svc.ShareAuth, zips: zips,
		grantTTL: cfg.ShareGrantTTL, proxies: cfg.TrustedProxies, log: log, audit: cfg.Audit}
	api.keys = &keyHandlers{jsonDecoder: body, accessKeys: svc.AccessKeys}
	api.uploads = &uploadHandlers{jsonDecoder: body, uploads: svc.Uploads, presign: cfg.Presign, ttl: cfg.DirectUploadExpiry}
	api.admin = &adminHandlers{jsonDecoder: body, accounts: svc.Accounts, userAdmin: svc.UserAdmin,
		accessKeys: svc.AccessKeys, uploads: svc.Uploads, info: cfg.Info, scrub: cfg.Scrub, audit: cfg.Audit}
	api.gateways = &gatewayHandlers{jsonDecoder: body, gateways: cfg.Gateways}
	api.encryption = &encryptionHandlers{jsonDecoder: body, encryption: svc.Encryption, rotateKeys: cfg.RotateKeys}
	if cfg.Tus.Store != nil && svc.Tus != nil {
		h, err := newTus(svc.Tus, cfg.Tus, log)
		if err != nil {
			// tusd refuses only a bad base path (TusBase is a constant):
			// the tus routes then answer not_implemented.
			log.Error("tus endpoint disabled", "err", err)
		} else {
			api.tus.handler = h
		}
	}
	api.router = newRouter(api.Routes())
	return api
}

// Access says who may call a route.
type Access string

// Accesses.
const (
	Public   Access = "public"   // no credentials needed (signup, login, ...)
	User     Access = "user"     // a valid access token is required
	Optional Access = "optional" // anonymous allowed; the object service decides
	Admin    Access = "admin"    // a valid access token of an administrator
	Share    Access = "share"    // anonymous, through a share link's token
)

// Route describes one endpoint.
type Route struct {
	Method  string // GET routes also answer HEAD
	Pattern string // net/http ServeMux pattern without the method
	Access  Access
	// Streams is true for routes that move object bytes (exempt from the
	// server's request timeout; bounded by minimum transfer rates and the
	// write-idle deadline instead).
	Streams bool
	// CORS routes answer pages of Config.CORSOrigins across origins
	// (cors.go): share links and the direct-upload flow.
	CORS bool
	// Finishes routes complete work already admitted (the direct upload's
	// complete): the adaptive admission limit does not shed them
	// (ratelimit.Request.Finishes).
	Finishes bool
	handle   handlerFunc
}

type handlerFunc func(r *http.Request, p auth.Principal) (response, error)

// response writes a successful result.
type response interface {
	respond(w http.ResponseWriter, r *http.Request)
}

// Routes returns the API's route table.
func (api *API) Routes() []Route {
	const (
		b = "/api/v1/buckets/{bucket}"
		u = "/api/v1/admin/users/{id}"
		t = TusBase + "{id}"
	)
	return []Route{
		{Method: "GET", Pattern: "/api/v1/openapi.json", Access: Public, handle: api.openAPI},
		{Method: "POST", Pattern: "/api/v1/auth/signup", Access: Public, handle: api.sessions.signup},
		{Method: "POST", Pattern: "/api/v1/auth/login", Access: Public, handle: api.sessions.login},
		{Method: "POST", Pattern: "/api/v1/auth/refresh", Access: Public, handle: api.sessions.refresh},
		{Method: "POST", Pattern: "/api/v1/auth/resume", Access: Public, handle: api.sessions.resume},
		{Method: "POST", Pattern: "/api/v1/auth/logout", Access: Public, handle: api.sessions.logout},
		{Method: "GET", Pattern: "/api/v1/me", Access: User, handle: api.sessions.me},
		{Method: "DELETE", Pattern: "/api/v1/me", Access: User, handle: api.sessions.deleteMe},
		{Method: "POST", Pattern: "/api/v1/me/password", Access: User, handle: api.sessions.changePassword},

		{Method: "GET", Pattern: "/api/v1/buckets", Access: User, handle: api.buckets.listBuckets},
		{Method: "POST", Pattern: "/api/v1/buckets", Access: User, handle: api.buckets.createBucket},
		{Method: "GET", Pattern: b, Access: User, handle: api.buckets.getBucket},
		{Method: "PATCH", Pattern: b, Access: User, handle: api.buckets.patchBucket},
		{Method: "DELETE", Pattern: b, Access: User, handle: api.buckets.deleteBucket},

		{Method: "GET", Pattern: b + "/files", Access: User, handle: api.files.listFiles},
		{Method: "POST", Pattern: b + "/files", Access: User, Streams: true, handle: api.files.uploadForm},
		{Method: "PUT", Pattern: b + "/files/{key...}", Access: User, Streams: true, handle: api.files.putFile},
		{Method: "GET", Pattern: b + "/files/{key...}", Access: Optional, Streams: true, handle: api.files.getFile},
		{Method: "DELETE", Pattern: b + "/files/{key...}", Access: User, handle: api.files.deleteFile},
		{Method: "POST", Pattern: b + "/move", Access: User, handle: api.files.moveFile},
		{Method: "POST", Pattern: b + "/copy", Access: User, Streams: true, handle: api.files.copyFile},
		{Method: "POST", Pattern: b + "/zip", Access: User, Streams: true, handle: api.files.zipFiles},
		{Method: "POST", Pattern: b + "/delete", Access: User, Streams: true, handle: api.files.batchDelete},
		{Method: "GET", Pattern: b + "/versions/{key...}", Access: User, handle: api.files.listVersions},
		{Method: "POST", Pattern: b + "/restore", Access: User, Streams: true, handle: api.files.restoreVersion},
		{Method: "GET", Pattern: b + "/trash", Access: User, handle: api.files.listTrash},
		{Method: "POST", Pattern: b + "/undelete", Access: User, handle: api.files.undelete},

		{Method: "GET", Pattern: "/api/v1/shares", Access: User, handle: api.shares.listShares},
		{Method: "POST", Pattern: "/api/v1/shares", Access: User, handle: api.shares.createShare},
		{Method: "GET", Pattern: "/api/v1/shares/{id}", Access: User, handle: api.shares.getShare},
		{Method: "PATCH", Pattern: "/api/v1/shares/{id}", Access: User, handle: api.shares.patchShare},
		{Method: "DELETE", Pattern: "/api/v1/shares/{id}", Access: User, handle: api.shares.revokeShare},

		// Anonymous access through share links: Share routes never look
		// at the Authorization header; the link is the credential.
		{Method: "GET", Pattern: "/s/{token}", Access: Share, Streams: true, CORS: true, handle: api.links.shareGet},
		{Method: "GET", Pattern: "/s/{token}/{path...}", Access: Share, Streams: true, CORS: true, handle: api.links.shareGetPath},
		{Method: "PUT", Pattern: "/s/{token}/{path...}", Access: Share, Streams: true, CORS: true, handle: api.links.sharePut},
		{Method: "POST", Pattern: "/s/{token}/{path...}", Access: Share, CORS: true, handle: api.links.sharePost},

		{Method: "GET", Pattern: "/api/v1/keys", Access: User, handle: api.keys.listKeys},
		{Method: "POST", Pattern: "/api/v1/keys", Access: User, handle: api.keys.createKey},
		{Method: "DELETE", Pattern: "/api/v1/keys/{id}", Access: User, handle: api.keys.deleteKey},
		{Method: "GET", Pattern: "/api/v1/tokens", Access: User, handle: api.keys.listTokens},
		{Method: "POST", Pattern: "/api/v1/tokens", Access: User, handle: api.keys.createToken},
		{Method: "DELETE", Pattern: "/api/v1/tokens/{id}", Access: User, handle: api.keys.deleteToken},

		{Method: "POST", Pattern: "/api/v1/uploads", Access: User, CORS: true, handle: api.uploads.createUpload},
		{Method: "GET", Pattern: "/api/v1/uploads/{id}", Access: User, CORS: true, handle: api.uploads.getUpload},
		{Method: "DELETE", Pattern: "/api/v1/uploads/{id}", Access: User, CORS: true, handle: api.uploads.abortUpload},
		{Method: "POST", Pattern: "/api/v1/uploads/{id}/complete", Access: User, CORS: true, Finishes: true, handle: api.uploads.completeUpload},

		{Method: "GET", Pattern: "/api/v1/admin/invites", Access: Admin, handle: api.admin.listInvites},
		{Method: "POST", Pattern: "/api/v1/admin/invites", Access: Admin, handle: api.admin.createInvite},
		{Method: "DELETE", Pattern: "/api/v1/admin/invites/{id}", Access: Admin, handle: api.admin.revokeInvite},

		// Under /api/v1/admin, every route is Admin.
		{Method: "GET", Pattern: "/api/v1/admin/server", Access: Admin, handle: api.admin.adminServer},
		{Method: "GET", Pattern: "/api/v1/admin/scrub", Access: Admin, handle: api.admin.adminScrub},
		{Method: "GET", Pattern: "/api/v1/admin/audit", Access: Admin, handle: api.admin.adminAudit},
		{Method: "GET", Pattern: "/api/v1/admin/users", Access: Admin, handle: api.admin.adminListUsers},
		{Method: "POST", Pattern: "/api/v1/admin/users", Access: Admin, handle: api.admin.adminCreateUser},
		{Method: "GET", Pattern: u, Access: Admin, handle: api.admin.adminGetUser},
		{Method: "DELETE", Pattern: u, Access: Admin, handle: api.admin.adminDeleteUser},
		{Method: "PUT", Pattern: u + "/quota", Access: Admin, handle: api.admin.adminSetQuota},
		{Method: "GET", Pattern: u + "/limits", Access: Admin, handle: api.admin.adminGetLimits},
		{Method: "PUT", Pattern: u + "/limits", Access: Admin, handle: api.admin.adminSetLimits},
		{Method: "POST", Pattern: u + "/disable", Access: Admin, handle: api.admin.adminDisable},
		{Method: "POST", Pattern: u + "/enable", Access: Admin, handle: api.admin.adminEnable},
		{Method: "POST", Pattern: u + "/password", Access: Admin, handle: api.admin.adminSetPassword},
		{Method: "GET", Pattern: u + "/buckets", Access: Admin, handle: api.admin.adminListBuckets},
		{Method: "GET", Pattern: u + "/keys", Access: Admin, handle: api.admin.adminListKeys},
		{Method: "DELETE", Pattern: u + "/keys/{key}", Access: Admin, handle: api.admin.adminDeleteKey},
		{Method: "POST", Pattern: "/api/v1/admin/kms/rotate", Access: Admin, handle: api.encryption.adminRotateKeys},

		{Method: "GET", Pattern: "/api/v1/admin/gateways", Access: Admin, handle: api.gateways.adminListGateways},
		{Method: "POST", Pattern: "/api/v1/admin/gateways", Access: Admin, handle: api.gateways.adminCreateGateway},
		{Method: "DELETE", Pattern: "/api/v1/admin/gateways/{name}", Access: Admin, handle: api.gateways.adminDeleteGateway},

		{Method: "POST", Pattern: "/api/v1/admin/kms/rewrap", Access: Admin, handle: api.encryption.adminStartRewrap},
		{Method: "POST", Pattern: "/api/v1/admin/kms/encrypt", Access: Admin, handle: api.encryption.adminStartEncrypt},
		{Method: "GET", Pattern: "/api/v1/admin/kms/jobs", Access: Admin, handle: api.encryption.adminEncryptionJobs},
		{Method: "GET", Pattern: "/api/v1/admin/kms/jobs/{name}", Access: Admin, handle: api.encryption.adminEncryptionJob},
		{Method: "GET", Pattern: "/api/v1/admin/kms/grants", Access: Admin, handle: api.encryption.adminKMSGrants},
		{Method: "PUT", Pattern: u + "/kms-keys/{key...}", Access: Admin, handle: api.encryption.adminAllowKMSKey},
		{Method: "DELETE", Pattern: u + "/kms-keys/{key...}", Access: Admin, handle: api.encryption.adminDisallowKMSKey},

		// The tus 1.0 endpoint (internal/tus): the creation URL and the
		// upload URLs. They stream (POST may carry the first chunk:
		// creation-with-upload); OPTIONS needs no credentials (it tells
		// only the protocol's capabilities).
		{Method: "OPTIONS", Pattern: TusBase, Access: Public, handle: api.tus.tusServe},
		{Method: "POST", Pattern: TusBase, Access: User, Streams: true, handle: api.tus.tusServe},
		{Method: "OPTIONS", Pattern: t, Access: Public, handle: api.tus.tusServe},
		{Method: "GET", Pattern: t, Access: User, handle: api.tus.tusServe}, // HEAD
		{Method: "PATCH", Pattern: t, Access: User, Streams: true, handle: api.tus.tusServe},
		{Method: "DELETE", Pattern: t, Access: User, handle: api.tus.tusServe},
	}
}

// Handler returns the API as an http.Handler for paths under /api/. Mount
// it so that no http.ServeMux cleans the path first (see router).
func (api *API) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route, err := api.router.match(r)
		if origin := r.Header.Get("Origin"); origin != "" && len(api.cfg.CORSOrigins) > 0 && api.cors(w, r, origin, route, err) {
			return
		}
		if err != nil {
			if errcode.Is(err, errcode.MethodNotAllowed) {
				w.Header().Set("Allow", route.Method)
			}
			WriteProblem(w, r, api.log, err)
			return
		}
		api.serve(w, r, route)
	})
}

func (api *API) serve(w http.ResponseWriter, r *http.Request, rt Route) {
	httpx.SetRoute(r.Context(), rt.Method+" "+rt.Pattern)
	// Public routes (signup, login, refresh, logout) act as nobody: a
	// stale bearer token (a session revoked by a password change) must
	// not keep its holder from logging in again.
	var p auth.Principal
	var err error
	if rt.Access != Public && rt.Access != Share {
		p, err = api.principal(r)
	}
	if err == nil && (rt.Access == User || rt.Access == Admin) && p.Anonymous() {
		err = errcode.New(errcode.Unauthenticated, "authentication required")
	}
	if err == nil && p.KeyID != "" && !appTokenRoute(rt) {
		err = errcode.New(errcode.PermissionDenied, "an app token may use only the bucket, file and upload routes")
	}
	if err == nil && !p.Anonymous() {
		// The per-user quota, charged once the token holds. (A share
		// link's requests are charged to the share: ratelimit.DimShare.)
		err = httpx.Limit(r.Context(), ratelimit.DimUser, p.UserID)
	}
	if err == nil && rt.Access == Admin {
		// The one place the admin role is checked for the API.
		err = api.accounts.RequireAdmin(r.Context(), p)
	}
	if err != nil {
		WriteProblem(w, r, api.log, err)
		return
	}
	httpx.SetUser(r.Context(), p.UserID)
	if p.KeyID != "" {
		httpx.SetKey(r.Context(), p.KeyID)
	}
	if rt.Access == Admin {
		httpx.SetAdmin(r.Context())
	}
	r = r.WithContext(context.WithValue(r.Context(), conditionsKey{}, api.conditions(r, p)))
	resp, err := rt.handle(r, p)
	if err != nil {
		WriteProblem(w, r, api.log, err)
		return
	}
	resp.respond(w, r)
}

// principal authenticates the request's bearer token, if any. A present
// but invalid token is an error even on routes that allow anonymous access.
func (api *API) principal(r *http.Request) (auth.Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return auth.Principal{}, nil
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return auth.Principal{}, errcode.New(errcode.Unauthenticated, "Authorization must be \"Bearer <access token>\"")
	}
	token = strings.TrimSpace(token)
	if auth.IsAppToken(token) {
		return api.keys.accessKeys.AuthenticateToken(r.Context(), token)
	}
	return api.accounts.Authenticate(r.Context(), token)
}

// appTokenRoute reports whether an app token may call rt: the routes of
// buckets, files and uploads, whose every action the object service
// decides with the token's scope. Accounts, keys, tokens, shares and
// administration need the user's own session.
func appTokenRoute(rt Route) bool {
	for _, p := range []string{"/api/v1/buckets", "/api/v1/uploads", TusBase} {
		if rt.Pattern == p || strings.HasPrefix(rt.Pattern, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// actor is who request r acts for: p, with the request's condition keys
// (conditions) for the policies the object service consults.
func actor(r *http.Request, p auth.Principal) object.Actor {
	c, _ := r.Context().Value(conditionsKey{}).(map[string][]string)
	return object.Actor{UserID: p.UserID, KeyID: p.KeyID, Scope: p.Scope, Context: c}
}

type conditionsKey struct{}

// conditions collects the policy condition keys of a file-API request
// (object.Actor.Context): the global ones S3 defines.
func (api *API) conditions(r *http.Request, p auth.Principal) map[string][]string {
	c := make(map[string][]string, 6)
	if ip := httpx.ClientIP(r, api.cfg.TrustedProxies); ip.IsValid() {
		c["aws:sourceip"] = []string{ip.String()}
	}
	secure := r.TLS != nil
	if _, ok := httpx.ForwardedClient(r, api.cfg.TrustedProxies); ok && !secure {
		secure = strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
	}
	c["aws:securetransport"] = []string{strconv.FormatBool(secure)}
	if ua := r.Header.Get("User-Agent"); ua != "" {
		c["aws:useragent"] = []string{ua}
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		c["aws:referer"] = []string{ref}
	}
	if p.UserID != "" {
		c["aws:userid"] = []string{p.UserID}
		c["aws:username"] = []string{p.UserID}
		c["aws:principaltype"] = []string{"User"}
	} else {
		c["aws:principaltype"] = []string{"Anonymous"}
	}
	return c
}

// jsonDecoder reads the JSON bodies of requests, bounded by
// Config.MaxJSONBody; every group of handlers that takes one embeds it.
type jsonDecoder struct{ maxBody int64 }

// decodeJSON reads a bounded JSON body into v, rejecting unknown fields and
// trailing data.
func (d jsonDecoder) decodeJSON(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return errcode.New(errcode.InvalidArgument, "Content-Type must be application/json")
	}
	body := http.MaxBytesReader(nil, r.Body, d.maxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return errcode.New(errcode.TooLarge, "JSON body exceeds %d bytes", d.maxBody)
		case errors.Is(err, io.EOF):
			return errcode.New(errcode.InvalidArgument, "JSON body is empty")
		case errcode.Of(err) != errcode.Unknown:
			// The body could not be read (the request deadline, the
			// minimum rate, a cancelled client): not the JSON's fault.
			return err
		}
		return errcode.Wrap(errcode.InvalidArgument, err, "JSON body is invalid: %v", err)
	}
	if dec.More() {
		return errcode.New(errcode.InvalidArgument, "JSON body has trailing data")
	}
	return nil
}

// ---- responses ----

type jsonResponse struct {
	status int
	body   any
	header http.Header
}

func (j jsonResponse) respond(w http.ResponseWriter, r *http.Request) {
	for k, v := range j.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(j.status)
	if r.Method != http.MethodHead && j.status != http.StatusNoContent {
		_ = json.NewEncoder(w).Encode(j.body)
	}
}

func ok(body any) response      { return jsonResponse{status: http.StatusOK, body: body} }
func created(body any) response { return jsonResponse{status: http.StatusCreated, body: body} }
func accepted(body any) response {
	return jsonResponse{status: http.StatusAccepted, body: body}
}

type noContent struct{}

// redirect answers 308 Permanent Redirect to location (the method and
// body stay as they were).
type redirect struct{ location string }

func (rd redirect) respond(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Location", rd.location)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusPermanentRedirect)
}

func (noContent) respond(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

// Classify describes r for the guards the server puts in front of every
// listener (admission class, request timeout, per-client share). Bodies
// are read at a minimum rate and requests that move no object bytes are
// bounded by the server's request timeout there, not here.
func (api *API) Classify(r *http.Request) httpx.Kind {
	k := httpx.Kind{Route: "unmatched", Credentials: r.Header.Get("Authorization") != "", Class: ratelimit.Control}
	rt, err := api.router.match(r)
	if err != nil {
		return k
	}
	k.Route, k.Streams, k.Finishes = rt.Method+" "+rt.Pattern, rt.Streams, rt.Finishes
	if rt.Access == Share {
		// Anonymous: the guard's per-address bounds apply; once the link
		// resolves, openShare charges it to the link (ratelimit.DimShare).
		k.Credentials = false
		k.Share = "share:" + object.ShareTokenHash(r.PathValue("token"))[:16]
	}
	switch {
	case !rt.Streams || r.Method == http.MethodHead:
	case r.Method == http.MethodGet:
		k.Class = ratelimit.Read
	default:
		k.Class = ratelimit.Write
	}
	return k
}

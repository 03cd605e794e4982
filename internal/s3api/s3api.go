// Package s3api is Coffer's S3-compatible API: the same buckets and
// objects as the file API, reached with SigV4 by aws cli, boto3, rclone,
// s3cmd and mc (and with SigV2, which boto3 and aws cli presign with by
// default against a custom endpoint).
//
// Requests are routed by method, bucket, key and S3's sub-resource query
// parameters (dispatch); handlers return (response, error) and one wrapper
// writes XML bodies and S3 XML errors (through s3err, the single
// translation table). Unknown or unsupported operations answer
// NotImplemented, never a wrong success; so do headers and query
// parameters an implemented operation does not honour (one table,
// unsupported.go, applied by the wrapper before the handler runs).
//
// # Request bodies
//
// Object bytes (PutObject, UploadPart) stream into the object service,
// which verifies them (signed SHA-256, aws-chunked signatures, Content-MD5,
// checksums) before it commits. XML bodies are read whole and verified by
// readXML before they are parsed, so an unverified body never has an
// effect.
//
// # Addressing
//
// Path style (http://host/bucket/key) always; virtual-host style
// (http://bucket.domain/key) when Config.Domain is set.
package s3api

import (
	"context"
	"encoding/xml"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/memo"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/ratelimit"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
)

// Config of the S3 API. New takes it as given: ConfigFrom fills it from
// config.Config (config.Defaults() for the defaults).
type Config struct {
	// Region is the region clients must sign for (--region).
	Region string
	// Domain enables virtual-host-style addressing: requests to
	// BUCKET.Domain address BUCKET (--s3-domain). Empty disables it.
	Domain string
	// PublicURL is the base URL clients reach the S3 API at
	// (--s3-public-url; empty: unset): when it is https, so are the object
	// URLs the API answers with, though a proxy in front of it speaks
	// plain HTTP to it.
	PublicURL string
	// MaxXMLBody bounds XML request bodies.
	MaxXMLBody int64
	// Now is the clock of signature checks: nil is time.Now (tests set
	// their own).
	Now func() time.Time
	// LifecycleDay is the lifecycle day x-amz-expiration is computed with
	// (0: 24 hours; shorter only in tests, --lifecycle-day).
	LifecycleDay time.Duration
	// TrustedProxies may set X-Forwarded-For and X-Forwarded-Proto
	// (aws:SourceIp, aws:SecureTransport); empty trusts nobody.
	TrustedProxies []netip.Prefix
}

// ConfigFrom returns the S3 API's configuration in c: its region, domain,
// public URL and XML body bound.
func ConfigFrom(c config.Config) Config {
	return Config{Region: c.Region, Domain: c.S3Domain, PublicURL: c.S3PublicURL, MaxXMLBody: c.MaxXMLBody, LifecycleDay: c.LifecycleDay,
		TrustedProxies: c.TrustedProxies}
}

// API is the S3 API.
type API struct {
	buckets  Buckets
	objects  Objects
	uploads  Uploads
	keys     Keys
	cfg      Config
	log      *slog.Logger
	keyCache *sigv4.KeyCache
	rules    ruleIndex // refused headers and parameters (unsupported.go)
}

// New returns the API over svc, configured by cfg as it is (see
// ConfigFrom).
func New(svc Services, cfg Config, log *slog.Logger) *API {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &API{buckets: svc.Buckets, objects: svc.Objects, uploads: svc.Uploads, keys: svc.Keys,
		cfg: cfg, log: log, keyCache: sigv4.NewKeyCache(0), rules: indexRules(rules())}
}

// request is one parsed S3 request.
type request struct {
	*http.Request
	bucket, key string
	op          string // the operation dispatch named
	actor       object.Actor
	keyID       string // the access key that signed the request, if any
	authed      bool
	pay         payload
	id          string
	vals        url.Values          // the parsed query, once: see query
	conds       map[string][]string // the condition keys, once: see describe
	// direct says the request is a presigned URL Coffer made for a
	// file-API direct upload (SigV4 query authentication with the user's
	// internal key, whose secret never leaves the server).
	direct bool
}

// query is the request's parsed query string. url.URL.Query parses it
// anew (a map and its slices) on every call, and a request asks many
// times (dispatch, authentication, policy keys, the handler). Callers
// must not modify it.
func (q *request) query() url.Values {
	if q.vals == nil {
		q.vals = parseQuery(q.URL.RawQuery)
	}
	return q.vals
}

// opHints holds the parsed form of the query strings that name only the
// operation ("x-id=GetObject": aws-sdk-go-v2 adds one to every request),
// shared by the requests that send them: they are the same on every
// request of an operation, and a parsed query is never modified (see
// query). At most maxOpHints entries: an unknown hint is parsed as any
// query once the table is full.
var opHints = memo.Map[string, url.Values]{Max: maxOpHints}

const maxOpHints = 128

// parseQuery is url.URL.Query of raw, shared for an operation hint.
func parseQuery(raw string) url.Values {
	if !isOpHint(raw) {
		v, _ := url.ParseQuery(raw)
		return v
	}
	if v, ok := opHints.Get(raw); ok {
		return v
	}
	v, _ := url.ParseQuery(raw)
	opHints.Put(raw, v)
	return v
}

// isOpHint reports whether raw is "x-id=" and an operation name (1 to 64
// ASCII letters and digits: "ListObjectsV2"): nothing to unescape, one
// parameter.
func isOpHint(raw string) bool {
	name, ok := strings.CutPrefix(raw, "x-id=")
	if !ok || name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if l := c | 0x20; (l < 'a' || l > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// handlerFunc is an operation's handler: a method expression
// ((*API).getObject), so that dispatch returns a static function and
// allocates no method value a request.
type handlerFunc func(api *API, q *request) (response, error)

type response interface {
	respond(w http.ResponseWriter, q *request)
}

// serverName is the Server header's value, shared by every response (see
// httpx.Nosniff).
var serverName = []string{"Coffer"}

// setIDHeaders sets x-amz-request-id to id, sharing the value slice of
// X-Request-Id when it holds the same ID (RequestIDMiddleware set it), and
// Server: one allocation a request fewer each.
func setIDHeaders(h http.Header, id string) {
	if v := h["X-Request-Id"]; len(v) == 1 && v[0] == id {
		h["X-Amz-Request-Id"] = v
	} else {
		h["X-Amz-Request-Id"] = []string{id}
	}
	h["Server"] = serverName
}

// Handler returns the S3 API handler. Mount it on its own listener,
// without an http.ServeMux in front (keys are not clean paths).
func (api *API) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := &request{Request: r, id: httpx.RequestID(r.Context())}
		if r.ContentLength == 0 && strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
			// net/http answers an empty body's Expect with the final status
			// and no 100 Continue, which some botocore versions (aws cli
			// 1.x, boto/botocore#3755) then misread on the reused
			// connection: give them a fresh one.
			w.Header().Set("Connection", "close")
		}
		setIDHeaders(w.Header(), q.id)
		q.bucket, q.key = api.address(r)
		op, h := api.dispatch(q)
		q.op = op
		httpx.SetRoute(r.Context(), op)
		if origin := r.Header.Get("Origin"); origin != "" && q.bucket != "" && op != preflightOp {
			api.setCORS(w, q, origin)
		}
		if h == nil {
			api.fail(w, q, s3err.New(s3err.NotImplemented, op+" is not implemented by Coffer"))
			return
		}
		if op == preflightOp {
			// A browser's preflight carries no credentials (a presigned
			// URL's query included): answered by the bucket's rules alone.
			api.serve(w, q, h)
			return
		}
		if err := api.authenticate(q); err != nil {
			api.fail(w, q, err)
			return
		}
		httpx.SetUser(r.Context(), q.actor.UserID)
		if q.actor.KeyID != "" {
			httpx.SetKey(r.Context(), q.actor.KeyID)
		}
		api.describe(q, op)
		if q.authed {
			// The per-access-key quota, charged once the signature holds.
			if err := httpx.Limit(r.Context(), ratelimit.DimKey, q.keyID); err != nil {
				api.fail(w, q, err)
				return
			}
		}
		if err := api.checkRequest(op, q); err != nil {
			api.fail(w, q, err)
			return
		}
		api.serve(w, q, h)
	})
}

// preflightOp names CORS preflights (OPTIONS on a bucket or an object).
const preflightOp = "PreflightRequest"

// serve runs h and writes its response or its error.
func (api *API) serve(w http.ResponseWriter, q *request, h handlerFunc) {
	resp, err := h(api, q)
	if err != nil {
		api.fail(w, q, err)
		return
	}
	resp.respond(w, q)
}

// streamingOps move object bytes: the server's request timeout does not
// apply to them (minimum transfer rates and the write-idle deadline bound
// them instead).
var streamingOps = map[string]ratelimit.Class{
	"GetObject": ratelimit.Read,
	"PutObject": ratelimit.Write, "UploadPart": ratelimit.Write, "PostObject": ratelimit.Write,
	"CopyObject": ratelimit.Write, "UploadPartCopy": ratelimit.Write,
}

// Classify describes r for the guards the server puts in front of every
// listener (admission class, request timeout, per-client share).
func (api *API) Classify(r *http.Request) httpx.Kind {
	q := &request{Request: r}
	q.bucket, q.key = api.address(r)
	op, _ := api.dispatch(q)
	k := httpx.Kind{Route: op, Class: ratelimit.Control,
		// A preflight is never authenticated, whatever its URL's query.
		Credentials: op != preflightOp && (r.Header.Get("Authorization") != "" || sigv4.IsPresigned(q.query()) || q.query().Has("AWSAccessKeyId"))}
	if c, ok := streamingOps[op]; ok {
		k.Class, k.Streams = c, true
	}
	// Completing a multipart upload keeps the parts already received
	// (ratelimit.Request.Finishes).
	k.Finishes = op == "CompleteMultipartUpload"
	return k
}

// WriteError writes err as an S3 XML error with a request ID: the error
// writer of the guards the server puts in front of the API (admission
// refusals, recovered panics), so every answer of the S3 listener is S3's.
func (api *API) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	q := &request{Request: r, id: httpx.RequestID(r.Context())}
	q.bucket, q.key = api.address(r)
	w.Header().Set("Server", "Coffer")
	api.fail(w, q, err)
}

func (api *API) fail(w http.ResponseWriter, q *request, err error) {
	row := s3err.Write(w, q.Request, err, q.bucket, q.key, q.id, httpx.TraceID(q.Context()))
	if row.Status >= 500 && row.Code != s3err.ServiceUnavailable && row.Code != s3err.NotImplemented && row.Code != s3err.SlowDown {
		api.log.ErrorContext(q.Context(), "s3 request failed", "request_id", q.id, "method", q.Method, "path", q.URL.Path, "err", err)
	}
}

// Bucket is the bucket r addresses (path or virtual-host style; "" for
// the service): the server's tracing names it on a request's span.
func (api *API) Bucket(r *http.Request) string {
	b, _ := api.address(r)
	return b
}

// address extracts bucket and key from the Host (virtual-host style) or
// the path (path style). The key is the decoded path after the bucket,
// verbatim (S3 keys are not paths: "a//b" and "a/../b" are keys).
func (api *API) address(r *http.Request) (bucket, key string) {
	p := strings.TrimPrefix(r.URL.Path, "/")
	if b := api.virtualHostBucket(r); b != "" {
		return b, p
	}
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key
}

// objectURL is the absolute URL of the object q addresses, as the client
// addressed it (its Host, and the path it sent: path or virtual-host
// style, escaped as it was); https when q came over TLS or the public URL
// is https.
func (api *API) objectURL(q *request) string {
	scheme := "http"
	if q.TLS != nil || strings.HasPrefix(strings.ToLower(api.cfg.PublicURL), "https://") {
		scheme = "https"
	}
	return scheme + "://" + q.Host + q.URL.EscapedPath()
}

// virtualHostBucket returns the bucket the Host header names
// (virtual-host style), or "" for path style.
func (api *API) virtualHostBucket(r *http.Request) string {
	d := api.cfg.Domain
	if d == "" {
		return ""
	}
	host := r.Host
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		host = host[:i]
	}
	if b, ok := strings.CutSuffix(strings.ToLower(host), "."+strings.ToLower(d)); ok && b != "" {
		return b
	}
	return ""
}

// subresources are query parameters that select an operation; any other
// query parameter (x-id, response-*, ...) does not change the route.
var bucketSubresources = []string{
	"accelerate", "acl", "analytics", "cors", "encryption", "intelligent-tiering", "inventory",
	"lifecycle", "logging", "metrics", "notification", "object-lock", "ownershipControls",
	"policy", "policyStatus", "publicAccessBlock", "replication", "requestPayment", "tagging",
	"versioning", "versions", "website",
}

var objectSubresources = []string{"acl", "attributes", "legal-hold", "restore", "retention", "select", "tagging", "torrent"}

func has(q *request, name string) bool {
	_, ok := q.query()[name]
	return ok
}

func firstOf(q *request, names []string) string {
	vals := q.query()
	for _, n := range names {
		if _, ok := vals[n]; ok {
			return n
		}
	}
	return ""
}

// dispatch names the operation and picks its handler (nil: not
// implemented).
func (api *API) dispatch(q *request) (string, handlerFunc) {
	m := q.Method
	switch {
	case m == http.MethodOptions && q.bucket != "":
		return preflightOp, (*API).preflight
	case q.bucket == "":
		if m == http.MethodGet {
			return "ListBuckets", (*API).listBuckets
		}
		return "UnknownServiceOperation", methodNotAllowed
	case q.key == "":
		if sub := firstOf(q, bucketSubresources); sub != "" {
			switch {
			case m == http.MethodGet && sub == "versions":
				return "ListObjectVersions", (*API).listObjectVersions
			case m == http.MethodGet && sub == "versioning":
				return "GetBucketVersioning", (*API).getBucketVersioning
			case m == http.MethodPut && sub == "versioning":
				return "PutBucketVersioning", (*API).putBucketVersioning
			}
			switch sub {
			case "tagging":
				if op, h := putGetDelete(m, "BucketTagging", (*API).putBucketTagging, (*API).getBucketTagging, (*API).deleteBucketTagging); h != nil {
					return op, h
				}
			case "lifecycle":
				if op, h := putGetDelete(m, "BucketLifecycleConfiguration", (*API).putBucketLifecycle, (*API).getBucketLifecycle, (*API).deleteBucketLifecycle); h != nil {
					if op == "DeleteBucketLifecycleConfiguration" {
						op = "DeleteBucketLifecycle" // S3's name
					}
					return op, h
				}
			case "cors":
				if op, h := putGetDelete(m, "BucketCors", (*API).putBucketCors, (*API).getBucketCors, (*API).deleteBucketCors); h != nil {
					return op, h
				}
			case "policy":
				if op, h := putGetDelete(m, "BucketPolicy", (*API).putBucketPolicy, (*API).getBucketPolicy, (*API).deleteBucketPolicy); h != nil {
					return op, h
				}
			case "publicAccessBlock":
				if op, h := putGetDelete(m, "PublicAccessBlock", (*API).putPublicAccessBlock, (*API).getPublicAccessBlock, (*API).deletePublicAccessBlock); h != nil {
					return op, h
				}
			case "policyStatus":
				if m == http.MethodGet {
					return "GetBucketPolicyStatus", (*API).getBucketPolicyStatus
				}
			case "encryption":
				if op, h := putGetDelete(m, "BucketEncryption", (*API).putBucketEncryption, (*API).getBucketEncryption, (*API).deleteBucketEncryption); h != nil {
					return op, h
				}
			case "object-lock":
				if op, h := api.lockSubresource(m, sub); h != nil {
					return op, h
				}
			case "acl":
				if op, h := putGetDelete(m, "BucketAcl", (*API).putBucketACL, (*API).getBucketACL, nil); h != nil {
					return op, h
				}
			case "ownershipControls":
				if op, h := putGetDelete(m, "BucketOwnershipControls", (*API).putBucketOwnership, (*API).getBucketOwnership, (*API).deleteBucketOwnership); h != nil {
					return op, h
				}
			}
			return strings.ToUpper(m[:1]) + strings.ToLower(m[1:]) + "Bucket?" + sub, nil
		}
		switch m {
		case http.MethodPut:
			return "CreateBucket", (*API).createBucket
		case http.MethodHead:
			return "HeadBucket", (*API).headBucket
		case http.MethodDelete:
			return "DeleteBucket", (*API).deleteBucket
		case http.MethodGet:
			switch {
			case has(q, "location"):
				return "GetBucketLocation", (*API).getBucketLocation
			case has(q, "uploads"):
				return "ListMultipartUploads", (*API).listMultipartUploads
			case q.query().Get("list-type") == "2":
				return "ListObjectsV2", (*API).listObjectsV2
			}
			return "ListObjects", (*API).listObjectsV1
		case http.MethodPost:
			if has(q, "delete") {
				return "DeleteObjects", (*API).deleteObjects
			}
			return "PostObject", (*API).postObject
		}
		return "UnknownBucketOperation", methodNotAllowed
	}
	if sub := firstOf(q, objectSubresources); sub != "" {
		if sub == "tagging" {
			if op, h := putGetDelete(m, "ObjectTagging", (*API).putObjectTagging, (*API).getObjectTagging, (*API).deleteObjectTagging); h != nil {
				return op, h
			}
		}
		if sub == "attributes" && m == http.MethodGet {
			return "GetObjectAttributes", (*API).getObjectAttributes
		}
		if sub == "acl" {
			if op, h := putGetDelete(m, "ObjectAcl", (*API).putObjectACL, (*API).getObjectACL, nil); h != nil {
				return op, h
			}
		}
		if op, h := api.lockSubresource(m, sub); h != nil {
			return op, h
		}
		return strings.ToUpper(m[:1]) + strings.ToLower(m[1:]) + "Object?" + sub, nil
	}
	switch m {
	case http.MethodPut:
		switch {
		case has(q, "partNumber") || has(q, "uploadId"):
			if q.Header.Get("X-Amz-Copy-Source") != "" {
				return "UploadPartCopy", (*API).uploadPartCopy
			}
			return "UploadPart", (*API).uploadPart
		case q.Header.Get("X-Amz-Copy-Source") != "":
			return "CopyObject", (*API).copyObject
		}
		return "PutObject", (*API).putObject
	case http.MethodGet:
		if has(q, "uploadId") {
			return "ListParts", (*API).listParts
		}
		return "GetObject", (*API).getObject
	case http.MethodHead:
		return "HeadObject", (*API).getObject
	case http.MethodDelete:
		if has(q, "uploadId") {
			return "AbortMultipartUpload", (*API).abortMultipartUpload
		}
		return "DeleteObject", (*API).deleteObject
	case http.MethodPost:
		switch {
		case has(q, "uploads"):
			return "CreateMultipartUpload", (*API).createMultipartUpload
		case has(q, "uploadId"):
			return "CompleteMultipartUpload", (*API).completeMultipartUpload
		}
		return "PostObject", nil
	}
	return "UnknownObjectOperation", methodNotAllowed
}

// putGetDelete names the Put, Get or Delete operation of a sub-resource
// (e.g. PutBucketTagging) for method m and picks its handler; nil for
// another method.
func putGetDelete(m, name string, put, get, del handlerFunc) (string, handlerFunc) {
	switch m {
	case http.MethodPut:
		return "Put" + name, put
	case http.MethodGet:
		return "Get" + name, get
	case http.MethodDelete:
		return "Delete" + name, del
	}
	return "", nil
}

func methodNotAllowed(*API, *request) (response, error) {
	return nil, s3err.New(s3err.MethodNotAllowed, "")
}

// ---- responses ----

// xmlResponse writes an XML body with status 200 (or status).
type xmlResponse struct {
	status int
	body   any
	header http.Header
}

func (x xmlResponse) respond(w http.ResponseWriter, q *request) {
	for k, v := range x.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/xml")
	st := x.status
	if st == 0 {
		st = http.StatusOK
	}
	w.WriteHeader(st)
	if q.Method == http.MethodHead {
		return
	}
	io.WriteString(w, xml.Header)
	if err := xml.NewEncoder(w).Encode(x.body); err != nil && q.Context().Err() == nil {
		slog.Default().Debug("xml encode", "err", err)
	}
}

// empty writes a status and headers without a body.
type empty struct {
	status int
	header http.Header
}

func (e empty) respond(w http.ResponseWriter, _ *request) {
	for k, v := range e.header {
		w.Header()[k] = v
	}
	if e.status == 0 {
		e.status = http.StatusOK
	}
	if e.status == http.StatusOK {
		w.Header().Set("Content-Length", "0")
	}
	w.WriteHeader(e.status)
}

func ctxOf(q *request) context.Context { return q.Context() }

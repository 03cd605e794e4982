package s3api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/object"
)

// s3Actions maps the operations whose IAM action is not "s3:" + their
// name (AWS's "Actions, resources, and condition keys for Amazon S3").
var s3Actions = map[string]string{
	"HeadBucket":                      "s3:ListBucket",
	"ListObjects":                     "s3:ListBucket",
	"ListObjectsV2":                   "s3:ListBucket",
	"ListObjectVersions":              "s3:ListBucketVersions",
	"ListMultipartUploads":            "s3:ListBucketMultipartUploads",
	"ListParts":                       "s3:ListMultipartUploadParts",
	"HeadObject":                      "s3:GetObject",
	"CopyObject":                      "s3:PutObject",
	"UploadPart":                      "s3:PutObject",
	"UploadPartCopy":                  "s3:PutObject",
	"CreateMultipartUpload":           "s3:PutObject",
	"CompleteMultipartUpload":         "s3:PutObject",
	"PostObject":                      "s3:PutObject",
	"DeleteObjects":                   "s3:DeleteObject",
	"GetBucketEncryption":             "s3:GetEncryptionConfiguration",
	"PutBucketEncryption":             "s3:PutEncryptionConfiguration",
	"DeleteBucketEncryption":          "s3:PutEncryptionConfiguration",
	"GetBucketLifecycleConfiguration": "s3:GetLifecycleConfiguration",
	"PutBucketLifecycleConfiguration": "s3:PutLifecycleConfiguration",
	"DeleteBucketLifecycle":           "s3:PutLifecycleConfiguration",
	"GetObjectLockConfiguration":      "s3:GetBucketObjectLockConfiguration",
	"PutObjectLockConfiguration":      "s3:PutBucketObjectLockConfiguration",
	"DeleteBucketTagging":             "s3:PutBucketTagging",
	"GetBucketCors":                   "s3:GetBucketCORS",
	"PutBucketCors":                   "s3:PutBucketCORS",
	"DeleteBucketCors":                "s3:PutBucketCORS",
	"GetBucketOwnershipControls":      "s3:GetBucketOwnershipControls",
	"PutBucketOwnershipControls":      "s3:PutBucketOwnershipControls",
	"DeleteBucketOwnershipControls":   "s3:PutBucketOwnershipControls",
	"GetPublicAccessBlock":            "s3:GetBucketPublicAccessBlock",
	"PutPublicAccessBlock":            "s3:PutBucketPublicAccessBlock",
	"DeletePublicAccessBlock":         "s3:PutBucketPublicAccessBlock",
	"ListBuckets":                     "s3:ListAllMyBuckets",
}

// s3Action is the IAM action of operation op in request q.
func s3Action(op string, q *request) string {
	a, ok := s3Actions[op]
	if !ok {
		a = "s3:" + op
	}
	return object.VersionedAction(a, q.query().Get("versionId"))
}

// describe names the request's action for the object service and
// how to collect the condition keys policies may test (object.Actor.Describe,
// built once, on first use: most requests are decided without them).
func (api *API) describe(q *request, op string) {
	q.actor.Op = s3Action(op, q)
	q.actor.KeyID = q.keyID
	q.actor.Context = nil
	q.actor.Describe = func() map[string][]string {
		if q.conds == nil { // a request's handler runs on one goroutine
			q.conds = api.conditions(q)
		}
		return q.conds
	}
}

// conditions builds the condition keys of q: the global ones, the
// listing parameters and every x-amz-* header.
func (api *API) conditions(q *request) map[string][]string {
	r := q.Request
	c := make(map[string][]string, 12)
	if ip := httpx.ClientIP(r, api.cfg.TrustedProxies); ip.IsValid() {
		c["aws:sourceip"] = []string{ip.String()}
	}
	c["aws:securetransport"] = []string{boolString(api.secure(r))}
	if ua := r.Header.Get("User-Agent"); ua != "" {
		c["aws:useragent"] = []string{ua}
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		c["aws:referer"] = []string{ref}
	}
	if q.actor.UserID != "" {
		c["aws:userid"] = []string{q.actor.UserID}
		c["aws:username"] = []string{q.actor.UserID}
		c["aws:principaltype"] = []string{"User"}
	} else {
		c["aws:principaltype"] = []string{"Anonymous"}
	}
	switch {
	case !q.authed:
	case strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-"), q.query().Has("X-Amz-Algorithm"):
		c["s3:signatureversion"] = []string{"AWS4-HMAC-SHA256"}
	default:
		c["s3:signatureversion"] = []string{"AWS"}
	}
	switch {
	case !q.authed:
	case r.Header.Get("Authorization") != "":
		c["s3:authtype"] = []string{"REST-HEADER"}
	default:
		c["s3:authtype"] = []string{"REST-QUERY-STRING"}
	}
	query := q.query()
	if q.actor.Op == "s3:ListBucket" || q.actor.Op == "s3:ListBucketVersions" {
		for _, k := range []string{"prefix", "delimiter", "max-keys"} {
			if query.Has(k) {
				c["s3:"+k] = []string{query.Get(k)}
			}
		}
	}
	if v := query.Get("versionId"); v != "" {
		c["s3:versionid"] = []string{v}
	}
	for k, vs := range r.Header {
		if len(k) < 6 || !strings.EqualFold(k[:6], "x-amz-") {
			continue // lowered only if it is one (an allocation per header otherwise)
		}
		lk := strings.ToLower(k)
		if lk != "x-amz-date" && lk != "x-amz-security-token" &&
			!strings.HasPrefix(lk, "x-amz-server-side-encryption-customer-key") {
			c["s3:"+lk] = vs
		}
	}
	if t := r.Header.Get("X-Amz-Tagging"); t != "" {
		if tags, err := url.ParseQuery(t); err == nil {
			keys := make([]string, 0, len(tags))
			for k, v := range tags {
				c["s3:requestobjecttag/"+strings.ToLower(k)] = v
				keys = append(keys, k)
			}
			c["s3:requestobjecttagkeys"] = keys
		}
	}
	return c
}

// secure reports whether r reached Coffer over TLS (or, through a trusted
// proxy, that the client spoke TLS to the proxy).
func (api *API) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if _, ok := httpx.ForwardedClient(r, api.cfg.TrustedProxies); ok {
		return strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
	}
	return false
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

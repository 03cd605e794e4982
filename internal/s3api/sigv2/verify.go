package sigv2

import (
	"crypto/subtle"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// Lookup returns the secret of an access key. It must return an error with
// code errcode.NotFound for an unknown key (Verify turns it into
// ErrInvalidAccessKeyID); any other error is returned by Verify unchanged.
// It is the same contract as sigv4.Lookup.
type Lookup func(accessKeyID string) (secret string, err error)

// Defaults of Options.
const (
	DefaultMaxSkew   = 15 * time.Minute
	DefaultMaxExpiry = 7 * 24 * time.Hour
)

// UnsignedPayload is the x-amz-content-sha256 value of a body that is not
// covered.
const UnsignedPayload = "UNSIGNED-PAYLOAD"

// Options configure Verify. The zero value is usable.
type Options struct {
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// MaxSkew bounds |request time - now| for header authentication.
	// Default 15m.
	MaxSkew time.Duration
	// MaxExpiry bounds how far ahead of now a presigned URL's Expires may
	// be (plus MaxSkew, for clients whose clock is ahead). Default seven
	// days, the longest SigV4 presigned URL.
	MaxExpiry time.Duration
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxSkew <= 0 {
		o.MaxSkew = DefaultMaxSkew
	}
	if o.MaxExpiry <= 0 {
		o.MaxExpiry = DefaultMaxExpiry
	}
	return o
}

// Result describes a verified request.
type Result struct {
	AccessKeyID string
	// Presigned is true for query authentication, false for the
	// Authorization header.
	Presigned bool
	// Time is the request time (x-amz-date or Date) of header
	// authentication; zero for presigned URLs.
	Time time.Time
	// Expires is when a presigned URL stops being valid; zero for header
	// authentication.
	Expires time.Time
	// PayloadSHA256 is the hex SHA-256 the client declared in a (signed)
	// x-amz-content-sha256, or "" (absent or UNSIGNED-PAYLOAD). SigV2 does
	// not sign bodies: the caller must check the body against it.
	PayloadSHA256 string
	// QueryHeaders are the Content-Type, Content-MD5 and x-amz-* values a
	// presigned URL carries as query parameters (as botocore writes them)
	// for headers the request did not send. The signature covers them: the
	// caller must act on them as request headers (add them to the request
	// before anything reads its headers). Nil for header authentication.
	QueryHeaders http.Header
}

// Verify authenticates req, signed either with the Authorization header
// ("AWS AccessKeyId:Signature") or as a presigned URL (AWSAccessKeyId,
// Signature, Expires). vhostBucket is the bucket named by the Host header
// of a virtual-host-style request ("" for path style): it is signed as the
// first segment of the CanonicalizedResource, and must be the bucket the
// caller will act on. Verify does not read the body.
//
// Verify checks, in order: that one mechanism is used, the form of the
// credentials, session tokens (refused), the request time (Date or
// x-amz-date within MaxSkew for header authentication; Expires not passed
// and at most MaxExpiry ahead for presigned URLs), x-amz-content-sha256,
// the access key (lookup) and the signature (in constant time). A request
// without credentials fails with ErrMissingAuth.
//
// Verify reads req.Method, req.RequestURI (or req.URL.EscapedPath() for
// client-side requests), req.URL.RawQuery and req.Header as received: call
// it before anything rewrites them.
func Verify(req *http.Request, vhostBucket string, lookup Lookup, opts Options) (Result, error) {
	if req == nil || req.URL == nil {
		return Result{}, newError(ErrMissingAuth, "Access Denied.")
	}
	opts = opts.withDefaults()
	authz := req.Header.Values("Authorization")
	query := req.URL.Query()
	v2q := IsPresigned(query)
	v4q := query.Has("X-Amz-Algorithm") || query.Has("X-Amz-Credential") || query.Has("X-Amz-Signature")
	switch {
	case len(authz) > 0 && (v2q || v4q), v2q && v4q:
		return Result{}, newError(ErrConflictingAuth, "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified")
	case len(authz) > 1:
		return Result{}, newError(ErrMalformedHeader, malformedHeader)
	case len(authz) == 1:
		return verifyHeader(req, authz[0], vhostBucket, lookup, &opts)
	case v2q:
		return verifyPresigned(req, vhostBucket, lookup, &opts)
	}
	return Result{}, newError(ErrMissingAuth, "Access Denied.")
}

func verifyHeader(req *http.Request, authz, vhostBucket string, lookup Lookup, opts *Options) (Result, error) {
	a, err := ParseAuthorization(authz)
	if err != nil {
		return Result{}, err
	}
	if tok, ok := headerValue(req.Header, "X-Amz-Security-Token"); ok && tok != "" {
		return Result{}, newError(ErrUnsupportedAuth, "Session tokens (x-amz-security-token) are not supported.")
	}
	date, hasDate := headerValue(req.Header, "Date")
	amzDate, hasAmzDate := headerValue(req.Header, "X-Amz-Date")
	var t time.Time
	var ok bool
	switch {
	case hasAmzDate:
		t, ok = parseTime(amzDate)
	case hasDate:
		t, ok = parseTime(date)
	}
	if !ok {
		return Result{}, newError(ErrMissingDate, "AWS authentication requires a valid Date or x-amz-date header")
	}
	now := opts.Now()
	if skew := now.Sub(t); skew > opts.MaxSkew || skew < -opts.MaxSkew {
		e := newError(ErrRequestTimeTooSkewed, "The difference between the request time and the current time is too large.")
		with(e, "request_time", t.Format(http.TimeFormat))
		with(e, "server_time", now.UTC().Format(http.TimeFormat))
		return Result{}, with(e, "max_allowed_skew_ms", opts.MaxSkew.Milliseconds())
	}
	amz := amzHeaders(req.Header, "")
	payload, err := payloadSHA256(amz)
	if err != nil {
		return Result{}, err
	}
	md5, _ := headerValue(req.Header, "Content-Md5")
	ctype, _ := headerValue(req.Header, "Content-Type")
	base := stringToSign{Method: req.Method, ContentMD5: md5, ContentType: ctype, Date: date, Amz: amz}
	tries := []stringToSign{base}
	if hasAmzDate {
		// As documented: x-amz-date is signed among the x-amz-* headers
		// and the Date line is empty.
		tries[0].Date = ""
		if hasDate {
			// botocore's HmacV1Auth (and MinIO) sign the Date header even
			// when x-amz-date is present.
			tries = append(tries, base)
		}
		// The documentation's DELETE example signs x-amz-date's value in
		// the Date line and leaves it out of the x-amz-* headers.
		alt := base
		alt.Date, alt.Amz = amzDate, without(amz, "x-amz-date")
		tries = append(tries, alt)
	}
	res := Result{Time: t, PayloadSHA256: payload}
	return finish(req, a, vhostBucket, tries, res, lookup)
}

func verifyPresigned(req *http.Request, vhostBucket string, lookup Lookup, opts *Options) (Result, error) {
	query := req.URL.Query()
	p, err := ParsePresigned(query)
	if err != nil {
		return Result{}, err
	}
	if tok, ok := headerValue(req.Header, "X-Amz-Security-Token"); ok && tok != "" {
		return Result{}, newError(ErrUnsupportedAuth, "Session tokens (x-amz-security-token) are not supported.")
	}
	now := opts.Now()
	if now.After(p.Expires) {
		e := newError(ErrRequestExpired, "Request has expired")
		with(e, "expires", p.Expires.Format(http.TimeFormat))
		return Result{}, with(e, "server_time", now.UTC().Format(http.TimeFormat))
	}
	if p.Expires.Sub(now) > opts.MaxExpiry+opts.MaxSkew {
		return Result{}, with(newError(ErrExpiresTooFar, "Request expiry is more than %d seconds in the future; presigned URLs are valid for at most %d seconds.", int64(opts.MaxExpiry/time.Second), int64(opts.MaxExpiry/time.Second)), "expires", p.Expires.Format(http.TimeFormat))
	}

	// The query authentication documentation leaves x-amz-date out; a
	// Content-Type, Content-MD5 or x-amz-* header the request does not
	// send may come as a query parameter (botocore moves them there).
	amz := amzHeaders(req.Header, "x-amz-date")
	md5, hasMD5 := headerValue(req.Header, "Content-Md5")
	ctype, hasType := headerValue(req.Header, "Content-Type")
	var hoisted http.Header
	var fromQuery []header
	for _, k := range slices.Sorted(maps.Keys(query)) {
		vs, name := query[k], strings.ToLower(k)
		switch {
		case name == "x-amz-security-token" && joinValues(vs) != "":
			return Result{}, newError(ErrUnsupportedAuth, "Session tokens (x-amz-security-token) are not supported.")
		case name == "content-md5" && !hasMD5, name == "content-type" && !hasType:
		case strings.HasPrefix(name, "x-amz-") && name != "x-amz-date" && !hasHeader(amz, name):
			fromQuery = addHeader(fromQuery, name, vs)
		default:
			continue
		}
		if hoisted == nil {
			hoisted = http.Header{}
		}
		ck := http.CanonicalHeaderKey(name)
		hoisted[ck] = append(hoisted[ck], vs...)
	}
	if vs, ok := hoisted["Content-Md5"]; ok {
		md5 = joinValues(vs)
	}
	if vs, ok := hoisted["Content-Type"]; ok {
		ctype = joinValues(vs)
	}
	if len(fromQuery) > 0 {
		amz = append(amz, fromQuery...)
		sortHeaders(amz)
	}
	payload, err := payloadSHA256(amz)
	if err != nil {
		return Result{}, err
	}
	tries := []stringToSign{{Method: req.Method, ContentMD5: md5, ContentType: ctype, Date: p.ExpiresRaw, Amz: amz}}
	res := Result{Presigned: true, Expires: p.Expires, PayloadSHA256: payload, QueryHeaders: hoisted}
	return finish(req, p.Authorization, vhostBucket, tries, res, lookup)
}

// finish looks the secret up and checks the signature against each
// candidate string to sign (the documented one first), with the resource
// filled in. Only the documented candidate is reported on mismatch.
func finish(req *http.Request, a Authorization, vhostBucket string, tries []stringToSign, res Result, lookup Lookup) (Result, error) {
	secret, err := secretOf(lookup, a.AccessKeyID)
	if err != nil {
		return Result{}, err
	}
	// The resource: as documented, then the variants clients sign.
	path := requestPath(req)
	paths := []string{path}
	if vhostBucket == "" && len(path) > 1 && strings.IndexByte(path[1:], '/') < 0 {
		// botocore signs a bucket-level path-style request ("/b") as "/b/".
		paths = append(paths, path+"/")
	}
	var resources []string
	for _, p := range paths {
		r, hasEmpty := canonicalResource(p, vhostBucket, req.URL.RawQuery, false)
		resources = append(resources, r)
		if hasEmpty {
			r, _ = canonicalResource(p, vhostBucket, req.URL.RawQuery, true)
			resources = append(resources, r)
		}
	}
	all := make([]stringToSign, 0, len(tries)*len(resources))
	for _, r := range resources {
		for _, s := range tries {
			s.Resource = r
			all = append(all, s)
		}
	}
	tries = all
	var buf []byte
	matched := false
	for i := range tries {
		buf = tries[i].append(buf[:0])
		if subtle.ConstantTimeCompare([]byte(Sign(secret, buf)), []byte(a.Signature)) == 1 {
			matched = true
			break
		}
	}
	if !matched {
		e := newError(ErrSignatureDoesNotMatch, "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
		with(e, "access_key_id", a.AccessKeyID)
		with(e, "signature_provided", a.Signature)
		return Result{}, with(e, "string_to_sign", tries[0].String())
	}
	res.AccessKeyID = a.AccessKeyID
	return res, nil
}

// payloadSHA256 checks a signed x-amz-content-sha256: absent or
// UNSIGNED-PAYLOAD ("") or a hex SHA-256 (returned).
func payloadSHA256(amz []header) (string, error) {
	for _, h := range amz {
		if h.name != "x-amz-content-sha256" {
			continue
		}
		if h.value == UnsignedPayload {
			return "", nil
		}
		if isHexSHA256(h.value) {
			return h.value, nil
		}
		return "", newError(ErrInvalidArgument, "x-amz-content-sha256 must be UNSIGNED-PAYLOAD or a hex SHA-256 with Signature Version 2; aws-chunked (STREAMING-*) bodies need Signature Version 4.")
	}
	return "", nil
}

func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if _, ok := unhex(s[i]); !ok {
			return false
		}
	}
	return true
}

func hasHeader(hs []header, name string) bool {
	for _, h := range hs {
		if h.name == name {
			return true
		}
	}
	return false
}

func without(hs []header, name string) []header {
	out := make([]header, 0, len(hs))
	for _, h := range hs {
		if h.name != name {
			out = append(out, h)
		}
	}
	return out
}

// parseTime parses a Date or x-amz-date value: the HTTP formats (RFC 1123
// with GMT, RFC 850, ANSI C), RFC 1123 with a numeric zone (as in the AWS
// examples, "+0000") and ISO 8601 basic (20130524T000000Z).
func parseTime(s string) (time.Time, bool) {
	if t, err := http.ParseTime(s); err == nil {
		return t.UTC(), true
	}
	for _, layout := range [...]string{time.RFC1123Z, "20060102T150405Z"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// secretOf looks the secret of id up: ErrInvalidAccessKeyID for a key the
// lookup does not know.
func secretOf(lookup Lookup, id string) (string, error) {
	return s3err.Secret(lookup, id, ErrInvalidAccessKeyID)
}

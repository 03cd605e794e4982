package sigv4

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// PayloadMode says how the body of a verified request is protected, from
// its x-amz-content-sha256 (header authentication) or X-Amz-Content-Sha256
// (presigned URLs, UNSIGNED-PAYLOAD when absent).
type PayloadMode int

const (
	// PayloadSHA256: the body's hex SHA-256 was signed (Result.PayloadHash).
	// The caller must hash the body and fail with ErrContentSHA256Mismatch
	// at EOF if it differs; NewPayloadReader does.
	PayloadSHA256 PayloadMode = iota
	// PayloadUnsigned: UNSIGNED-PAYLOAD; the body is not covered.
	PayloadUnsigned
	// PayloadStreaming: STREAMING-AWS4-HMAC-SHA256-PAYLOAD; the body is
	// aws-chunked with a signature per chunk (NewChunkedReader).
	PayloadStreaming
	// PayloadStreamingTrailer: STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER;
	// as PayloadStreaming plus a signed trailing checksum.
	PayloadStreamingTrailer
	// PayloadStreamingUnsignedTrailer: STREAMING-UNSIGNED-PAYLOAD-TRAILER;
	// aws-chunked without chunk signatures, with a trailing checksum
	// (NewUnsignedTrailerReader).
	PayloadStreamingUnsignedTrailer
)

func (m PayloadMode) String() string {
	switch m {
	case PayloadSHA256:
		return "sha256"
	case PayloadUnsigned:
		return UnsignedPayload
	case PayloadStreaming:
		return StreamingPayload
	case PayloadStreamingTrailer:
		return StreamingPayloadTrailer
	case PayloadStreamingUnsignedTrailer:
		return StreamingUnsignedPayloadTrailer
	}
	return "unknown"
}

// Chunked reports whether the body is aws-chunked.
func (m PayloadMode) Chunked() bool { return m >= PayloadStreaming }

// Lookup returns the secret of an access key. It must return an error with
// code errcode.NotFound for an unknown key (Verify turns it into
// ErrInvalidAccessKeyID); any other error is returned by Verify unchanged.
type Lookup func(accessKeyID string) (secret string, err error)

// Defaults of Options.
const (
	DefaultRegion  = "us-east-1"
	DefaultService = "s3"
	DefaultMaxSkew = 15 * time.Minute
)

// Options configure Verify. The zero value is usable.
type Options struct {
	// Region is the only region accepted in the credential scope.
	// Default "us-east-1".
	Region string
	// Service is the only service accepted in the credential scope.
	// Default "s3".
	Service string
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// MaxSkew bounds |request time - now| for header authentication and
	// how far in the future a presigned X-Amz-Date may be. Default 15m.
	MaxSkew time.Duration
	// Keys caches derived signing keys. Optional: nil derives every time.
	Keys *KeyCache
	// AllowUnsignedAmzHeaders accepts x-amz-* headers that are not signed.
	// Default false: such requests fail with ErrHeadersNotSigned, as on
	// AWS, so that nobody can add x-amz-meta-* (or other x-amz-*) headers
	// to a signed request.
	AllowUnsignedAmzHeaders bool
}

func (o Options) withDefaults() Options {
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.Service == "" {
		o.Service = DefaultService
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxSkew <= 0 {
		o.MaxSkew = DefaultMaxSkew
	}
	return o
}

// Result describes a verified request.
type Result struct {
	AccessKeyID string
	// Presigned is true for query authentication, false for the
	// Authorization header.
	Presigned bool
	Payload   PayloadMode
	// PayloadHash is the signed payload hash: the hex SHA-256 (PayloadSHA256)
	// or the literal x-amz-content-sha256 value.
	PayloadHash string
	// Signature is the verified request signature: the seed signature of
	// aws-chunked bodies.
	Signature string
	// SigningKey, Scope and AmzDate are what chunk and trailer signatures
	// are computed with. SigningKey is secret material: never log it.
	SigningKey []byte
	Scope      string    // "20130524/us-east-1/s3/aws4_request"
	AmzDate    string    // request time, ISO 8601 basic ("20130524T000000Z")
	Time       time.Time // request time
	// Expires is when a presigned URL stops being valid (zero for header
	// authentication).
	Expires       time.Time
	SignedHeaders []string // read-only (shared by the requests that list the same headers)
}

// Verify authenticates req, signed either with the Authorization header or
// as a presigned URL, and returns who signed it and how its body is
// protected. It does not read the body: wrap it with NewPayloadReader (or
// the reader for Result.Payload) and treat any read error as fatal.
//
// Verify checks, in order: the form of the credentials, the scope (region,
// service, date), host being signed, the request time (skew for header
// authentication, expiry for presigned URLs), unsigned x-amz-* headers,
// the access key (lookup) and the signature (in constant time). A request
// without any credentials fails with ErrMissingAuth.
//
// Verify reads req.Method, req.URL (EscapedPath and RawQuery), req.Host,
// req.ContentLength and req.Header as received: call it before anything
// rewrites them (routing that strips a prefix, for example).
func Verify(req *http.Request, lookup Lookup, opts Options) (Result, error) {
	if req == nil || req.URL == nil {
		return Result{}, newError(ErrMissingAuth, "Access Denied.")
	}
	opts = opts.withDefaults()
	authz, hasAuthz := lookupHeader(req.Header, "authorization")
	raw := req.URL.RawQuery
	presigned := queryHas(raw, "X-Amz-Algorithm") || queryHas(raw, "X-Amz-Credential") || queryHas(raw, "X-Amz-Signature")
	switch {
	case hasAuthz && presigned:
		return Result{}, newError(ErrUnsupportedAuth, "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified.")
	case hasAuthz:
		if len(authz) != 1 {
			return Result{}, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; it appears more than once.")
		}
		return verifyHeader(req, authz[0], lookup, &opts)
	case presigned:
		return verifyPresigned(req, req.URL.Query(), lookup, &opts)
	case queryHas(raw, "AWSAccessKeyId") && queryHas(raw, "Signature"):
		return Result{}, newError(ErrUnsupportedAuth, "The authorization mechanism you have provided is not supported. Please use %s.", Algorithm)
	}
	return Result{}, newError(ErrMissingAuth, "Access Denied.")
}

// queryHas reports whether the raw query has a parameter named key,
// without parsing the whole query.
func queryHas(rawQuery, key string) bool {
	for rawQuery != "" {
		var seg string
		seg, rawQuery, _ = strings.Cut(rawQuery, "&")
		k, _, _ := strings.Cut(seg, "=")
		if k == key || strings.ContainsAny(k, "%+") && queryUnescape(k) == key {
			return true
		}
	}
	return false
}

func verifyHeader(req *http.Request, header string, lookup Lookup, opts *Options) (Result, error) {
	a, err := ParseAuthorization(header)
	if err != nil {
		return Result{}, err
	}
	if err := checkScope(a, opts, ErrAuthorizationHeaderMalformed, "The authorization header is malformed; "); err != nil {
		return Result{}, err
	}
	if !a.signs("host") {
		return Result{}, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; SignedHeaders must include host.")
	}
	if tok, _ := lookupHeader(req.Header, "x-amz-security-token"); len(tok) > 0 && tok[0] != "" {
		return Result{}, newError(ErrUnsupportedAuth, "Session tokens (x-amz-security-token) are not supported.")
	}
	hashes, _ := lookupHeader(req.Header, "x-amz-content-sha256")
	if len(hashes) == 0 {
		return Result{}, newError(ErrMissingSecurityHeader, "Missing required header for this request: x-amz-content-sha256.")
	}
	if len(hashes) > 1 {
		return Result{}, newError(ErrInvalidArgument, "x-amz-content-sha256 appears more than once.")
	}
	mode, err := payloadMode(hashes[0])
	if err != nil {
		return Result{}, err
	}

	// The request time: X-Amz-Date, else Date.
	var t time.Time
	var amzDate string
	if v, ok := lookupHeader(req.Header, "x-amz-date"); ok {
		var valid bool
		if t, valid = parseAmzDate(v[0]); !valid || len(v) > 1 {
			return Result{}, newError(ErrMissingDate, `X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd'T'HHmmss'Z'".`)
		}
		amzDate = v[0]
	} else if v, ok := lookupHeader(req.Header, "date"); ok && len(v) == 1 {
		if t, err = http.ParseTime(v[0]); err != nil {
			return Result{}, newError(ErrMissingDate, "AWS authentication requires a valid Date or x-amz-date header.")
		}
		t = t.UTC()
		amzDate = t.Format(amzDateLayout)
	} else {
		return Result{}, newError(ErrMissingDate, "AWS authentication requires a valid Date or x-amz-date header.")
	}
	if d := amzDate[:8]; d != a.Date {
		return Result{}, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; Invalid credential date %q. This date is not the same as X-Amz-Date: %q.", a.Date, d)
	}
	now := opts.Now()
	if skew := now.Sub(t); skew > opts.MaxSkew || skew < -opts.MaxSkew {
		e := newError(ErrRequestTimeTooSkewed, "The difference between the request time and the current time is too large.")
		with(e, "request_time", t.Format(amzDateLayout))
		with(e, "server_time", now.UTC().Format(amzDateLayout))
		return Result{}, with(e, "max_allowed_skew_ms", opts.MaxSkew.Milliseconds())
	}
	if err := checkUnsignedHeaders(req, a, false, opts); err != nil {
		return Result{}, err
	}
	res := Result{
		Payload:     mode,
		PayloadHash: hashes[0],
		AmzDate:     amzDate,
		Time:        t,
	}
	return finish(req, a, res, lookup, opts)
}

func verifyPresigned(req *http.Request, query url.Values, lookup Lookup, opts *Options) (Result, error) {
	p, err := ParsePresigned(query)
	if err != nil {
		return Result{}, err
	}
	if err := checkScope(p.Authorization, opts, ErrAuthorizationQueryParameters, "Error parsing the X-Amz-Credential parameter; "); err != nil {
		return Result{}, err
	}
	if !p.signs("host") {
		return Result{}, newError(ErrAuthorizationQueryParameters, "X-Amz-SignedHeaders must include host.")
	}
	if d := p.AmzDate[:8]; d != p.Date {
		return Result{}, newError(ErrAuthorizationQueryParameters, "Invalid credential date %q. This date is not the same as X-Amz-Date: %q.", p.Date, d)
	}
	now := opts.Now()
	if p.Time.Sub(now) > opts.MaxSkew {
		return Result{}, with(newError(ErrRequestNotYetValid, "Request is not valid yet."), "server_time", now.UTC().Format(amzDateLayout))
	}
	expires := p.Time.Add(p.Expires)
	if now.After(expires) {
		e := newError(ErrRequestExpired, "Request has expired.")
		with(e, "x_amz_expires", int64(p.Expires/time.Second))
		with(e, "expires", expires.Format(amzDateLayout))
		return Result{}, with(e, "server_time", now.UTC().Format(amzDateLayout))
	}
	if err := checkUnsignedHeaders(req, p.Authorization, true, opts); err != nil {
		return Result{}, err
	}
	mode := PayloadUnsigned
	if p.PayloadHash != UnsignedPayload {
		mode = PayloadSHA256
	}
	res := Result{
		Presigned:   true,
		Payload:     mode,
		PayloadHash: p.PayloadHash,
		AmzDate:     p.AmzDate,
		Time:        p.Time,
		Expires:     expires,
	}
	return finish(req, p.Authorization, res, lookup, opts)
}

// checkScope checks the region and service of the credential scope.
func checkScope(a Authorization, opts *Options, k error, prefix string) error {
	if a.Region != opts.Region {
		return with(newError(k, "%sthe region %q is wrong; expecting %q", prefix, clip(a.Region), opts.Region), "region", opts.Region)
	}
	if a.Service != opts.Service {
		return newError(k, "%sincorrect service %q. This endpoint belongs to %q.", prefix, clip(a.Service), opts.Service)
	}
	return nil
}

// checkUnsignedHeaders refuses x-amz-* headers left out of the signature.
// x-amz-content-sha256 is exempt for presigned URLs, where the payload hash
// comes from the query.
func checkUnsignedHeaders(req *http.Request, a Authorization, presigned bool, opts *Options) error {
	if opts.AllowUnsignedAmzHeaders {
		return nil
	}
	var unsigned []string
	for k := range req.Header {
		if len(k) < 6 || !strings.EqualFold(k[:6], "x-amz-") {
			continue
		}
		if presigned && strings.EqualFold(k, "x-amz-content-sha256") {
			continue
		}
		signed := false
		for _, h := range a.SignedHeaders {
			if strings.EqualFold(h, k) {
				signed = true
				break
			}
		}
		if !signed {
			unsigned = append(unsigned, strings.ToLower(clip(k)))
		}
	}
	if unsigned == nil {
		return nil
	}
	// S3 names them all, sorted, in HeadersNotSigned.
	slices.Sort(unsigned)
	return with(newError(ErrHeadersNotSigned, "There were headers present in the request which were not signed"), "headers_not_signed", strings.Join(unsigned, ", "))
}

// finish looks the secret up and checks the signature.
func finish(req *http.Request, a Authorization, res Result, lookup Lookup, opts *Options) (Result, error) {
	secret, err := secretOf(lookup, a.AccessKeyID)
	if err != nil {
		return Result{}, err
	}
	key := opts.Keys.signingKey(secret, a.Date, a.Region, a.Service)
	scope := a.Scope()
	in := canonicalInput{
		method:      req.Method,
		escapedPath: req.URL.EscapedPath(),
		params:      canonicalParams(req.URL.RawQuery, res.Presigned),
		req:         req,
		signed:      a.SignedHeaders,
		payloadHash: res.PayloadHash,
	}
	// The canonical request stays on the stack; only the short string to
	// sign goes to the (escaping) HMAC.
	var stack [1024]byte
	canon, missing := appendCanonicalRequest(stack[:0], &in)
	if missing != "" {
		return Result{}, with(newError(ErrSignatureDoesNotMatch, "The request signature we calculated does not match the signature you provided: the signed header %q is not in the request.", clip(missing)), "access_key_id", a.AccessKeyID)
	}
	sts := appendStringToSign(make([]byte, 0, 128+len(scope)), res.AmzDate, scope, canon)
	sig := signature(key[:], sts)
	if subtle.ConstantTimeCompare(sig[:], []byte(a.Signature)) != 1 {
		e := newError(ErrSignatureDoesNotMatch, "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
		with(e, "access_key_id", a.AccessKeyID)
		with(e, "signature_provided", a.Signature)
		with(e, "string_to_sign", string(sts))
		return Result{}, with(e, "canonical_request", string(canon))
	}
	res.AccessKeyID = a.AccessKeyID
	res.Signature = a.Signature
	res.SigningKey = key[:]
	res.Scope = scope
	res.SignedHeaders = a.SignedHeaders
	return res, nil
}

// payloadMode classifies an x-amz-content-sha256 value.
func payloadMode(v string) (PayloadMode, error) {
	switch v {
	case UnsignedPayload:
		return PayloadUnsigned, nil
	case StreamingPayload:
		return PayloadStreaming, nil
	case StreamingPayloadTrailer:
		return PayloadStreamingTrailer, nil
	case StreamingUnsignedPayloadTrailer:
		return PayloadStreamingUnsignedTrailer, nil
	}
	if isHexSHA256(v) {
		return PayloadSHA256, nil
	}
	if strings.HasPrefix(v, "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD") {
		return 0, newError(ErrUnsupportedAuth, "SigV4a streaming payloads (%s) are not supported.", clip(v))
	}
	return 0, newError(ErrInvalidArgument, "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, STREAMING-UNSIGNED-PAYLOAD-TRAILER or a valid sha256 value.")
}

// secretOf looks the secret of id up: ErrInvalidAccessKeyID for a key the
// lookup does not know.
func secretOf(lookup Lookup, id string) (string, error) {
	return s3err.Secret(lookup, id, ErrInvalidAccessKeyID)
}

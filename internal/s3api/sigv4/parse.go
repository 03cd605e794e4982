package sigv4

import (
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/memo"
)

// MaxPresignExpiry is the longest X-Amz-Expires S3 accepts: seven days.
const MaxPresignExpiry = 7 * 24 * time.Hour

// Authorization is a parsed SigV4 credential: the Authorization header, or
// the X-Amz-* parameters of a presigned URL.
type Authorization struct {
	AccessKeyID   string
	Date          string   // credential scope date, yyyymmdd
	Region        string   // credential scope region
	Service       string   // credential scope service ("s3")
	SignedHeaders []string // lower-case, in the order the client listed them; read-only (shared)
	Signature     string   // 64 lower-case hex digits
}

// Scope returns the credential scope "date/region/service/aws4_request".
func (a Authorization) Scope() string { return Scope(a.Date, a.Region, a.Service) }

// String formats a as an Authorization header value.
func (a Authorization) String() string {
	return Algorithm + " Credential=" + a.AccessKeyID + "/" + a.Scope() +
		", SignedHeaders=" + strings.Join(a.SignedHeaders, ";") +
		", Signature=" + a.Signature
}

// ParseAuthorization parses an Authorization header of the form
//
//	AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-date, Signature=<64 hex>
//
// Spaces around the components and after the commas are optional, and the
// components may come in any order. Errors are ErrAuthorizationHeaderMalformed,
// or ErrUnsupportedAuth for SigV2 and SigV4a.
func ParseAuthorization(header string) (Authorization, error) {
	var a Authorization
	h := strings.TrimSpace(header)
	alg, rest, _ := strings.Cut(h, " ")
	switch {
	case alg == Algorithm:
	case alg == "AWS":
		return a, newError(ErrUnsupportedAuth, "The authorization mechanism you have provided is not supported. Please use %s.", Algorithm)
	case alg == "AWS4-ECDSA-P256-SHA256":
		return a, newError(ErrUnsupportedAuth, "SigV4a (AWS4-ECDSA-P256-SHA256) is not supported. Please use %s.", Algorithm)
	case alg == "":
		return a, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; it is empty.")
	default:
		return a, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; unsupported algorithm %q, expecting %q.", clip(alg), Algorithm)
	}
	var cred, signed, sig string
	var haveCred, haveSigned, haveSig bool
	for part := range strings.SplitSeq(rest, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return a, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; the component %q is not of the form key=value.", clip(part))
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		var have *bool
		switch k {
		case "Credential":
			cred, have = v, &haveCred
		case "SignedHeaders":
			signed, have = v, &haveSigned
		case "Signature":
			sig, have = v, &haveSig
		default:
			return a, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; unknown component %q.", clip(k))
		}
		if *have {
			return a, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; %s appears twice.", k)
		}
		*have = true
	}
	switch {
	case !haveCred:
		return a, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; missing Credential.")
	case !haveSigned:
		return a, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; missing SignedHeaders.")
	case !haveSig:
		return a, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; missing Signature.")
	}
	if msg := a.parseCredential(cred); msg != "" {
		return a, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; %s", msg)
	}
	if msg := a.parseSignedHeaders(signed); msg != "" {
		return a, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; %s", msg)
	}
	if !isSig(sig) {
		return a, newError(ErrAuthorizationHeaderMalformed, "The authorization header is malformed; Signature must be 64 lower-case hex digits.")
	}
	a.Signature = sig
	return a, nil
}

// parseCredential fills the credential fields from
// "AKID/yyyymmdd/region/service/aws4_request" and returns a message on
// error. The access key ID is everything before the last four parts.
func (a *Authorization) parseCredential(cred string) string {
	const form = `the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`
	var parts [4]string
	rest := cred
	for i := 3; i >= 0; i-- {
		j := strings.LastIndexByte(rest, '/')
		if j < 0 {
			return form
		}
		parts[i], rest = rest[j+1:], rest[:j]
	}
	if rest == "" || parts[1] == "" || parts[2] == "" {
		return form
	}
	if parts[3] != terminator {
		return "incorrect terminal " + strconv.Quote(clip(parts[3])) + ". This endpoint uses \"aws4_request\"."
	}
	if len(parts[0]) != 8 {
		return "incorrect date format " + strconv.Quote(clip(parts[0])) + ". This date in the credential must be in the format \"yyyyMMdd\"."
	}
	if _, err := lastCredentialDate.parse(dateLayout, parts[0]); err != nil {
		return "incorrect date format " + strconv.Quote(clip(parts[0])) + ". This date in the credential must be in the format \"yyyyMMdd\"."
	}
	a.AccessKeyID, a.Date, a.Region, a.Service = rest, parts[0], parts[1], parts[2]
	return ""
}

// parseSignedHeaders fills SignedHeaders from "a;b;c" and returns a
// message on error. Names must be non-empty, lower-case and unique.
func (a *Authorization) parseSignedHeaders(s string) string {
	if s == "" {
		return "SignedHeaders is empty."
	}
	if hs, ok := signedLists.Get(s); ok {
		a.SignedHeaders = hs
		return ""
	}
	hs := make([]string, 0, strings.Count(s, ";")+1)
	for h := range strings.SplitSeq(s, ";") {
		if h == "" {
			return "SignedHeaders contains an empty header name."
		}
		for i := 0; i < len(h); i++ {
			if c := h[i]; !isTokenChar(c) || ('A' <= c && c <= 'Z') {
				return "SignedHeaders contains the invalid header name " + strconv.Quote(clip(h)) + "; names must be lower-case."
			}
		}
		for _, seen := range hs {
			if seen == h {
				return "SignedHeaders lists " + strconv.Quote(h) + " twice."
			}
		}
		hs = append(hs, h)
	}
	a.SignedHeaders = hs
	if len(s) <= maxSignedListLen && signedLists.Len() < maxSignedLists {
		signedLists.Put(strings.Clone(s), hs)
	}
	return ""
}

// signedLists holds the SignedHeaders lists parsed so far, valid ones
// only: a client lists the same headers on every request of a kind, and
// the parse allocates the list and checks every name. The lists are
// shared: Authorization.SignedHeaders and Result.SignedHeaders are
// read-only. At most maxSignedLists lists of at most maxSignedListLen
// bytes; others are parsed on every request.
var signedLists = memo.Map[string, []string]{Max: maxSignedLists}

const (
	maxSignedLists   = 256
	maxSignedListLen = 512
)

// parsedTime is a time string and what time.Parse made of it.
type parsedTime struct {
	s string
	t time.Time
}

// lastTime remembers the last string a layout parsed without error: the
// requests of one second carry the same X-Amz-Date, those of a day the
// same credential date, and time.Parse is the costliest step of parsing
// them.
type lastTime struct{ p atomic.Pointer[parsedTime] }

var lastAmzDate, lastCredentialDate lastTime

// parse is time.Parse(layout, s), remembered; each lastTime is used with
// one layout only.
func (l *lastTime) parse(layout, s string) (time.Time, error) {
	if p := l.p.Load(); p != nil && p.s == s {
		return p.t, nil
	}
	t, err := time.Parse(layout, s)
	if err == nil {
		l.p.Store(&parsedTime{strings.Clone(s), t})
	}
	return t, err
}

func isTokenChar(c byte) bool {
	if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func (a Authorization) signs(name string) bool {
	for _, h := range a.SignedHeaders {
		if h == name {
			return true
		}
	}
	return false
}

// Presigned is the parsed authentication of a presigned URL.
type Presigned struct {
	Authorization
	AmzDate string        // X-Amz-Date as sent, ISO 8601 basic
	Time    time.Time     // X-Amz-Date
	Expires time.Duration // X-Amz-Expires
	// PayloadHash is X-Amz-Content-Sha256 if the URL carries it, else
	// UNSIGNED-PAYLOAD.
	PayloadHash string
}

// IsPresigned reports whether query carries SigV4 query authentication.
func IsPresigned(query url.Values) bool {
	return query.Has("X-Amz-Algorithm") || query.Has("X-Amz-Credential") || query.Has("X-Amz-Signature")
}

// ParsePresigned parses the X-Amz-* parameters of a presigned URL:
// X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date, X-Amz-Expires (1 to
// 604800 seconds), X-Amz-SignedHeaders and X-Amz-Signature. A non-empty
// X-Amz-Security-Token is refused (Coffer issues no session tokens). Errors
// are ErrAuthorizationQueryParameters or ErrUnsupportedAuth.
func ParsePresigned(query url.Values) (Presigned, error) {
	var p Presigned
	get := func(name string) (string, error) {
		vs := query[name]
		switch len(vs) {
		case 0:
			return "", newError(ErrAuthorizationQueryParameters, "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
		case 1:
			return vs[0], nil
		}
		return "", newError(ErrAuthorizationQueryParameters, "%s appears more than once.", name)
	}
	if tok := query.Get("X-Amz-Security-Token"); tok != "" {
		return p, newError(ErrUnsupportedAuth, "Session tokens (X-Amz-Security-Token) are not supported.")
	}
	alg, err := get("X-Amz-Algorithm")
	if err != nil {
		return p, err
	}
	if alg != Algorithm {
		return p, newError(ErrAuthorizationQueryParameters, "X-Amz-Algorithm only supports %q", Algorithm)
	}
	cred, err := get("X-Amz-Credential")
	if err != nil {
		return p, err
	}
	if msg := p.parseCredential(cred); msg != "" {
		return p, newError(ErrAuthorizationQueryParameters, "Error parsing the X-Amz-Credential parameter; %s", msg)
	}
	date, err := get("X-Amz-Date")
	if err != nil {
		return p, err
	}
	t, ok := parseAmzDate(date)
	if !ok {
		return p, newError(ErrAuthorizationQueryParameters, `X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd'T'HHmmss'Z'".`)
	}
	p.AmzDate, p.Time = date, t
	exp, err := get("X-Amz-Expires")
	if err != nil {
		return p, err
	}
	secs, err := strconv.ParseInt(exp, 10, 64)
	switch {
	case err == nil && secs < 0:
		return p, newError(ErrAuthorizationQueryParameters, "X-Amz-Expires must be non-negative")
	case err != nil || exp == "" || exp[0] < '0' || exp[0] > '9':
		return p, newError(ErrAuthorizationQueryParameters, "X-Amz-Expires should be a number")
	case secs < 1:
		return p, newError(ErrAuthorizationQueryParameters, "X-Amz-Expires must be at least one second.")
	case secs > int64(MaxPresignExpiry/time.Second):
		return p, newError(ErrAuthorizationQueryParameters, "X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds")
	}
	p.Expires = time.Duration(secs) * time.Second
	signed, err := get("X-Amz-SignedHeaders")
	if err != nil {
		return p, err
	}
	if msg := p.parseSignedHeaders(signed); msg != "" {
		return p, newError(ErrAuthorizationQueryParameters, "X-Amz-SignedHeaders is malformed; %s", msg)
	}
	sig, err := get("X-Amz-Signature")
	if err != nil {
		return p, err
	}
	if !isSig(sig) {
		return p, newError(ErrAuthorizationQueryParameters, "X-Amz-Signature must be 64 lower-case hex digits.")
	}
	p.Signature = sig
	p.PayloadHash = UnsignedPayload
	if vs, ok := query["X-Amz-Content-Sha256"]; ok {
		if len(vs) != 1 || !(vs[0] == UnsignedPayload || isHexSHA256(vs[0])) {
			return p, newError(ErrAuthorizationQueryParameters, "X-Amz-Content-Sha256 must be UNSIGNED-PAYLOAD or a hex SHA-256.")
		}
		p.PayloadHash = vs[0]
	}
	return p, nil
}

// parseAmzDate parses an ISO 8601 basic time such as 20130524T000000Z.
func parseAmzDate(s string) (time.Time, bool) {
	if len(s) != len(amzDateLayout) {
		return time.Time{}, false
	}
	t, err := lastAmzDate.parse(amzDateLayout, s)
	return t, err == nil
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

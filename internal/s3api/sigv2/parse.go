package sigv2

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Scheme is the Authorization scheme of SigV2: "AWS AccessKeyId:Signature".
const Scheme = "AWS"

// Authorization is a parsed SigV2 credential: the Authorization header or
// the AWSAccessKeyId and Signature query parameters.
type Authorization struct {
	AccessKeyID string
	// Signature is the base64 HMAC-SHA1 as sent (query-decoded for
	// presigned URLs).
	Signature string
}

// String formats a as an Authorization header value.
func (a Authorization) String() string { return Scheme + " " + a.AccessKeyID + ":" + a.Signature }

// IsSigned reports whether a request with this Authorization header value
// and query asks for SigV2: the header starts with "AWS ", or the query
// carries AWSAccessKeyId or Signature.
func IsSigned(authorization string, query url.Values) bool {
	return strings.HasPrefix(authorization, Scheme+" ") || IsPresigned(query)
}

// IsPresigned reports whether query carries SigV2 query authentication
// (AWSAccessKeyId or Signature).
func IsPresigned(query url.Values) bool {
	return query.Has("AWSAccessKeyId") || query.Has("Signature")
}

const malformedHeader = "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature"

// ParseAuthorization parses an Authorization header of the form
//
//	AWS AKIAIOSFODNN7EXAMPLE:qgk2+6Sv9/oM7G3qLEjTH1a1l1g=
//
// The access key ID and the signature must be non-empty and free of
// spaces, controls and colons. Errors are ErrMalformedHeader.
func ParseAuthorization(header string) (Authorization, error) {
	var a Authorization
	rest, ok := strings.CutPrefix(strings.TrimSpace(header), Scheme+" ")
	if !ok {
		return a, newError(ErrMalformedHeader, malformedHeader)
	}
	id, sig, ok := strings.Cut(strings.TrimLeft(rest, " "), ":")
	if !ok || !validToken(id) || !validToken(sig) {
		return a, newError(ErrMalformedHeader, malformedHeader)
	}
	a.AccessKeyID, a.Signature = id, sig
	return a, nil
}

// validToken reports whether s is non-empty printable ASCII without
// spaces and colons.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == ':' {
			return false
		}
	}
	return true
}

// Presigned is the parsed query authentication of a presigned URL.
type Presigned struct {
	Authorization
	// ExpiresRaw is the Expires parameter as sent: it is what is signed.
	ExpiresRaw string
	// Expires is ExpiresRaw as a time.
	Expires time.Time
}

const queryRequired = "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters"

// ParsePresigned parses the AWSAccessKeyId, Signature and Expires (decimal
// seconds since the epoch) parameters of a presigned URL; each must appear
// exactly once. A space in Signature is taken as '+' (a '+' the client
// left unescaped; base64 has no spaces). Errors are ErrMalformedQuery.
func ParsePresigned(query url.Values) (Presigned, error) {
	var p Presigned
	get := func(name string) (string, bool) {
		vs := query[name]
		if len(vs) != 1 || vs[0] == "" {
			return "", false
		}
		return vs[0], true
	}
	id, ok1 := get("AWSAccessKeyId")
	sig, ok2 := get("Signature")
	exp, ok3 := get("Expires")
	if !ok1 || !ok2 || !ok3 {
		return p, newError(ErrMalformedQuery, queryRequired)
	}
	sig = strings.ReplaceAll(sig, " ", "+")
	if !validToken(id) || !validToken(sig) {
		return p, newError(ErrMalformedQuery, queryRequired)
	}
	secs, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || exp[0] < '0' || exp[0] > '9' || secs > maxUnix {
		return p, newError(ErrMalformedQuery, "Invalid date (should be seconds since epoch): %s", clip(exp))
	}
	p.AccessKeyID, p.Signature = id, sig
	p.ExpiresRaw, p.Expires = exp, time.Unix(secs, 0).UTC()
	return p, nil
}

// maxUnix bounds Expires so that time arithmetic cannot overflow (year
// 9999).
const maxUnix = 253402300799

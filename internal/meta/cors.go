package meta

import (
	"context"
	"encoding/xml"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// CORS (S3 cross-origin resource sharing, issue 21; docs/cors.md)
//
// A bucket's CORS configuration is S3's CORSConfiguration: the type below
// is its XML schema (the S3 API decodes a body into it and encodes it
// back), kept as JSON in a column of the bucket's row (migration 0025).
// CheckCORS is the one check of a configuration and CORS.Match the one
// reading of it: the preflight and the headers of actual requests both
// use it.

// The limits of a CORS configuration (S3's).
const (
	MaxCORSRules  = 100
	MaxCORSRuleID = 255
	// MaxCORSBody bounds a PutBucketCors body.
	MaxCORSBody = 64 << 10
)

// CORS is a bucket's CORS configuration.
type CORS struct {
	XMLName xml.Name   `xml:"CORSConfiguration" json:"-"`
	Rules   []CORSRule `xml:"CORSRule"`
}

// CORSRule is one rule: the origins, methods and request headers it
// allows, the response headers it exposes and how long a browser may
// cache a preflight's answer (nil: the browser's default).
type CORSRule struct {
	ID             string   `xml:"ID,omitempty" json:",omitempty"`
	AllowedHeaders []string `xml:"AllowedHeader" json:",omitempty"`
	AllowedMethods []string `xml:"AllowedMethod"`
	AllowedOrigins []string `xml:"AllowedOrigin"`
	ExposeHeaders  []string `xml:"ExposeHeader" json:",omitempty"`
	MaxAgeSeconds  *int32   `xml:"MaxAgeSeconds,omitempty" json:",omitempty"`
}

// CORSConfigs keeps the buckets' CORS configurations (read with the
// bucket record: Bucket.CORS).
type CORSConfigs interface {
	// SetBucketCORS replaces a native bucket's configuration (nil: none):
	// CheckCORS's errors; NotFound if the bucket is missing; Conflict for
	// a gateway bucket.
	SetBucketCORS(ctx context.Context, bucket string, c *CORS) error
}

// ErrNoCORS is the error of a bucket without a CORS configuration (S3's
// NoSuchCORSConfiguration).
func ErrNoCORS(bucket string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: fmt.Sprintf("bucket %q has no CORS configuration", bucket),
		Detail: map[string]any{"resource": "cors"}}
}

// corsErr is a refused configuration: InvalidArgument with
// Detail["reason"] "malformed_xml" (S3's MalformedXML, with S3's
// message) or "invalid_request" (InvalidRequest, message as S3's).
func corsErr(reason, format string, args ...any) error {
	return &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf(format, args...), Detail: map[string]any{"reason": reason}}
}

// malformedCORS is S3's MalformedXML for a configuration that breaks the
// schema (S3 names no element).
func malformedCORS() error {
	return corsErr("malformed_xml", "The XML you provided was not well-formed or did not validate against our published schema.")
}

// corsMethods are the methods a rule may allow (S3's).
var corsMethods = []string{"GET", "PUT", "POST", "DELETE", "HEAD"}

// IsCORSMethod reports whether m is one of the methods a rule may allow
// (case-sensitive, as S3).
func IsCORSMethod(m string) bool {
	for _, c := range corsMethods {
		if m == c {
			return true
		}
	}
	return false
}

// ValidCORSHeader reports whether h is a header name (an RFC 9110 token)
// or a pattern of one with "*" wildcards.
func ValidCORSHeader(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// CheckCORS checks a configuration as S3 does. Its errors are
// InvalidArgument with Detail["reason"] "malformed_xml" (no rule, a rule
// without an origin or a method) or "invalid_request" (a method S3 does
// not allow, an origin with more than one wildcard, a header that is no
// header name, too many rules, too long an ID), messages as S3's.
func CheckCORS(c *CORS) error {
	switch n := len(c.Rules); {
	case n == 0:
		return malformedCORS()
	case n > MaxCORSRules:
		return corsErr("invalid_request", "The number of CORS rules should not exceed allowed limit of %d rules.", MaxCORSRules)
	}
	for i := range c.Rules {
		r := &c.Rules[i]
		if utf8.RuneCountInString(r.ID) > MaxCORSRuleID || !utf8.ValidString(r.ID) {
			return corsErr("invalid_request", "ID length should not exceed allowed limit of %d", MaxCORSRuleID)
		}
		if len(r.AllowedOrigins) == 0 || len(r.AllowedMethods) == 0 {
			return malformedCORS()
		}
		for _, o := range r.AllowedOrigins {
			if strings.Count(o, "*") > 1 {
				return corsErr("invalid_request", `AllowedOrigin "%s" can not have more than one wildcard.`, o)
			}
			if !utf8.ValidString(o) {
				return corsErr("invalid_request", `AllowedOrigin "%s" is not valid UTF-8.`, o)
			}
		}
		for _, m := range r.AllowedMethods {
			if !IsCORSMethod(m) {
				return corsErr("invalid_request", "Found unsupported HTTP method in CORS config. Unsupported method is %s", m)
			}
		}
		for _, hs := range [][]string{r.AllowedHeaders, r.ExposeHeaders} {
			for _, h := range hs {
				if !ValidCORSHeader(h) {
					return corsErr("invalid_request", `AllowedHeader "%s" contains invalid character.`, h)
				}
			}
		}
	}
	return nil
}

// Match returns the first rule of c that allows a request from origin
// with method (the actual request's, or a preflight's
// Access-Control-Request-Method) and, for a preflight, every header of
// headers (matched case-insensitively against the rule's AllowedHeader
// patterns); nil if none does. anyOrigin is true when the rule allows
// origin through the AllowedOrigin "*" (S3 then answers
// Access-Control-Allow-Origin "*").
func (c *CORS) Match(origin, method string, headers []string) (rule *CORSRule, anyOrigin bool) {
	if c == nil {
		return nil, false
	}
rules:
	for i := range c.Rules {
		r := &c.Rules[i]
		matched := false
		for _, o := range r.AllowedOrigins {
			if wildcardMatch(o, origin) {
				matched, anyOrigin = true, o == "*"
				break
			}
		}
		if !matched {
			continue
		}
		if !contains(r.AllowedMethods, method) {
			continue
		}
		for _, h := range headers {
			ok := false
			for _, p := range r.AllowedHeaders {
				if wildcardMatch(strings.ToLower(p), strings.ToLower(h)) {
					ok = true
					break
				}
			}
			if !ok {
				continue rules
			}
		}
		return r, anyOrigin
	}
	return nil, false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// wildcardMatch reports whether s matches pattern p, in which "*" stands
// for any run of bytes: a comparison, a prefix and suffix for one
// wildcard, else greedy with backtracking to the last star
// (O(len(p)·len(s)) at worst).
func wildcardMatch(p, s string) bool {
	before, after, found := strings.Cut(p, "*")
	if !found {
		return p == s
	}
	if !strings.Contains(after, "*") {
		// One wildcard (every origin): a prefix and a suffix that do
		// not overlap.
		return len(s) >= len(before)+len(after) && strings.HasPrefix(s, before) && strings.HasSuffix(s, after)
	}
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && p[pi] == s[si]:
			pi++
			si++
		case star >= 0:
			mark++
			pi, si = star+1, mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

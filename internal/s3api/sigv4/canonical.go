package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Algorithm is the only signing algorithm this package speaks.
const Algorithm = "AWS4-HMAC-SHA256"

// Values of x-amz-content-sha256 other than a hex SHA-256.
const (
	UnsignedPayload                 = "UNSIGNED-PAYLOAD"
	StreamingPayload                = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	StreamingPayloadTrailer         = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	StreamingUnsignedPayloadTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
)

// EmptySHA256 is the hex SHA-256 of the empty string.
const EmptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

const (
	amzDateLayout = "20060102T150405Z" // ISO 8601 basic, as in X-Amz-Date
	dateLayout    = "20060102"         // the credential scope date
	terminator    = "aws4_request"
)

const upperhex = "0123456789ABCDEF"

// unreserved marks the bytes URI-encoding leaves alone: A-Z a-z 0-9 - _ . ~
var unreserved = func() (t [256]bool) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['-'], t['_'], t['.'], t['~'] = true, true, true, true
	return t
}()

// URIEncode encodes s the way SigV4 does: every byte except A-Za-z0-9-_.~
// becomes %XX (upper-case hex); '/' is kept when encodeSlash is false (object
// key paths) and encoded otherwise (query names and values). Use it to build
// URLs whose path and query survive canonicalization unchanged.
func URIEncode(s string, encodeSlash bool) string {
	if isUnreserved(s) && (encodeSlash || !strings.Contains(s, "/")) {
		return s
	}
	return string(appendURIEncode(make([]byte, 0, len(s)+16), s, encodeSlash))
}

func isUnreserved(s string) bool {
	for i := 0; i < len(s); i++ {
		if !unreserved[s[i]] {
			return false
		}
	}
	return true
}

func appendURIEncode(dst []byte, s string, encodeSlash bool) []byte {
	for i := 0; i < len(s); i++ {
		dst = appendEncodedByte(dst, s[i], encodeSlash)
	}
	return dst
}

func appendEncodedByte(dst []byte, c byte, encodeSlash bool) []byte {
	if unreserved[c] || (c == '/' && !encodeSlash) {
		return append(dst, c)
	}
	return append(dst, '%', upperhex[c>>4], upperhex[c&15])
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// appendCanonicalURI appends the canonical URI of an escaped request path.
// S3 does not normalize the path (no dot-segment removal, no slash
// collapsing) and does not double-encode: each %XX is decoded and every
// byte re-encoded, with an encoded slash (%2F) kept distinct from '/'. An
// invalid escape is taken as a literal '%'.
func appendCanonicalURI(dst []byte, escapedPath string) []byte {
	if escapedPath == "" {
		return append(dst, '/')
	}
	p := escapedPath
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '%' && i+2 < len(p) {
			hi, ok1 := unhex(p[i+1])
			lo, ok2 := unhex(p[i+2])
			if ok1 && ok2 {
				dst = appendEncodedByte(dst, hi<<4|lo, true)
				i += 2
				continue
			}
		}
		dst = appendEncodedByte(dst, c, false)
	}
	return dst
}

// queryUnescape decodes a query component: '+' is a space, %XX a byte, and
// an invalid escape a literal '%'. It returns s itself when there is
// nothing to decode.
func queryUnescape(s string) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			b = append(b, ' ')
		case '%':
			if i+2 < len(s) {
				hi, ok1 := unhex(s[i+1])
				lo, ok2 := unhex(s[i+2])
				if ok1 && ok2 {
					b = append(b, hi<<4|lo)
					i += 2
					continue
				}
			}
			b = append(b, c)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// canonicalComponent returns the SigV4 encoding of a raw query component.
func canonicalComponent(raw string) string {
	if isUnreserved(raw) {
		return raw
	}
	return URIEncode(queryUnescape(raw), true)
}

type queryParam struct{ key, value string } // both SigV4-encoded

// canonicalParams parses a raw query into SigV4-encoded parameters sorted
// by key then value. A parameter without '=' has an empty value; empty
// segments ("a=1&&b=2") are skipped. With skipSignature, X-Amz-Signature
// is left out (presigned URLs).
func canonicalParams(rawQuery string, skipSignature bool) []queryParam {
	if rawQuery == "" {
		return nil
	}
	ps := make([]queryParam, 0, strings.Count(rawQuery, "&")+1)
	for seg := range strings.SplitSeq(rawQuery, "&") {
		if seg == "" {
			continue
		}
		k, v, _ := strings.Cut(seg, "=")
		if skipSignature && k == "X-Amz-Signature" {
			continue
		}
		ps = append(ps, queryParam{canonicalComponent(k), canonicalComponent(v)})
	}
	slices.SortFunc(ps, func(a, b queryParam) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return strings.Compare(a.value, b.value)
	})
	return ps
}

func appendParams(dst []byte, ps []queryParam) []byte {
	for i, p := range ps {
		if i > 0 {
			dst = append(dst, '&')
		}
		dst = append(dst, p.key...)
		dst = append(dst, '=')
		dst = append(dst, p.value...)
	}
	return dst
}

// hostOf returns the host the client sent: r.Host, or the URL's host for
// client-side requests.
func hostOf(r *http.Request) string {
	if r.Host != "" || r.URL == nil {
		return r.Host
	}
	return r.URL.Host
}

// appendHeaderValues appends the canonical value of the lower-case header
// name as the server sees it: host from r.Host, content-length and
// transfer-encoding from the fields net/http moves them to. Values of a
// repeated header are joined with commas. ok is false when the request
// does not carry the header.
func appendHeaderValues(dst []byte, r *http.Request, name string) (_ []byte, ok bool) {
	switch name {
	case "host":
		h := hostOf(r)
		return appendHeaderValue(dst, h), h != ""
	case "content-length":
		if _, found := lookupHeader(r.Header, name); !found && r.ContentLength >= 0 &&
			(r.ContentLength > 0 || r.Body == nil || r.Body == http.NoBody) {
			return strconv.AppendInt(dst, r.ContentLength, 10), true
		}
	case "transfer-encoding":
		if _, found := lookupHeader(r.Header, name); !found && len(r.TransferEncoding) > 0 {
			return append(dst, strings.Join(r.TransferEncoding, ",")...), true
		}
	}
	vs, found := lookupHeader(r.Header, name)
	if !found {
		return dst, false
	}
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendHeaderValue(dst, v)
	}
	return dst, true
}

// lookupHeader finds a header by lower-case name without allocating in the
// common case (canonical keys in the map).
func lookupHeader(h http.Header, name string) ([]string, bool) {
	var buf [64]byte
	if len(name) <= len(buf) {
		k := buf[:len(name)]
		upper := true
		for i := 0; i < len(name); i++ {
			c := name[i]
			if upper && 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			} else if !upper && 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			k[i] = c
			upper = c == '-'
		}
		if v, ok := h[string(k)]; ok {
			return v, true
		}
	}
	for k, v := range h { // non-canonical keys set directly in the map
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// appendHeaderValue appends v trimmed, with runs of spaces and tabs
// collapsed to one space.
func appendHeaderValue(dst []byte, v string) []byte {
	space := false
	start := len(dst)
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == ' ' || c == '\t' {
			space = true
			continue
		}
		if space && len(dst) > start {
			dst = append(dst, ' ')
		}
		space = false
		dst = append(dst, c)
	}
	return dst
}

// appendCanonicalHeaders appends "name:value\n" for every signed header, in
// the order the client listed them. It returns the first missing header.
func appendCanonicalHeaders(dst []byte, r *http.Request, signed []string) ([]byte, string) {
	for _, name := range signed {
		dst = append(dst, name...)
		dst = append(dst, ':')
		var ok bool
		if dst, ok = appendHeaderValues(dst, r, name); !ok {
			return dst, name
		}
		dst = append(dst, '\n')
	}
	return dst, ""
}

// canonicalInput is everything the canonical request is made of.
type canonicalInput struct {
	method      string
	escapedPath string
	params      []queryParam // sorted, encoded
	req         *http.Request
	signed      []string
	payloadHash string
}

// appendCanonicalRequest appends the canonical request and returns the
// name of a signed header missing from the request, if any.
func appendCanonicalRequest(dst []byte, in *canonicalInput) ([]byte, string) {
	dst = append(dst, in.method...)
	dst = append(dst, '\n')
	dst = appendCanonicalURI(dst, in.escapedPath)
	dst = append(dst, '\n')
	dst = appendParams(dst, in.params)
	dst = append(dst, '\n')
	dst, missing := appendCanonicalHeaders(dst, in.req, in.signed)
	dst = append(dst, '\n')
	for i, h := range in.signed {
		if i > 0 {
			dst = append(dst, ';')
		}
		dst = append(dst, h...)
	}
	dst = append(dst, '\n')
	dst = append(dst, in.payloadHash...)
	return dst, missing
}

// appendStringToSign appends the string to sign of a canonical request.
func appendStringToSign(dst []byte, amzDate, scope string, canonicalRequest []byte) []byte {
	sum := sha256.Sum256(canonicalRequest)
	dst = append(dst, Algorithm+"\n"...)
	dst = append(dst, amzDate...)
	dst = append(dst, '\n')
	dst = append(dst, scope...)
	dst = append(dst, '\n')
	return hex.AppendEncode(dst, sum[:])
}

// Scope returns the credential scope "date/region/service/aws4_request".
func Scope(date, region, service string) string {
	return date + "/" + region + "/" + service + "/" + terminator
}

// SigningKey derives the SigV4 signing key of secret for a scope (date as
// yyyymmdd). Verify caches these; see KeyCache.
func SigningKey(secret, date, region, service string) []byte {
	k := deriveKey(secret, date, region, service)
	return k[:]
}

func deriveKey(secret, date, region, service string) [32]byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k[:], region)
	k = hmacSHA256(k[:], service)
	return hmacSHA256(k[:], terminator)
}

func hmacSHA256(key []byte, data string) (out [32]byte) {
	if len(key) > sha256.BlockSize { // "AWS4" + a secret longer than 60 bytes
		m := hmac.New(sha256.New, slices.Clone(key)) // a clone: key stays on the caller's stack
		m.Write([]byte(data))
		copy(out[:], m.Sum(nil))
		return out
	}
	var buf [hmacStack]byte
	return hmacSum(key, buf[:0], data)
}

// hmacStack is the message size up to which hmacSum works in a buffer on
// the stack (a string to sign is about 150 bytes).
const hmacStack = 512

// hmacSum is HMAC-SHA256 (RFC 2104) of msg under key, which must be at
// most one SHA-256 block long, computed with sha256.Sum256 over buf
// (grown if msg does not fit after a block). hmac.New costs five
// allocations and two hash states a call, once or twice per request.
func hmacSum[M string | []byte](key []byte, buf []byte, msg M) [32]byte {
	var pad [sha256.BlockSize]byte
	copy(pad[:], key)
	for i := range pad {
		pad[i] ^= 0x36 // ipad
	}
	buf = append(append(buf[:0], pad[:]...), msg...)
	inner := sha256.Sum256(buf)
	for i := range pad {
		pad[i] ^= 0x36 ^ 0x5c // opad
	}
	buf = append(append(buf[:0], pad[:]...), inner[:]...)
	return sha256.Sum256(buf)
}

// signature returns the hex HMAC-SHA256 of stringToSign under key (a
// signing key: 32 bytes).
func signature(key []byte, stringToSign []byte) [64]byte {
	var sum [32]byte
	if len(key) > sha256.BlockSize {
		m := hmac.New(sha256.New, slices.Clone(key))
		m.Write(stringToSign)
		copy(sum[:], m.Sum(nil))
	} else {
		var buf [hmacStack]byte
		sum = hmacSum(key, buf[:0], stringToSign)
	}
	var out [64]byte
	hex.Encode(out[:], sum[:])
	return out
}

package sigv2

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
)

// subresources are the query parameters signed in the CanonicalizedResource:
// the sub-resources AWS documents (acl, delete, lifecycle, location,
// logging, notification, partNumber, policy, requestPayment, torrent,
// uploadId, uploads, versionId, versioning, versions, website), the
// response-* overrides, and the others botocore's HmacV1Auth signs (cors,
// restore, tagging, accelerate, analytics, inventory, metrics, replication,
// select, select-type, object-lock, storageClass, defaultObjectAcl).
// Every other parameter is left out of the signature, as on S3.
var subresources = map[string]bool{
	"accelerate": true, "acl": true, "analytics": true, "cors": true, "defaultObjectAcl": true,
	"delete": true, "inventory": true, "lifecycle": true, "location": true, "logging": true,
	"metrics": true, "notification": true, "object-lock": true, "partNumber": true, "policy": true,
	"replication": true, "requestPayment": true, "restore": true, "select": true, "select-type": true,
	"storageClass": true, "tagging": true, "torrent": true, "uploadId": true, "uploads": true,
	"versionId": true, "versioning": true, "versions": true, "website": true,
	"response-cache-control": true, "response-content-disposition": true, "response-content-encoding": true,
	"response-content-language": true, "response-content-type": true, "response-expires": true,
}

// IsSubresource reports whether the query parameter name is signed in the
// CanonicalizedResource.
func IsSubresource(name string) bool { return subresources[name] }

// header is one line of CanonicalizedAmzHeaders.
type header struct {
	name  string // lower-case
	value string // trimmed values joined by ','
}

// amzHeaders returns the x-amz-* headers of h, names lower-cased, values
// trimmed and joined with ',', sorted by name. skip names a header to leave
// out ("" for none).
func amzHeaders(h http.Header, skip string) []header {
	var out []header
	for k, vs := range h {
		if len(k) < 6 || !strings.EqualFold(k[:6], "x-amz-") {
			continue
		}
		name := strings.ToLower(k)
		if name == skip {
			continue
		}
		out = addHeader(out, name, vs)
	}
	sortHeaders(out)
	return out
}

// addHeader appends the values vs of the lower-case name to hs, merging
// with an entry of the same name.
func addHeader(hs []header, name string, vs []string) []header {
	v := joinValues(vs)
	for i := range hs {
		if hs[i].name == name {
			hs[i].value += "," + v
			return hs
		}
	}
	return append(hs, header{name, v})
}

func sortHeaders(hs []header) {
	slices.SortStableFunc(hs, func(a, b header) int { return strings.Compare(a.name, b.name) })
}

// joinValues trims each value of a header and joins them with ','. RFC
// 2616 folding is already undone by net/http; any CR or LF left is replaced
// by a space.
func joinValues(vs []string) string {
	if len(vs) == 1 && !strings.ContainsAny(vs[0], "\r\n") {
		return strings.Trim(vs[0], " \t")
	}
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		v = strings.Map(func(r rune) rune {
			if r == '\r' || r == '\n' {
				return ' '
			}
			return r
		}, v)
		b.WriteString(strings.Trim(v, " \t"))
	}
	return b.String()
}

// headerValue returns the canonical value of a positional header
// (Content-MD5, Content-Type, Date) and whether the request has it.
func headerValue(h http.Header, name string) (string, bool) {
	vs := h.Values(name)
	if len(vs) == 0 {
		return "", false
	}
	return joinValues(vs), true
}

// requestPath returns the path of the request as the client sent it, not
// decoded: the request-target up to the query (absolute-form targets lose
// their scheme and authority), or for client-side requests the URL's
// escaped path.
func requestPath(r *http.Request) string {
	uri := r.RequestURI
	if uri == "" {
		if r.URL == nil {
			return "/"
		}
		p := r.URL.EscapedPath()
		if p == "" {
			p = "/"
		}
		return p
	}
	if i := strings.IndexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	if !strings.HasPrefix(uri, "/") {
		if _, rest, ok := strings.Cut(uri, "://"); ok {
			if j := strings.IndexByte(rest, '/'); j >= 0 {
				return rest[j:]
			}
			return "/"
		}
	}
	return uri
}

// canonicalResource returns the CanonicalizedResource: "/" + vhostBucket
// (virtual-host style only), the path as sent, and the sub-resources of
// rawQuery sorted by name (stable: repeated names keep their order), each
// "name" or "name=value" with the value %-decoded ('+' is kept). With
// bareEmpty, a sub-resource sent as "name=" is signed as "name" (as MinIO
// and some SDKs do) instead of "name=" (as botocore does). hasEmpty reports
// whether any sub-resource was sent as "name=".
func canonicalResource(path, vhostBucket, rawQuery string, bareEmpty bool) (res string, hasEmpty bool) {
	var b strings.Builder
	if vhostBucket != "" {
		b.WriteByte('/')
		b.WriteString(vhostBucket)
	}
	b.WriteString(path)
	type param struct {
		name, value string
		eq          bool
	}
	var ps []param
	for rawQuery != "" {
		var seg string
		seg, rawQuery, _ = strings.Cut(rawQuery, "&")
		k, v, eq := strings.Cut(seg, "=")
		k = percentDecode(k)
		if !subresources[k] {
			continue
		}
		if eq && v == "" {
			hasEmpty = true
			eq = !bareEmpty
		}
		ps = append(ps, param{k, percentDecode(v), eq})
	}
	slices.SortStableFunc(ps, func(a, b param) int { return strings.Compare(a.name, b.name) })
	for i, p := range ps {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(p.name)
		if p.eq {
			b.WriteByte('=')
			b.WriteString(p.value)
		}
	}
	return b.String(), hasEmpty
}

// percentDecode decodes %XX escapes; '+' and invalid escapes are kept
// literally.
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				b = append(b, hi<<4|lo)
				i += 2
				continue
			}
		}
		b = append(b, c)
	}
	return string(b)
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

// stringToSign is the input of a SigV2 signature:
//
//	HTTP-Verb + "\n" + Content-MD5 + "\n" + Content-Type + "\n" +
//	Date (or Expires) + "\n" + CanonicalizedAmzHeaders + CanonicalizedResource
type stringToSign struct {
	Method      string
	ContentMD5  string
	ContentType string
	// Date is the Date header, "" when x-amz-date is sent, or Expires for
	// presigned URLs.
	Date     string
	Amz      []header // sorted
	Resource string
}

// String returns the string to sign.
func (s *stringToSign) String() string { return string(s.append(nil)) }

func (s *stringToSign) append(dst []byte) []byte {
	dst = append(dst, s.Method...)
	dst = append(dst, '\n')
	dst = append(dst, s.ContentMD5...)
	dst = append(dst, '\n')
	dst = append(dst, s.ContentType...)
	dst = append(dst, '\n')
	dst = append(dst, s.Date...)
	dst = append(dst, '\n')
	for _, h := range s.Amz {
		dst = append(dst, h.name...)
		dst = append(dst, ':')
		dst = append(dst, h.value...)
		dst = append(dst, '\n')
	}
	return append(dst, s.Resource...)
}

// Sign returns the base64 HMAC-SHA1 of stringToSign under secret.
func Sign(secret string, stringToSign []byte) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(stringToSign)
	var sum [sha1.Size]byte
	return base64.StdEncoding.EncodeToString(m.Sum(sum[:0]))
}

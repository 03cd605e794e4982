package s3api

import (
	"encoding/xml"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// corsBody is a CORSConfiguration of rules.
func corsBody(rules ...string) []byte {
	return []byte(`<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` + strings.Join(rules, "") + `</CORSConfiguration>`)
}

// corsRule is a CORSRule of the elements given as name, value pairs.
func corsRule(kv ...string) string {
	var b strings.Builder
	b.WriteString("<CORSRule>")
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, "<%s>%s</%s>", kv[i], kv[i+1], kv[i])
	}
	b.WriteString("</CORSRule>")
	return b.String()
}

// putCORS sets bucket b's configuration as alice.
func (e *s3Env) putCORS(t *testing.T, body []byte) {
	t.Helper()
	e.alice("PUT", "/b?cors", body, "Content-MD5", md5B64(body)).want(t, 200, "")
}

func TestBucketCors(t *testing.T) {
	e := newS3Env(t)
	r := e.alice("GET", "/b?cors", nil)
	r.want(t, 404, s3err.NoSuchCORSConfiguration)
	if r.message != "The CORS configuration does not exist" {
		t.Errorf("GetBucketCors without one: message %q", r.message)
	}
	body := corsBody(corsRule("ID", "app", "AllowedOrigin", "https://*.example.com", "AllowedOrigin", "http://localhost:3000",
		"AllowedMethod", "PUT", "AllowedMethod", "GET", "AllowedHeader", "*", "ExposeHeader", "ETag", "MaxAgeSeconds", "600"),
		corsRule("AllowedOrigin", "*", "AllowedMethod", "HEAD"))
	e.putCORS(t, body)
	r = e.alice("GET", "/b?cors", nil)
	r.want(t, 200, "")
	var got meta.CORS
	if err := xml.Unmarshal(r.Body.Bytes(), &got); err != nil || len(got.Rules) != 2 || got.Rules[0].ID != "app" ||
		strings.Join(got.Rules[0].AllowedOrigins, " ") != "https://*.example.com http://localhost:3000" ||
		strings.Join(got.Rules[0].AllowedMethods, " ") != "PUT GET" || *got.Rules[0].MaxAgeSeconds != 600 ||
		got.Rules[1].MaxAgeSeconds != nil || got.Rules[1].ID != "" {
		t.Errorf("GetBucketCors = %s (%v)", r.Body, err)
	}
	if !strings.Contains(r.Body.String(), `<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><CORSRule><ID>app</ID><AllowedHeader>*</AllowedHeader>`) {
		t.Errorf("GetBucketCors body = %s", r.Body)
	}

	// Refusals change nothing, with S3's codes and texts.
	e.store.Writes = nil
	ok := []string{"AllowedOrigin", "*", "AllowedMethod", "GET"}
	many := make([]string, meta.MaxCORSRules+1)
	for i := range many {
		many[i] = corsRule(ok...)
	}
	for _, tc := range []struct {
		name       string
		body       []byte
		code, text string
	}{
		{"no digest", body, s3err.InvalidRequest, "Missing required header for this request: Content-MD5 or x-amz-checksum-*"},
		{"no rules", corsBody(), s3err.MalformedXML, "The XML you provided was not well-formed or did not validate against our published schema."},
		{"no origin", corsBody(corsRule("AllowedMethod", "GET")), s3err.MalformedXML, ""},
		{"no method", corsBody(corsRule("AllowedOrigin", "*")), s3err.MalformedXML, ""},
		{"unknown element", corsBody(corsRule(append(ok, "Origin", "x")...)), s3err.MalformedXML, ""},
		{"lower-case method", corsBody(corsRule("AllowedOrigin", "*", "AllowedMethod", "get")), s3err.InvalidRequest,
			"Found unsupported HTTP method in CORS config. Unsupported method is get"},
		{"PATCH", corsBody(corsRule("AllowedOrigin", "*", "AllowedMethod", "GET", "AllowedMethod", "PATCH")), s3err.InvalidRequest,
			"Found unsupported HTTP method in CORS config. Unsupported method is PATCH"},
		{"two wildcards", corsBody(corsRule("AllowedOrigin", "http://*.example.*", "AllowedMethod", "GET")), s3err.InvalidRequest,
			`AllowedOrigin "http://*.example.*" can not have more than one wildcard.`},
		{"bad allowed header", corsBody(corsRule(append(ok, "AllowedHeader", "X-Custom:Header")...)), s3err.InvalidRequest,
			`AllowedHeader "X-Custom:Header" contains invalid character.`},
		{"bad expose header", corsBody(corsRule(append(ok, "ExposeHeader", "bad header")...)), s3err.InvalidRequest,
			`AllowedHeader "bad header" contains invalid character.`},
		{"max age not a number", corsBody(corsRule(append(ok, "MaxAgeSeconds", "ten")...)), s3err.MalformedXML, ""},
		{"too many rules", corsBody(many...), s3err.InvalidRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.name != "no digest" {
				hdr = []string{"Content-MD5", md5B64(tc.body)}
			}
			r := e.alice("PUT", "/b?cors", tc.body, hdr...)
			r.want(t, 400, tc.code)
			if tc.text != "" && r.message != tc.text {
				t.Errorf("message %q, want %q", r.message, tc.text)
			}
			e.noWrites(t)
		})
	}
	// Over 64 KiB (this API's MaxXMLBody is larger by default).
	if _, err := parseCORS(corsBody(corsRule(append(ok, "ID", strings.Repeat("x", meta.MaxCORSBody))...))); s3err.Translate(err).Code != s3err.InvalidRequest {
		t.Errorf("parseCORS of over 64 KiB: %v", err)
	}
	e.do(req{method: "GET", target: "/b?cors", as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.do(req{method: "PUT", target: "/b?cors", body: body, hdr: []string{"Content-MD5", md5B64(body)}, as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.do(req{method: "DELETE", target: "/b?cors", as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.alice("PUT", "/nope?cors", body, "Content-MD5", md5B64(body)).want(t, 404, s3err.NoSuchBucket)
	e.noWrites(t)
	e.alice("DELETE", "/b?cors", nil).want(t, 204, "")
	e.alice("GET", "/b?cors", nil).want(t, 404, s3err.NoSuchCORSConfiguration)
	e.alice("DELETE", "/b?cors", nil).want(t, 204, "")
}

// preflightRules are bucket b's rules in the preflight tests (the
// patterns of versitygw's and Ceph's s3-tests).
var preflightRules = corsBody(
	corsRule("AllowedOrigin", "http://example.com", "AllowedOrigin", "https://example.com", "AllowedMethod", "GET", "AllowedMethod", "HEAD",
		"AllowedHeader", "X-Amz-Date", "AllowedHeader", "X-Amz-Content-Sha256", "ExposeHeader", "Content-Type", "ExposeHeader", "ETag",
		"MaxAgeSeconds", "100"),
	corsRule("AllowedOrigin", "*", "AllowedMethod", "HEAD", "AllowedHeader", "X-Amz-Meta-Something"),
	corsRule("AllowedOrigin", "*suffix", "AllowedOrigin", "start*end", "AllowedOrigin", "prefix*", "AllowedMethod", "GET"),
	corsRule("AllowedOrigin", "http://app.test", "AllowedMethod", "PUT", "AllowedMethod", "POST", "AllowedMethod", "DELETE",
		"AllowedHeader", "x-amz-*", "AllowedHeader", "Content-Type", "ExposeHeader", "ETag", "ExposeHeader", "x-amz-version-id"),
)

// TestPreflight: OPTIONS on a bucket or an object, without credentials,
// answered by the first rule that allows the origin (with at most one
// wildcard), the method and every requested header (case-insensitively,
// with wildcards); refusals as S3's.
func TestPreflight(t *testing.T) {
	e := newS3Env(t)
	// Before any configuration: 403, CORS not enabled.
	r := e.do(req{method: "OPTIONS", target: "/b/k", hdr: []string{"Origin", "http://example.com", "Access-Control-Request-Method", "GET"}})
	r.want(t, 403, "AccessForbidden")
	if r.message != "CORSResponse: CORS is not enabled for this bucket." {
		t.Errorf("preflight without a configuration: %q", r.message)
	}
	e.putCORS(t, preflightRules)
	e.store.Writes = nil
	const vary = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"
	for _, tc := range []struct {
		target, origin, method, headers string
		// want: Allow-Origin, Allow-Methods, Allow-Headers, Expose-Headers, Max-Age, Allow-Credentials
		want [6]string
	}{
		{"/b/k", "http://example.com", "GET", "X-Amz-Date", [6]string{"http://example.com", "GET, HEAD", "x-amz-date", "Content-Type, ETag", "100", "true"}},
		{"/b", "https://example.com", "HEAD", "", [6]string{"https://example.com", "GET, HEAD", "", "Content-Type, ETag", "100", "true"}},
		{"/b/a/b/c", "https://example.com", "GET", "x-amz-date,X-AMZ-CONTENT-SHA256", [6]string{"https://example.com", "GET, HEAD", "x-amz-date, x-amz-content-sha256", "Content-Type, ETag", "100", "true"}},
		{"/b/k", "http://anything.net", "HEAD", "x-amz-meta-something", [6]string{"*", "HEAD", "x-amz-meta-something", "", "", ""}},
		{"/b/k", "foo.suffix", "GET", "", [6]string{"foo.suffix", "GET", "", "", "", "true"}},
		{"/b/k", "startend", "GET", "", [6]string{"startend", "GET", "", "", "", "true"}},
		{"/b/k", "start12end", "GET", "", [6]string{"start12end", "GET", "", "", "", "true"}},
		{"/b/k", "prefix.suffix", "GET", "", [6]string{"prefix.suffix", "GET", "", "", "", "true"}},
		{"/b/k", "http://app.test", "PUT", "content-type, x-amz-meta-a, X-Amz-Checksum-Crc32", [6]string{"http://app.test", "PUT, POST, DELETE", "content-type, x-amz-meta-a, x-amz-checksum-crc32", "ETag, x-amz-version-id", "", "true"}},
		// A presigned URL's query changes nothing: a preflight is not authenticated.
		{"/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=bad&X-Amz-Credential=x", "http://app.test", "PUT", "", [6]string{"http://app.test", "PUT, POST, DELETE", "", "ETag, x-amz-version-id", "", "true"}},
	} {
		t.Run(tc.origin+" "+tc.method+" "+tc.headers, func(t *testing.T) {
			r := e.do(req{method: "OPTIONS", target: tc.target, hdr: []string{"Origin", tc.origin, "Access-Control-Request-Method", tc.method,
				"Access-Control-Request-Headers", tc.headers}})
			r.want(t, 200, "")
			h := r.Header()
			got := [6]string{h.Get("Access-Control-Allow-Origin"), h.Get("Access-Control-Allow-Methods"), h.Get("Access-Control-Allow-Headers"),
				h.Get("Access-Control-Expose-Headers"), h.Get("Access-Control-Max-Age"), h.Get("Access-Control-Allow-Credentials")}
			if got != tc.want {
				t.Errorf("headers %q, want %q", got, tc.want)
			}
			if v := h.Get("Vary"); v != vary {
				t.Errorf("Vary %q, want %q", v, vary)
			}
		})
	}
	forbidden := "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / " +
		"Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec."
	for _, tc := range []struct {
		target, origin, method, headers string
		status                          int
		code, text                      string
	}{
		{"/b/k", "http://other.net", "GET", "", 403, "AccessForbidden", forbidden},
		{"/b/k", "http://example.com", "PUT", "", 403, "AccessForbidden", forbidden},
		{"/b/k", "http://example.com", "GET", "X-Amz-Date,Extra-Header", 403, "AccessForbidden", forbidden},
		{"/b/k", "http://anything.net", "HEAD", "X-Amz-Date", 403, "AccessForbidden", forbidden},
		{"/b/k", "foo.suffix.get", "GET", "", 403, "AccessForbidden", forbidden},
		{"/b/k", "0start12end", "GET", "", 403, "AccessForbidden", forbidden},
		{"/b/k", "bla.prefix", "GET", "", 403, "AccessForbidden", forbidden},
		{"/b/k", "http://app.test", "PUT", "authorization", 403, "AccessForbidden", forbidden},
		{"/b/k", "", "GET", "", 400, "BadRequest", "Insufficient information. Origin request header needed."},
		{"/b/k", "http://example.com", "", "", 400, "BadRequest", "Invalid Access-Control-Request-Method: "},
		{"/b/k", "http://example.com", "get", "", 400, "BadRequest", "Invalid Access-Control-Request-Method: get"},
		{"/b/k", "http://example.com", "PATCH", "", 400, "BadRequest", "Invalid Access-Control-Request-Method: PATCH"},
		{"/b/k", "http://example.com", "GET", "Content-Encoding, Bad/Header", 400, "BadRequest", `Access-Control-Request-Headers " Bad/Header" contains invalid character.`},
		{"/b/k", "http://example.com", "GET", "x-a,,x-b", 400, "BadRequest", `Access-Control-Request-Headers "" contains invalid character.`},
		{"/nope/k", "http://example.com", "GET", "", 404, s3err.NoSuchBucket, ""},
	} {
		t.Run(tc.origin+" "+tc.method+" "+tc.headers, func(t *testing.T) {
			hdr := []string{"Access-Control-Request-Method", tc.method, "Access-Control-Request-Headers", tc.headers}
			if tc.origin != "" {
				hdr = append(hdr, "Origin", tc.origin)
			}
			r := e.do(req{method: "OPTIONS", target: tc.target, hdr: hdr})
			r.want(t, tc.status, tc.code)
			if tc.text != "" && r.message != tc.text {
				t.Errorf("message %q, want %q", r.message, tc.text)
			}
			if v := r.Header().Get("Access-Control-Allow-Origin"); v != "" {
				t.Errorf("a refused preflight answers Access-Control-Allow-Origin %q", v)
			}
		})
	}
	e.noWrites(t)
	// The guards count a preflight as a request without credentials,
	// whatever its URL's query says.
	const presigned = "http://s3.test/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=x&X-Amz-Credential=x"
	if k := e.api.Classify(httptest.NewRequest("OPTIONS", presigned, nil)); k.Credentials || k.Route != preflightOp {
		t.Errorf("Classify of a preflight: %+v", k)
	}
	if k := e.api.Classify(httptest.NewRequest("GET", presigned, nil)); !k.Credentials {
		t.Errorf("Classify of a presigned GET: %+v", k)
	}
}

// TestCORSActualRequests: every answer of a bucket with a CORS
// configuration to a request carrying Origin has Vary and, when a rule
// allows the origin and the method, the rule's headers: successes,
// errors (S3's error writer: 404, 403, 501), signed and anonymous
// requests alike. Without Origin nothing changes and the configuration is
// not even looked up.
func TestCORSActualRequests(t *testing.T) {
	e := newS3Env(t)
	e.store.add("b", "k", []byte("data"))
	e.putCORS(t, preflightRules)
	const vary = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"
	type want struct{ origin, methods, expose, creds string }
	for _, tc := range []struct {
		name   string
		r      req
		status int
		code   string
		want   want
	}{
		{"signed GET", req{method: "GET", target: "/b/k", as: aliceKey}, 200, "", want{"http://example.com", "GET, HEAD", "Content-Type, ETag", "true"}},
		{"signed HEAD", req{method: "HEAD", target: "/b/k", as: aliceKey}, 200, "", want{"http://example.com", "GET, HEAD", "Content-Type, ETag", "true"}},
		{"NoSuchKey", req{method: "GET", target: "/b/missing", as: aliceKey}, 404, s3err.NoSuchKey, want{"http://example.com", "GET, HEAD", "Content-Type, ETag", "true"}},
		{"anonymous AccessDenied", req{method: "GET", target: "/b/k"}, 403, s3err.AccessDenied, want{"http://example.com", "GET, HEAD", "Content-Type, ETag", "true"}},
		{"bad signature", req{method: "GET", target: "/b/k", as: aliceKey, secret: "wrong"}, 403, s3err.SignatureDoesNotMatch, want{"http://example.com", "GET, HEAD", "Content-Type, ETag", "true"}},
		{"not implemented", req{method: "GET", target: "/b?website", as: aliceKey}, 501, s3err.NotImplemented, want{"http://example.com", "GET, HEAD", "Content-Type, ETag", "true"}},
		{"method no rule allows", req{method: "DELETE", target: "/b/k", as: aliceKey}, 204, "", want{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.hdr = append(tc.r.hdr, "Origin", "http://example.com")
			r := e.do(tc.r)
			r.want(t, tc.status, tc.code)
			h := r.Header()
			got := want{h.Get("Access-Control-Allow-Origin"), h.Get("Access-Control-Allow-Methods"), h.Get("Access-Control-Expose-Headers"),
				h.Get("Access-Control-Allow-Credentials")}
			if got != tc.want {
				t.Errorf("CORS headers %+v, want %+v", got, tc.want)
			}
			if v := h.Get("Vary"); v != vary {
				t.Errorf("Vary %q, want %q", v, vary)
			}
		})
	}
	e.store.add("b", "k", []byte("data"))
	// The "*" rule answers "*", without credentials; a wildcard origin
	// the origin itself.
	r := e.do(req{method: "HEAD", target: "/b/k", as: aliceKey, hdr: []string{"Origin", "http://any.net"}})
	if h := r.Header(); h.Get("Access-Control-Allow-Origin") != "*" || h.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("HEAD from any origin: %v", h)
	}
	r = e.do(req{method: "GET", target: "/b/k", as: aliceKey, hdr: []string{"Origin", "foo.suffix"}})
	if h := r.Header(); h.Get("Access-Control-Allow-Origin") != "foo.suffix" || h.Get("Access-Control-Allow-Methods") != "GET" {
		t.Errorf("GET from a wildcard origin: %v", h)
	}
	// A request naming Access-Control-Request-Method is matched on it
	// (as RGW): a PUT asking for GET gets the GET rule's headers.
	r = e.do(req{method: "PUT", target: "/nope/k", hdr: []string{"Origin", "foo.suffix", "Access-Control-Request-Method", "GET"}})
	if h := r.Header(); h.Get("Access-Control-Allow-Origin") != "" || h.Get("Vary") != "" {
		t.Errorf("a missing bucket: CORS headers %v", h)
	}
	// No Origin: no CORS header, no Vary, no lookup.
	reads := e.store.CORSReads
	r = e.alice("GET", "/b/k", nil)
	r.want(t, 200, "")
	if h := r.Header(); h.Get("Vary") != "" || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("GET without Origin: %v", h)
	}
	if e.store.CORSReads != reads {
		t.Errorf("a request without Origin looked up the CORS configuration")
	}
	// A bucket without a configuration: nothing either.
	r = e.do(req{method: "GET", target: "/pub/k", hdr: []string{"Origin", "http://example.com"}})
	if h := r.Header(); h.Get("Vary") != "" || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a bucket without CORS: %v", h)
	}
}

// FuzzParseCORS: parseCORS never panics nor answers a server error; what
// it accepts encodes and parses back to the same configuration, and
// matching any request against it does not panic.
func FuzzParseCORS(f *testing.F) {
	f.Add(preflightRules, "http://example.com", "GET", "x-amz-date")
	f.Add(corsBody(corsRule("ID", "x", "AllowedOrigin", "*", "AllowedMethod", "PUT", "AllowedHeader", "*", "MaxAgeSeconds", "-1")), "a", "PUT", "b")
	f.Add(corsBody(corsRule("AllowedOrigin", "**", "AllowedMethod", "GET")), "", "", "")
	f.Fuzz(func(t *testing.T, data []byte, origin, method, header string) {
		c, err := parseCORS(data)
		if err != nil {
			if s3err.Translate(err).Status >= 500 {
				t.Fatalf("parseCORS(%q): a server error %v", data, err)
			}
			return
		}
		out, err := xml.Marshal(corsOut{Xmlns: s3NS, Rules: c.Rules})
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := parseCORS(out)
		if err != nil {
			t.Fatalf("the encoding of an accepted configuration is refused: %v\n%s", err, out)
		}
		a, _ := xml.Marshal(corsOut{Xmlns: s3NS, Rules: again.Rules})
		if string(a) != string(out) {
			t.Fatalf("round trip changed the configuration:\n%s\n%s", out, a)
		}
		if r, _ := c.Match(origin, method, []string{header}); r != nil && !meta.IsCORSMethod(method) {
			t.Fatalf("a rule matched method %q", method)
		}
	})
}

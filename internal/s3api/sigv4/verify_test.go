package sigv4

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// getObjectRequest is the documented GET Object request, signed.
func getObjectRequest() *http.Request {
	r := httptest.NewRequest("GET", "https://"+exampleHost+"/test.txt", nil)
	r.Header.Set("Range", "bytes=0-9")
	r.Header.Set("X-Amz-Content-Sha256", EmptySHA256)
	r.Header.Set("X-Amz-Date", "20130524T000000Z")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "+
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "+
		"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
	return r
}

func TestVerifyHeaderRejects(t *testing.T) {
	setAuth := func(a string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", a) }
	}
	replaceAuth := func(old, new string) func(*http.Request) {
		return func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), old, new, 1))
		}
	}
	for _, c := range []struct {
		name   string
		mutate func(*http.Request)
		opts   func(*Options)
		lookup Lookup
		want   error
		s3     string
	}{
		{name: "valid", mutate: func(*http.Request) {}},
		{name: "wrong secret", lookup: func(string) (string, error) { return "not-the-secret", nil }, want: ErrSignatureDoesNotMatch, s3: "SignatureDoesNotMatch"},
		{name: "unknown key", lookup: func(id string) (string, error) { return "", errcode.New(errcode.NotFound, "no") }, want: ErrInvalidAccessKeyID, s3: "InvalidAccessKeyId"},
		{name: "empty secret", lookup: func(string) (string, error) { return "", nil }, want: ErrInvalidAccessKeyID, s3: "InvalidAccessKeyId"},
		{name: "tampered header", mutate: func(r *http.Request) { r.Header.Set("Range", "bytes=0-99") }, want: ErrSignatureDoesNotMatch},
		{name: "tampered path", mutate: func(r *http.Request) { r.URL.Path = "/test.txu" }, want: ErrSignatureDoesNotMatch},
		{name: "tampered query", mutate: func(r *http.Request) { r.URL.RawQuery = "versionId=1" }, want: ErrSignatureDoesNotMatch},
		{name: "tampered method", mutate: func(r *http.Request) { r.Method = "DELETE" }, want: ErrSignatureDoesNotMatch},
		{name: "tampered host", mutate: func(r *http.Request) { r.Host = "otherbucket.s3.amazonaws.com" }, want: ErrSignatureDoesNotMatch},
		{name: "tampered payload hash", mutate: func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", UnsignedPayload) }, want: ErrSignatureDoesNotMatch},
		{name: "signed header missing", mutate: func(r *http.Request) { r.Header.Del("Range") }, want: ErrSignatureDoesNotMatch},
		{name: "host not signed", mutate: replaceAuth("SignedHeaders=host;", "SignedHeaders="), want: ErrAuthorizationHeaderMalformed, s3: "AuthorizationHeaderMalformed"},
		{name: "wrong region", mutate: replaceAuth("us-east-1", "eu-west-1"), want: ErrAuthorizationHeaderMalformed},
		{name: "configured region", mutate: replaceAuth("us-east-1", "eu-west-1"), opts: func(o *Options) { o.Region = "eu-west-1" }, want: ErrSignatureDoesNotMatch},
		{name: "wrong service", mutate: replaceAuth("/s3/", "/iam/"), want: ErrAuthorizationHeaderMalformed},
		{name: "credential date not request date", mutate: replaceAuth("/20130524/", "/20130523/"), want: ErrAuthorizationHeaderMalformed},
		{name: "clock 14m ahead", opts: func(o *Options) { o.Now = func() time.Time { return exampleTime.Add(14 * time.Minute) } }},
		{name: "clock 16m ahead", opts: func(o *Options) { o.Now = func() time.Time { return exampleTime.Add(16 * time.Minute) } }, want: ErrRequestTimeTooSkewed, s3: "RequestTimeTooSkewed"},
		{name: "clock 16m behind", opts: func(o *Options) { o.Now = func() time.Time { return exampleTime.Add(-16 * time.Minute) } }, want: ErrRequestTimeTooSkewed},
		{name: "custom skew", opts: func(o *Options) {
			o.MaxSkew = time.Minute
			o.Now = func() time.Time { return exampleTime.Add(2 * time.Minute) }
		}, want: ErrRequestTimeTooSkewed},
		{name: "missing content sha256", mutate: func(r *http.Request) { r.Header.Del("X-Amz-Content-Sha256") }, want: ErrMissingSecurityHeader, s3: "MissingSecurityHeader"},
		{name: "bad content sha256", mutate: func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", "abc") }, want: ErrInvalidArgument},
		{name: "sigv4a payload", mutate: func(r *http.Request) {
			r.Header.Set("X-Amz-Content-Sha256", "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD")
		}, want: ErrUnsupportedAuth},
		{name: "missing date", mutate: func(r *http.Request) { r.Header.Del("X-Amz-Date") }, want: ErrMissingDate, s3: "AccessDenied"},
		{name: "malformed date", mutate: func(r *http.Request) { r.Header.Set("X-Amz-Date", "2013-05-24T00:00:00Z") }, want: ErrMissingDate},
		{name: "unsigned amz header", mutate: func(r *http.Request) { r.Header.Set("X-Amz-Meta-Evil", "1") }, want: ErrHeadersNotSigned, s3: "AccessDenied"},
		{name: "unsigned amz header allowed", mutate: func(r *http.Request) { r.Header.Set("X-Amz-Meta-Evil", "1") }, opts: func(o *Options) { o.AllowUnsignedAmzHeaders = true }},
		{name: "unsigned other header", mutate: func(r *http.Request) { r.Header.Set("X-Forwarded-For", "10.0.0.1") }},
		{name: "security token", mutate: func(r *http.Request) { r.Header.Set("X-Amz-Security-Token", "tok") }, want: ErrUnsupportedAuth, s3: "InvalidRequest"},
		{name: "sigv2", mutate: setAuth("AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg="), want: ErrUnsupportedAuth},
		{name: "garbage", mutate: setAuth("Bearer abc"), want: ErrAuthorizationHeaderMalformed},
		{name: "two auth headers", mutate: func(r *http.Request) { r.Header.Add("Authorization", r.Header.Get("Authorization")) }, want: ErrAuthorizationHeaderMalformed},
		{name: "header and query auth", mutate: func(r *http.Request) { r.URL.RawQuery = "X-Amz-Algorithm=AWS4-HMAC-SHA256" }, want: ErrUnsupportedAuth},
		{name: "no auth", mutate: func(r *http.Request) { r.Header.Del("Authorization") }, want: ErrMissingAuth, s3: "AccessDenied"},
		{name: "sigv2 query", mutate: func(r *http.Request) {
			r.Header.Del("Authorization")
			r.URL.RawQuery = "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1141889120&Signature=vjbyPxybdZaNmGa%2ByT272YEAiv4%3D"
		}, want: ErrUnsupportedAuth},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := getObjectRequest()
			if c.mutate != nil {
				c.mutate(r)
			}
			opts := exampleOptions()
			if c.opts != nil {
				c.opts(&opts)
			}
			lookup := c.lookup
			if lookup == nil {
				lookup = exampleLookup
			}
			res, err := Verify(r, lookup, opts)
			if !errorIs(err, c.want) {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
			if !errors.Is(err, c.want) {
				t.Errorf("errors.Is(%v, %v) = false", err, c.want)
			}
			if c.want == nil {
				if res.AccessKeyID != exampleAKID {
					t.Errorf("AccessKeyID = %q", res.AccessKeyID)
				}
				return
			}
			if c.s3 != "" {
				if got := S3Code(err); got != c.s3 {
					t.Errorf("S3Code = %q, want %q", got, c.s3)
				}
			}
			if got, want := errcode.Of(err), c.want.(*s3err.Kind).Code; got != want {
				t.Errorf("errcode = %v, want %v", got, want)
			}
			if msg := errcode.Message(err); strings.Contains(msg, exampleSecret) || strings.Contains(msg, "f0e8bdb87c") && c.want == ErrSignatureDoesNotMatch {
				t.Errorf("message leaks secret material: %q", msg)
			}
		})
	}
}

func TestVerifyLookupError(t *testing.T) {
	boom := errcode.New(errcode.Unavailable, "metadata store down")
	_, err := Verify(getObjectRequest(), func(string) (string, error) { return "", boom }, exampleOptions())
	if err != boom {
		t.Fatalf("Verify = %v, want the lookup's error", err)
	}
}

func TestSignatureMismatchDetail(t *testing.T) {
	r := getObjectRequest()
	r.Header.Set("Range", "bytes=1-9")
	_, err := Verify(r, exampleLookup, exampleOptions())
	e := errcode.As(err)
	if e == nil {
		t.Fatalf("err = %v", err)
	}
	canon, _ := e.Detail["canonical_request"].(string)
	if !strings.Contains(canon, "range:bytes=1-9\n") || !strings.HasPrefix(canon, "GET\n/test.txt\n\n") {
		t.Errorf("canonical_request = %q", canon)
	}
	sts, _ := e.Detail["string_to_sign"].(string)
	if !strings.HasPrefix(sts, "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n") {
		t.Errorf("string_to_sign = %q", sts)
	}
	for k, v := range e.Detail {
		if s, ok := v.(string); ok && strings.Contains(s, exampleSecret) {
			t.Errorf("detail %s leaks the secret", k)
		}
	}
}

func TestVerifyPresignedRejects(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(q url.Values)
		path   string
		want   error
	}{
		{name: "valid", mutate: func(url.Values) {}},
		{name: "tampered expires", mutate: func(q url.Values) { q.Set("X-Amz-Expires", "172800") }, want: ErrSignatureDoesNotMatch},
		{name: "added parameter", mutate: func(q url.Values) { q.Set("response-content-type", "text/html") }, want: ErrSignatureDoesNotMatch},
		{name: "tampered path", path: "/test.tx", want: ErrSignatureDoesNotMatch},
		{name: "bad signature", mutate: func(q url.Values) { q.Set("X-Amz-Signature", strings.Repeat("0", 64)) }, want: ErrSignatureDoesNotMatch},
		{name: "uppercase signature", mutate: func(q url.Values) { q.Set("X-Amz-Signature", strings.ToUpper(q.Get("X-Amz-Signature"))) }, want: ErrAuthorizationQueryParameters},
		{name: "missing date", mutate: func(q url.Values) { q.Del("X-Amz-Date") }, want: ErrAuthorizationQueryParameters},
		{name: "missing signature", mutate: func(q url.Values) { q.Del("X-Amz-Signature") }, want: ErrAuthorizationQueryParameters},
		{name: "repeated signature", mutate: func(q url.Values) { q.Add("X-Amz-Signature", q.Get("X-Amz-Signature")) }, want: ErrAuthorizationQueryParameters},
		{name: "zero expires", mutate: func(q url.Values) { q.Set("X-Amz-Expires", "0") }, want: ErrAuthorizationQueryParameters},
		{name: "negative expires", mutate: func(q url.Values) { q.Set("X-Amz-Expires", "-5") }, want: ErrAuthorizationQueryParameters},
		{name: "expires over a week", mutate: func(q url.Values) { q.Set("X-Amz-Expires", "604801") }, want: ErrAuthorizationQueryParameters},
		{name: "expires not a number", mutate: func(q url.Values) { q.Set("X-Amz-Expires", "1d") }, want: ErrAuthorizationQueryParameters},
		{name: "wrong algorithm", mutate: func(q url.Values) { q.Set("X-Amz-Algorithm", "AWS4-HMAC-SHA512") }, want: ErrAuthorizationQueryParameters},
		{name: "bad credential", mutate: func(q url.Values) { q.Set("X-Amz-Credential", "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3") }, want: ErrAuthorizationQueryParameters},
		{name: "wrong region", mutate: func(q url.Values) {
			q.Set("X-Amz-Credential", "AKIAIOSFODNN7EXAMPLE/20130524/eu-west-1/s3/aws4_request")
		}, want: ErrAuthorizationQueryParameters},
		{name: "credential date not X-Amz-Date", mutate: func(q url.Values) {
			q.Set("X-Amz-Credential", "AKIAIOSFODNN7EXAMPLE/20130525/us-east-1/s3/aws4_request")
		}, want: ErrAuthorizationQueryParameters},
		{name: "host not signed", mutate: func(q url.Values) { q.Set("X-Amz-SignedHeaders", "range") }, want: ErrAuthorizationQueryParameters},
		{name: "malformed date", mutate: func(q url.Values) { q.Set("X-Amz-Date", "20130524") }, want: ErrAuthorizationQueryParameters},
		{name: "security token", mutate: func(q url.Values) { q.Set("X-Amz-Security-Token", "tok") }, want: ErrUnsupportedAuth},
		{name: "unknown key", mutate: func(q url.Values) {
			q.Set("X-Amz-Credential", "AKIAOTHER/20130524/us-east-1/s3/aws4_request")
		}, want: ErrInvalidAccessKeyID},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, _ := url.Parse(examplePresignedURL)
			q := u.Query()
			if c.mutate != nil {
				c.mutate(q)
			}
			u.RawQuery = q.Encode()
			if c.path != "" {
				u.Path = c.path
			}
			r := httptest.NewRequest("GET", u.String(), nil)
			_, err := Verify(r, exampleLookup, exampleOptions())
			if !errorIs(err, c.want) {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
		})
	}
	t.Run("unsigned amz header", func(t *testing.T) {
		r := httptest.NewRequest("GET", examplePresignedURL, nil)
		r.Header.Set("X-Amz-Meta-A", "b")
		if _, err := Verify(r, exampleLookup, exampleOptions()); !isKind(err, ErrHeadersNotSigned) {
			t.Fatalf("Verify = %v, want ErrHeadersNotSigned", err)
		}
		r.Header.Del("X-Amz-Meta-A")
		r.Header.Set("X-Amz-Content-Sha256", UnsignedPayload) // exempt for presigned URLs
		if _, err := Verify(r, exampleLookup, exampleOptions()); err != nil {
			t.Fatalf("Verify = %v", err)
		}
	})
}

func TestParseAuthorization(t *testing.T) {
	const sig = "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024"
	want := Authorization{
		AccessKeyID: "AKIAIOSFODNN7EXAMPLE", Date: "20130524", Region: "us-east-1", Service: "s3",
		SignedHeaders: []string{"host", "range", "x-amz-date"}, Signature: sig,
	}
	for _, h := range []string{
		"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-date, Signature=" + sig,
		"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-date,Signature=" + sig,
		"  AWS4-HMAC-SHA256   Credential = AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request ,  SignedHeaders=host;range;x-amz-date ,\tSignature=" + sig + "  ",
		"AWS4-HMAC-SHA256 Signature=" + sig + ", Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-date",
		"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-date, Signature=" + sig + ",",
	} {
		got, err := ParseAuthorization(h)
		if err != nil {
			t.Errorf("ParseAuthorization(%q): %v", h, err)
			continue
		}
		if got.String() != want.String() {
			t.Errorf("ParseAuthorization(%q) = %+v, want %+v", h, got, want)
		}
	}
	// Access key IDs may contain '/': everything before the last four parts.
	if a, err := ParseAuthorization("AWS4-HMAC-SHA256 Credential=a/b/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + sig); err != nil || a.AccessKeyID != "a/b" {
		t.Errorf("access key with slash: %+v, %v", a, err)
	}

	for _, c := range []struct{ header, msg string }{
		{"", "empty"},
		{"AWS4-HMAC-SHA256", "missing Credential"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, Signature=" + sig, "missing SignedHeaders"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=host", "missing Signature"},
		{"AWS4-HMAC-SHA256 SignedHeaders=host, Signature=" + sig, "missing Credential"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=abc", "64 lower-case hex"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + strings.ToUpper(sig), "64 lower-case hex"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3, SignedHeaders=host, Signature=" + sig, "mal-formed"},
		{"AWS4-HMAC-SHA256 Credential=/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + sig, "mal-formed"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524//s3/aws4_request, SignedHeaders=host, Signature=" + sig, "mal-formed"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws5_request, SignedHeaders=host, Signature=" + sig, "terminal"},
		{"AWS4-HMAC-SHA256 Credential=AKID/2013-05-24/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + sig, "date in the credential"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20131324/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + sig, "date in the credential"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=Host, Signature=" + sig, "lower-case"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;;range, Signature=" + sig, "empty header name"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;host, Signature=" + sig, "twice"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=, Signature=" + sig, "empty"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + sig, "appears twice"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + sig + ", Extra=1", "unknown component"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request SignedHeaders=host Signature=" + sig, "missing SignedHeaders"},
		{"AWS4-HMAC-SHA256 Credential", "key=value"},
		{"AWS4-HMAC-SHA512 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + sig, "unsupported algorithm"},
	} {
		_, err := ParseAuthorization(c.header)
		if !isKind(err, ErrAuthorizationHeaderMalformed) {
			t.Errorf("ParseAuthorization(%q) = %v, want AuthorizationHeaderMalformed", c.header, err)
			continue
		}
		if msg := errcode.Message(err); !strings.Contains(msg, c.msg) {
			t.Errorf("ParseAuthorization(%q) message %q does not say %q", c.header, msg, c.msg)
		}
	}
	for _, h := range []string{"AWS AKID:c2lnbmF0dXJl", "AWS4-ECDSA-P256-SHA256 Credential=AKID/20130524/s3/aws4_request, SignedHeaders=host, Signature=30"} {
		if _, err := ParseAuthorization(h); !isKind(err, ErrUnsupportedAuth) {
			t.Errorf("ParseAuthorization(%q) = %v, want ErrUnsupportedAuth", h, err)
		}
	}
}

func TestCanonicalURI(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "/"},
		{"/", "/"},
		{"/test$file.text", "/test%24file.text"},
		{"/a%20b/c+d", "/a%20b/c%2Bd"},
		{"/a b", "/a%20b"},
		{"/a%2Fb/c", "/a%2Fb/c"},
		{"/a%2fb", "/a%2Fb"},
		{"/%7Euser/~x", "/~user/~x"},
		{"//a/../b/./c//", "//a/../b/./c//"},
		{"/%e2%82%ac", "/%E2%82%AC"},
		{"/100%", "/100%25"},
		{"/%zz%4", "/%25zz%254"},
		{"/ü", "/%C3%BC"},
	} {
		if got := string(appendCanonicalURI(nil, c.in)); got != c.want {
			t.Errorf("canonical URI of %q = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCanonicalQuery(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"lifecycle", "lifecycle="},
		{"prefix=J&max-keys=2", "max-keys=2&prefix=J"},
		{"a=2&a=1&a=", "a=&a=1&a=2"},
		{"a=&b&c=", "a=&b=&c="},
		{"x=a+b&y=a%2Bb&z=a%20b", "x=a%20b&y=a%2Bb&z=a%20b"},
		{"delimiter=/&prefix=a/b", "delimiter=%2F&prefix=a%2Fb"},
		{"k=%e2%82%ac", "k=%E2%82%AC"},
		{"a=1&&b=2&", "a=1&b=2"},
		{"=v", "=v"},
		{"p=100%", "p=100%25"},
		{"B=1&a=1&_=1", "B=1&_=1&a=1"},
		{"k=v=w", "k=v%3Dw"},
	} {
		if got := string(appendParams(nil, canonicalParams(c.in, false))); got != c.want {
			t.Errorf("canonical query of %q = %q, want %q", c.in, got, c.want)
		}
	}
	if got, want := string(appendParams(nil, canonicalParams("a=1&X-Amz-Signature=abc&b=2", true))), "a=1&b=2"; got != want {
		t.Errorf("presigned canonical query = %q, want %q", got, want)
	}
}

func TestURIEncode(t *testing.T) {
	for _, c := range []struct {
		in          string
		encodeSlash bool
		want        string
	}{
		{"a-b_c.d~e", true, "a-b_c.d~e"},
		{"a b/c+d=é", true, "a%20b%2Fc%2Bd%3D%C3%A9"},
		{"a b/c+d=é", false, "a%20b/c%2Bd%3D%C3%A9"},
		{"*", false, "%2A"},
	} {
		if got := URIEncode(c.in, c.encodeSlash); got != c.want {
			t.Errorf("URIEncode(%q, %v) = %q, want %q", c.in, c.encodeSlash, got, c.want)
		}
	}
}

// wire sends r through an HTTP/1.1 serialization and parses it back the
// way a server does, so the test sees what Verify sees in production.
func wire(t *testing.T, r *http.Request) *http.Request {
	t.Helper()
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	sr, err := http.ReadRequest(bufio.NewReader(&b))
	if err != nil {
		t.Fatalf("ReadRequest: %v\n%s", err, b.String())
	}
	return sr
}

var roundTripKeys = []string{
	"plain.txt",
	"with space/and+plus.txt",
	"ünïcødé/日本語.bin",
	"emoji 😀.png",
	"literal%2Fpercent",
	"a//b/../c/./d",
	"tilde~star*paren(1)",
	"semi;colon=eq&amp,comma",
	"question?hash#",
	"$dollar@at:colon!bang'quote",
	"trailing/",
}

var roundTripQueries = []string{
	"",
	"versionId=3HL4kqtJlcpXroDTDmJ%2BrmSpXd3dIbrHY%2BMTRCxf3vjVBH40Nr8X8gdRQBpUMLUo",
	"list-type=2&prefix=a%20b%2Fc&delimiter=%2F",
	"uploads",
	"a=&a=1&a=&b",
	"tagging",
	"x=1+2&y=%2B",
	"response-content-disposition=attachment%3B%20filename%3D%22%C3%BC.txt%22",
}

func TestSignVerifyRoundTrip(t *testing.T) {
	const akid, secret = "CFTESTKEY0000000001", "s3cr3t/with+special=chars"
	lookup := func(id string) (string, error) {
		if id == akid {
			return secret, nil
		}
		return "", errcode.New(errcode.NotFound, "no key")
	}
	now := time.Date(2024, 2, 29, 23, 59, 30, 0, time.UTC)
	opts := Options{Region: "eu-central-1", Now: func() time.Time { return now.Add(3 * time.Second) }, Keys: NewKeyCache(8)}
	for _, key := range roundTripKeys {
		for _, query := range roundTripQueries {
			u := "http://127.0.0.1:9000/bucket/" + URIEncode(key, false)
			if query != "" {
				u += "?" + query
			}
			body := "payload of " + key
			r, err := http.NewRequest("PUT", u, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			r.Header.Set("Content-Type", "text/plain; charset=utf-8")
			r.Header.Set("X-Amz-Meta-Note", "  spaced   out  ")
			if err := SignRequest(r, akid, secret, "eu-central-1", sha256Hex([]byte(body)), now); err != nil {
				t.Fatal(err)
			}
			sr := wire(t, r)
			res, err := Verify(sr, lookup, opts)
			if err != nil {
				t.Errorf("key %q query %q: %v\n%v", key, query, err, errcode.As(err).Detail["canonical_request"])
				continue
			}
			pr, err := NewPayloadReader(sr.Body, res, sr.Header)
			if err != nil {
				t.Fatal(err)
			}
			if b, err := io.ReadAll(pr); err != nil || string(b) != body {
				t.Errorf("key %q: body %q, %v", key, b, err)
			}
			// The same request with one byte of the key changed must fail.
			r.Body, _ = r.GetBody()
			sr = wire(t, r)
			sr.URL.Path += "x"
			sr.URL.RawPath = ""
			if _, err := Verify(sr, lookup, opts); !isKind(err, ErrSignatureDoesNotMatch) {
				t.Errorf("key %q query %q: tampered path verified: %v", key, query, err)
			}
		}
	}
}

// Paths as some clients send them: an encoded slash, encoded unreserved
// characters, a literal '+', lower-case escapes. Each must verify as sent
// and fail once the path is changed to an equivalent-looking one.
func TestSignVerifyRawPaths(t *testing.T) {
	lookup := func(string) (string, error) { return "secret", nil }
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	opts := Options{Now: func() time.Time { return now }}
	for _, c := range []struct{ path, other string }{
		{"/bucket/a%2Fb", "/bucket/a/b"},
		{"/bucket/%7Etilde", "/bucket/%257Etilde"},
		{"/bucket/a+b", "/bucket/a%20b"},
		{"/bucket/caf%c3%a9", "/bucket/caf%C3%A8"},
		{"/bucket//double//slash", "/bucket/double/slash"},
		{"/bucket/./dot/../seg", "/bucket/seg"},
	} {
		r, err := http.NewRequest("GET", "http://localhost:9000"+c.path+"?list-type=2", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := SignRequest(r, "AKID", "secret", "", EmptySHA256, now); err != nil {
			t.Fatal(err)
		}
		if _, err := Verify(wire(t, r), lookup, opts); err != nil {
			t.Errorf("%s: %v", c.path, err)
		}
		sr := wire(t, r)
		u, err := url.Parse("http://localhost:9000" + c.other + "?list-type=2")
		if err != nil {
			t.Fatal(err)
		}
		sr.URL = u
		if _, err := Verify(sr, lookup, opts); !isKind(err, ErrSignatureDoesNotMatch) {
			t.Errorf("%s sent as %s: %v", c.path, c.other, err)
		}
	}
}

func TestPresignVerifyRoundTrip(t *testing.T) {
	const akid, secret = "CFTESTKEY0000000001", "another secret"
	lookup := func(string) (string, error) { return secret, nil }
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	opts := Options{Now: func() time.Time { return now.Add(time.Minute) }}
	for _, key := range roundTripKeys {
		for _, query := range roundTripQueries {
			u := "https://s3.example.com/bucket/" + URIEncode(key, false)
			if query != "" {
				u += "?" + query
			}
			for _, method := range []string{"GET", "PUT"} {
				p, err := Presign(method, u, nil, akid, secret, "", now, 15*time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				r, err := http.NewRequest(method, p, nil)
				if err != nil {
					t.Fatal(err)
				}
				res, err := Verify(wire(t, r), lookup, opts)
				if err != nil {
					t.Errorf("%s %q: %v", method, p, err)
					continue
				}
				if !res.Presigned || res.Payload != PayloadUnsigned || res.AccessKeyID != akid {
					t.Errorf("%s %q: result %+v", method, p, res)
				}
				// A GET URL is not a PUT URL.
				other := map[string]string{"GET": "PUT", "PUT": "GET"}[method]
				r2, _ := http.NewRequest(other, p, nil)
				if _, err := Verify(wire(t, r2), lookup, opts); !isKind(err, ErrSignatureDoesNotMatch) {
					t.Errorf("%s URL replayed as %s: %v", method, other, err)
				}
			}
		}
	}
}

func TestPresignWithHeaders(t *testing.T) {
	lookup := func(string) (string, error) { return "secret", nil }
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	opts := Options{Now: func() time.Time { return now }}
	h := http.Header{"Content-Type": {"image/png"}, "X-Amz-Meta-Owner": {"alice"}}
	p, err := Presign("PUT", "http://localhost/b/k.png", h, "AKID", "secret", "", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p, "X-Amz-SignedHeaders=content-type%3Bhost%3Bx-amz-meta-owner") {
		t.Errorf("presigned URL %s does not sign the headers", p)
	}
	r := httptest.NewRequest("PUT", p, nil)
	r.Header.Set("Content-Type", "image/png")
	r.Header.Set("X-Amz-Meta-Owner", "alice")
	if _, err := Verify(r, lookup, opts); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	r.Header.Set("Content-Type", "text/html")
	if _, err := Verify(r, lookup, opts); !isKind(err, ErrSignatureDoesNotMatch) {
		t.Errorf("changed header: %v", err)
	}
	r.Header.Del("Content-Type")
	if _, err := Verify(r, lookup, opts); !isKind(err, ErrSignatureDoesNotMatch) {
		t.Errorf("dropped header: %v", err)
	}

	for _, c := range []struct {
		url     string
		expires time.Duration
	}{
		{"http://localhost/b/k", 0},
		{"http://localhost/b/k", 8 * 24 * time.Hour},
		{"http://localhost/b/k", 1500 * time.Millisecond},
		{"/b/k", time.Hour},
		{"http://localhost/b/k?X-Amz-Signature=x", time.Hour},
	} {
		if _, err := Presign("GET", c.url, nil, "AKID", "secret", "", now, c.expires); err == nil {
			t.Errorf("Presign(%q, %v) succeeded", c.url, c.expires)
		}
	}
	if _, err := Presign("GET", "http://localhost/b/k", nil, "", "secret", "", now, time.Hour); err == nil {
		t.Error("Presign without access key succeeded")
	}
}

func TestVerifyDateHeader(t *testing.T) {
	// Only Date, no X-Amz-Date: the string to sign uses it in ISO 8601.
	r, _ := http.NewRequest("GET", "http://localhost/b/k", nil)
	if err := SignRequest(r, exampleAKID, exampleSecret, "", UnsignedPayload, exampleTime); err != nil {
		t.Fatal(err)
	}
	a, err := ParseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		t.Fatal(err)
	}
	// Re-sign by hand with date instead of x-amz-date.
	r.Header.Del("X-Amz-Date")
	r.Header.Set("Date", exampleTime.Format(http.TimeFormat))
	a.SignedHeaders = []string{"date", "host", "x-amz-content-sha256"}
	sig, err := sign(&canonicalInput{method: "GET", escapedPath: "/b/k", req: r, signed: a.SignedHeaders, payloadHash: UnsignedPayload}, a, exampleSecret, "20130524T000000Z")
	if err != nil {
		t.Fatal(err)
	}
	a.Signature = sig
	r.Header.Set("Authorization", a.String())
	if _, err := Verify(r, exampleLookup, exampleOptions()); err != nil {
		t.Fatalf("Verify with Date: %v", err)
	}
	r.Header.Set("Date", "yesterday")
	if _, err := Verify(r, exampleLookup, exampleOptions()); !isKind(err, ErrMissingDate) {
		t.Fatalf("Verify with bad Date: %v", err)
	}
}

func TestS3CodeForeignErrors(t *testing.T) {
	if got := S3Code(errors.New("plain")); got != "" {
		t.Errorf("S3Code(plain) = %q", got)
	}
	if got := S3Code(nil); got != "" {
		t.Errorf("S3Code(nil) = %q", got)
	}
	if got := S3Code(errcode.New(errcode.NotFound, "x")); got != "" {
		t.Errorf("S3Code(errcode without s3 code) = %q", got)
	}
}

func TestKeyCache(t *testing.T) {
	c := NewKeyCache(2)
	k1 := c.signingKey("secret", "20130524", "us-east-1", "s3")
	if want := deriveKey("secret", "20130524", "us-east-1", "s3"); k1 != want {
		t.Fatal("cached key differs from the derived one")
	}
	if got := c.signingKey("secret", "20130524", "us-east-1", "s3"); got != k1 {
		t.Fatal("second lookup differs")
	}
	if got := c.signingKey("secret2", "20130524", "us-east-1", "s3"); got == k1 {
		t.Fatal("another secret got the same key")
	}
	c.signingKey("secret", "20130525", "us-east-1", "s3")
	c.signingKey("secret", "20130526", "us-east-1", "s3")
	if got, want := c.Len(), 2; got != want {
		t.Errorf("Len = %d, want %d (bounded)", got, want)
	}
	// Ambiguous concatenations are distinct entries.
	a := c.signingKey("ab", "c", "d", "e")
	b := c.signingKey("a", "bc", "d", "e")
	if a == b {
		t.Error("(ab,c) and (a,bc) collide")
	}
	var nilCache *KeyCache
	if got := nilCache.signingKey("secret", "20130524", "us-east-1", "s3"); got != k1 {
		t.Error("nil cache derives a different key")
	}
}

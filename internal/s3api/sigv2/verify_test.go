package sigv2

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

const (
	testID     = "AKIDTEST"
	testSecret = "test/secret+key"
)

// twoKeys knows testID and another user's key, AKIDOTHER. (The access key
// ID is not in the string to sign: the secret the lookup returns for it is
// what binds the signature to the key.)
func twoKeys(id string) (string, error) {
	switch id {
	case testID:
		return testSecret, nil
	case "AKIDOTHER":
		return "another secret", nil
	}
	return "", errcode.New(errcode.NotFound, "no such key")
}

var testNow = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// signedHeaderRequest is a header-signed UploadPart with metadata, as the
// server receives it.
func signedHeaderRequest(t *testing.T) *http.Request {
	t.Helper()
	r := httptest.NewRequest("PUT", "/bucket/dir/a%20key?partNumber=2&uploadId=up1&x-id=UploadPart", strings.NewReader("body"))
	r.Host = "127.0.0.1:9000"
	r.Header.Set("Content-Type", "text/plain")
	r.Header.Set("Content-Md5", "kFcmaiXNSN2t+N0PCU36Ow==")
	r.Header.Add("X-Amz-Meta-Color", "red")
	r.Header.Add("X-Amz-Meta-Color", " blue ")
	r.Header.Set("X-Amz-Acl", "private")
	if err := SignRequest(r, "", testID, testSecret, testNow); err != nil {
		t.Fatal(err)
	}
	return r
}

type verifyCase struct {
	name   string
	mutate func(*http.Request) *http.Request
	now    time.Time // default testNow
	lookup Lookup
	vhost  string
	want   error  // nil: valid
	s3     string // S3 code, checked when set
}

func runVerifyCases(t *testing.T, base func(*testing.T) *http.Request, cases []verifyCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base(t)
			if c.mutate != nil {
				r = c.mutate(r)
			}
			now := testNow
			if !c.now.IsZero() {
				now = c.now
			}
			lookup := c.lookup
			if lookup == nil {
				lookup = lookupOf(testID, testSecret)
			}
			res, err := Verify(r, c.vhost, lookup, at(now))
			if c.want == nil {
				if err != nil {
					t.Fatalf("Verify: %v (string to sign %q)", err, errcode.As(err).Detail["string_to_sign"])
				}
				if got, want := res.AccessKeyID, testID; got != want {
					t.Errorf("AccessKeyID = %q, want %q", got, want)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if c.s3 != "" {
				if got := S3Code(err); got != c.s3 {
					t.Errorf("S3 code = %q, want %q", got, c.s3)
				}
			}
			if e := errcode.As(err); e == nil || e.Message == "" || strings.Contains(e.Message, testSecret) {
				t.Errorf("error message empty or leaking the secret: %v", err)
			}
		})
	}
}

// target replaces the request-target (what the client sent).
func target(tgt string) func(*http.Request) *http.Request {
	return func(r *http.Request) *http.Request {
		n := httptest.NewRequest(r.Method, tgt, r.Body)
		n.Host = r.Host
		n.Header = r.Header
		return n
	}
}

func setHeader(k, v string) func(*http.Request) *http.Request {
	return func(r *http.Request) *http.Request { r.Header.Set(k, v); return r }
}

func appendHeader(k, v string) func(*http.Request) *http.Request {
	return func(r *http.Request) *http.Request { r.Header.Add(k, v); return r }
}

func delHeader(k string) func(*http.Request) *http.Request {
	return func(r *http.Request) *http.Request { r.Header.Del(k); return r }
}

func replaceAuth(old, new string) func(*http.Request) *http.Request {
	return func(r *http.Request) *http.Request {
		r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), old, new, 1))
		return r
	}
}

// resign signs the request again after mutate (for checks that must not
// fail on the signature).
func resign(mutate func(*http.Request) *http.Request) func(*http.Request) *http.Request {
	return func(r *http.Request) *http.Request {
		r = mutate(r)
		if err := SignRequest(r, "", testID, testSecret, testNow); err != nil {
			panic(err)
		}
		return r
	}
}

func TestVerifyHeader(t *testing.T) {
	const tgt = "/bucket/dir/a%20key?partNumber=2&uploadId=up1&x-id=UploadPart"
	runVerifyCases(t, signedHeaderRequest, []verifyCase{
		{name: "valid"},
		{name: "unsigned parameter added", mutate: target(tgt + "&foo=bar")},
		{name: "host changed (not signed in path style)", mutate: func(r *http.Request) *http.Request { r.Host = "other:1"; return r }},
		{name: "unsigned header added", mutate: setHeader("Range", "bytes=0-1")},

		// Tampering.
		{name: "method", mutate: func(r *http.Request) *http.Request { r.Method = "POST"; return r }, want: ErrSignatureDoesNotMatch, s3: "SignatureDoesNotMatch"},
		{name: "key", mutate: target(strings.Replace(tgt, "a%20key", "a%20kez", 1)), want: ErrSignatureDoesNotMatch},
		{name: "bucket", mutate: target(strings.Replace(tgt, "/bucket/", "/bucket2/", 1)), want: ErrSignatureDoesNotMatch},
		{name: "path encoding", mutate: target(strings.Replace(tgt, "a%20key", "a+key", 1)), want: ErrSignatureDoesNotMatch},
		{name: "path as virtual host", vhost: "bucket", want: ErrSignatureDoesNotMatch},
		{name: "sub-resource value", mutate: target(strings.Replace(tgt, "partNumber=2", "partNumber=3", 1)), want: ErrSignatureDoesNotMatch},
		{name: "sub-resource removed", mutate: target(strings.Replace(tgt, "partNumber=2&", "", 1)), want: ErrSignatureDoesNotMatch},
		{name: "sub-resource added", mutate: target(tgt + "&acl"), want: ErrSignatureDoesNotMatch},
		{name: "override added", mutate: target(tgt + "&response-content-type=text%2Fhtml"), want: ErrSignatureDoesNotMatch},
		{name: "content-type", mutate: setHeader("Content-Type", "text/html"), want: ErrSignatureDoesNotMatch},
		{name: "content-type removed", mutate: delHeader("Content-Type"), want: ErrSignatureDoesNotMatch},
		{name: "content-md5", mutate: setHeader("Content-Md5", "AAAAAAAAAAAAAAAAAAAAAA=="), want: ErrSignatureDoesNotMatch},
		{name: "content-type repeated", mutate: appendHeader("Content-Type", "text/html"), want: ErrSignatureDoesNotMatch},
		{name: "amz header value", mutate: setHeader("X-Amz-Acl", "public-read"), want: ErrSignatureDoesNotMatch},
		{name: "amz header added", mutate: setHeader("X-Amz-Meta-Evil", "1"), want: ErrSignatureDoesNotMatch},
		{name: "amz header removed", mutate: delHeader("X-Amz-Acl"), want: ErrSignatureDoesNotMatch},
		{name: "amz value appended", mutate: appendHeader("X-Amz-Meta-Color", "green"), want: ErrSignatureDoesNotMatch},
		{name: "date (within skew)", mutate: setHeader("Date", testNow.Add(time.Second).Format(http.TimeFormat)), want: ErrSignatureDoesNotMatch},
		{name: "signature", mutate: replaceAuth(":", ":A"), want: ErrSignatureDoesNotMatch},
		{name: "another user's key", mutate: replaceAuth(testID, "AKIDOTHER"), lookup: twoKeys, want: ErrSignatureDoesNotMatch},
		{name: "wrong secret", lookup: lookupOf(testID, "other"), want: ErrSignatureDoesNotMatch},

		// Keys.
		{name: "unknown key", lookup: lookupOf("AKIDOTHER", testSecret), want: ErrInvalidAccessKeyID, s3: "InvalidAccessKeyId"},
		{name: "empty secret", lookup: lookupOf(testID, ""), want: ErrInvalidAccessKeyID},

		// Time.
		{name: "clock 14m ahead", now: testNow.Add(14 * time.Minute)},
		{name: "clock 16m ahead", now: testNow.Add(16 * time.Minute), want: ErrRequestTimeTooSkewed, s3: "RequestTimeTooSkewed"},
		{name: "clock 16m behind", now: testNow.Add(-16 * time.Minute), want: ErrRequestTimeTooSkewed},
		{name: "no date", mutate: delHeader("Date"), want: ErrMissingDate, s3: "AccessDenied"},
		{name: "malformed date", mutate: setHeader("Date", "yesterday"), want: ErrMissingDate},
		{name: "malformed x-amz-date wins over a valid Date", mutate: setHeader("X-Amz-Date", "yesterday"), want: ErrMissingDate},
		{name: "skewed x-amz-date wins over a valid Date", mutate: setHeader("X-Amz-Date", testNow.Add(time.Hour).Format(http.TimeFormat)), want: ErrRequestTimeTooSkewed},

		// Malformed and refused.
		{name: "no colon", mutate: setHeader("Authorization", "AWS "+testID), want: ErrMalformedHeader, s3: "InvalidArgument"},
		{name: "empty key", mutate: replaceAuth(testID, ""), want: ErrMalformedHeader},
		{name: "empty signature", mutate: setHeader("Authorization", "AWS "+testID+":"), want: ErrMalformedHeader},
		{name: "two colons", mutate: replaceAuth(":", "::"), want: ErrMalformedHeader},
		{name: "two Authorization headers", mutate: func(r *http.Request) *http.Request {
			r.Header.Add("Authorization", r.Header.Get("Authorization"))
			return r
		}, want: ErrMalformedHeader},
		{name: "and query authentication", mutate: target(tgt + "&AWSAccessKeyId=" + testID), want: ErrConflictingAuth, s3: "InvalidArgument"},
		{name: "and a SigV4 presigned URL", mutate: target(tgt + "&X-Amz-Signature=abc"), want: ErrConflictingAuth},
		{name: "session token", mutate: resign(setHeader("X-Amz-Security-Token", "tok")), want: ErrUnsupportedAuth, s3: "InvalidRequest"},
		{name: "streaming payload", mutate: resign(setHeader("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")), want: ErrInvalidArgument, s3: "InvalidArgument"},
		{name: "unsigned payload", mutate: resign(setHeader("X-Amz-Content-Sha256", UnsignedPayload))},
		{name: "no credentials", mutate: delHeader("Authorization"), want: ErrMissingAuth},
	})
}

func TestVerifyDateVariants(t *testing.T) {
	dateStr := testNow.Format(http.TimeFormat)
	amzDate := testNow.Add(-time.Second).Format(time.RFC1123Z)
	sign := func(sts string) string { return "AWS " + testID + ":" + Sign(testSecret, []byte(sts)) }
	for _, c := range []struct {
		name    string
		date    string
		amzDate string
		sts     string
		want    error
	}{
		{"Date", dateStr, "", "GET\n\n\n" + dateStr + "\n/b/k", nil},
		{"x-amz-date, as documented", "", amzDate, "GET\n\n\n\nx-amz-date:" + amzDate + "\n/b/k", nil},
		{"x-amz-date and Date, as documented", dateStr, amzDate, "GET\n\n\n\nx-amz-date:" + amzDate + "\n/b/k", nil},
		{"x-amz-date and Date, as botocore", dateStr, amzDate, "GET\n\n\n" + dateStr + "\nx-amz-date:" + amzDate + "\n/b/k", nil},
		{"x-amz-date in the Date line, as the DELETE example", dateStr, amzDate, "GET\n\n\n" + amzDate + "\n/b/k", nil},
		{"x-amz-date alone, Date line filled", "", amzDate, "GET\n\n\n" + dateStr + "\nx-amz-date:" + amzDate + "\n/b/k", ErrSignatureDoesNotMatch},
		{"Date alone, empty Date line", dateStr, "", "GET\n\n\n\n/b/k", ErrSignatureDoesNotMatch},
		{"ISO 8601 x-amz-date", "", "20261123T100000Z", "GET\n\n\n\nx-amz-date:20261123T100000Z\n/b/k", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/b/k", nil)
			if c.date != "" {
				r.Header.Set("Date", c.date)
			}
			if c.amzDate != "" {
				r.Header.Set("X-Amz-Date", c.amzDate)
			}
			r.Header.Set("Authorization", sign(c.sts))
			_, err := Verify(r, "", lookupOf(testID, testSecret), at(testNow))
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestVerifyResourceVariants(t *testing.T) {
	const date = "Mon, 23 Nov 2026 10:00:00 GMT"
	for _, c := range []struct {
		name, target, vhost, resource string
		ok                            bool
	}{
		{"bucket as sent", "/b?list-type=2", "", "/b", true},
		{"bucket with a slash, as botocore", "/b?list-type=2", "", "/b/", true},
		{"object with a slash added", "/b/k", "", "/b/k/", false},
		{"virtual host root", "/?acl", "b", "/b/?acl", true},
		{"virtual host root without slash", "/?acl", "b", "/b?acl", false},
		{"empty sub-resource value, as botocore", "/b/k?uploads=", "", "/b/k?uploads=", true},
		{"empty sub-resource value, bare", "/b/k?uploads=", "", "/b/k?uploads", true},
		{"bare sub-resource signed with =", "/b/k?uploads", "", "/b/k?uploads=", false},
		{"sorted by name", "/b/k?versionId=v&acl&uploadId=u", "", "/b/k?acl&uploadId=u&versionId=v", true},
		{"not sorted", "/b/k?versionId=v&acl", "", "/b/k?versionId=v&acl", false},
		{"decoded override", "/b/k?response-content-disposition=attachment%3B%20filename%3D%22a%2Bb%22", "", `/b/k?response-content-disposition=attachment; filename="a+b"`, true},
		{"encoded override", "/b/k?response-content-disposition=a%3Bb", "", "/b/k?response-content-disposition=a%3Bb", false},
		{"other parameters left out", "/b?prefix=a&delimiter=%2F&marker=m&max-keys=5&encoding-type=url", "", "/b", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", c.target, nil)
			r.Header.Set("Date", date)
			r.Header.Set("Authorization", "AWS "+testID+":"+Sign(testSecret, []byte("GET\n\n\n"+date+"\n"+c.resource)))
			_, err := Verify(r, c.vhost, lookupOf(testID, testSecret), at(testNow))
			if got := err == nil; got != c.ok {
				t.Fatalf("accepted = %v, want %v (err %v)", got, c.ok, err)
			}
		})
	}
}

func TestVerifyPayloadSHA256(t *testing.T) {
	const sum = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	r := httptest.NewRequest("PUT", "/b/k", strings.NewReader("test"))
	r.Header.Set("X-Amz-Content-Sha256", sum)
	if err := SignRequest(r, "", testID, testSecret, testNow); err != nil {
		t.Fatal(err)
	}
	res, err := Verify(r, "", lookupOf(testID, testSecret), at(testNow))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.PayloadSHA256, sum; got != want {
		t.Errorf("PayloadSHA256 = %q, want %q", got, want)
	}
}

// presignedRequest is a presigned GET as the server receives it.
func presignedRequest(t *testing.T, expires time.Time, query string, h http.Header) *http.Request {
	t.Helper()
	u, err := Presign("GET", "http://127.0.0.1:9000/bucket/dir/a%20key"+query, "", h, testID, testSecret, expires)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", strings.TrimPrefix(u, "http://127.0.0.1:9000"), nil)
	r.Host = "127.0.0.1:9000"
	for k, vs := range h {
		r.Header[k] = vs
	}
	return r
}

func TestVerifyPresigned(t *testing.T) {
	exp := testNow.Add(time.Hour)
	expStr := "Expires=" + itoa(exp.Unix())
	base := func(t *testing.T) *http.Request { return presignedRequest(t, exp, "?versionId=v1", nil) }
	replaceQuery := func(old, new string) func(*http.Request) *http.Request {
		return func(r *http.Request) *http.Request {
			if !strings.Contains(r.RequestURI, old) {
				panic(old + " not in " + r.RequestURI)
			}
			return target(strings.Replace(r.RequestURI, old, new, 1))(r)
		}
	}
	runVerifyCases(t, base, []verifyCase{
		{name: "valid"},
		{name: "at Expires", now: exp},
		{name: "Date header ignored", mutate: setHeader("Date", "Mon, 01 Jan 2001 00:00:00 GMT")},
		{name: "unsigned parameter added", mutate: replaceQuery("?", "?x-id=GetObject&")},
		{name: "plus left unescaped in Signature", mutate: func(r *http.Request) *http.Request {
			if !strings.Contains(r.RequestURI, "%2B") {
				panic("this case needs a signature with a '+': change the test key or clock")
			}
			return target(strings.ReplaceAll(r.RequestURI, "%2B", "+"))(r)
		}},

		{name: "expired", now: exp.Add(time.Second), want: ErrRequestExpired, s3: "AccessDenied"},
		{name: "expires tampered", mutate: replaceQuery(expStr, "Expires="+itoa(exp.Unix()+60)), want: ErrSignatureDoesNotMatch, s3: "SignatureDoesNotMatch"},
		{name: "method", mutate: func(r *http.Request) *http.Request { r.Method = "PUT"; return r }, want: ErrSignatureDoesNotMatch},
		{name: "key", mutate: replaceQuery("a%20key", "b%20key"), want: ErrSignatureDoesNotMatch},
		{name: "sub-resource value", mutate: replaceQuery("versionId=v1", "versionId=v2"), want: ErrSignatureDoesNotMatch},
		{name: "sub-resource removed", mutate: replaceQuery("versionId=v1&", ""), want: ErrSignatureDoesNotMatch},
		{name: "override added", mutate: replaceQuery("?", "?response-content-type=text%2Fhtml&"), want: ErrSignatureDoesNotMatch},
		{name: "amz header sent", mutate: setHeader("X-Amz-Acl", "public-read"), want: ErrSignatureDoesNotMatch},
		{name: "amz parameter added", mutate: replaceQuery("?", "?x-amz-acl=public-read&"), want: ErrSignatureDoesNotMatch},
		{name: "content-type parameter added", mutate: replaceQuery("?", "?content-type=text%2Fhtml&"), want: ErrSignatureDoesNotMatch},
		{name: "content-type header sent", mutate: setHeader("Content-Type", "text/html"), want: ErrSignatureDoesNotMatch},
		{name: "signature", mutate: replaceQuery("Signature=", "Signature=A"), want: ErrSignatureDoesNotMatch},
		{name: "another user's key", mutate: replaceQuery("AWSAccessKeyId="+testID, "AWSAccessKeyId=AKIDOTHER"), lookup: twoKeys, want: ErrSignatureDoesNotMatch},
		{name: "unknown key", lookup: lookupOf("AKIDOTHER", "x"), want: ErrInvalidAccessKeyID, s3: "InvalidAccessKeyId"},

		{name: "no Expires", mutate: replaceQuery("&"+expStr, ""), want: ErrMalformedQuery, s3: "AccessDenied"},
		{name: "no Signature", mutate: func(r *http.Request) *http.Request {
			i := strings.Index(r.RequestURI, "&Signature=")
			j := strings.Index(r.RequestURI[i+1:], "&") + i + 1
			return target(r.RequestURI[:i] + r.RequestURI[j:])(r)
		}, want: ErrMalformedQuery},
		{name: "no AWSAccessKeyId", mutate: replaceQuery("AWSAccessKeyId="+testID+"&", ""), want: ErrMalformedQuery},
		{name: "Expires twice", mutate: replaceQuery(expStr, expStr+"&"+expStr), want: ErrMalformedQuery},
		{name: "Expires not a number", mutate: replaceQuery(expStr, "Expires=tomorrow"), want: ErrMalformedQuery},
		{name: "Expires negative", mutate: replaceQuery(expStr, "Expires=-1"), want: ErrMalformedQuery},
		{name: "Expires with a plus sign", mutate: replaceQuery(expStr, "Expires=%2B"+itoa(exp.Unix())), want: ErrMalformedQuery},
		{name: "and a header", mutate: setHeader("Authorization", "AWS a:b"), want: ErrConflictingAuth, s3: "InvalidArgument"},
		{name: "and SigV4 parameters", mutate: replaceQuery("?", "?X-Amz-Algorithm=AWS4-HMAC-SHA256&"), want: ErrConflictingAuth},
		{name: "session token header", mutate: setHeader("X-Amz-Security-Token", "t"), want: ErrUnsupportedAuth, s3: "InvalidRequest"},
		{name: "session token parameter", mutate: replaceQuery("?", "?x-amz-security-token=t&"), want: ErrUnsupportedAuth},
	})
}

func TestVerifyPresignedExpiryBound(t *testing.T) {
	for _, c := range []struct {
		name  string
		ahead time.Duration
		want  error
	}{
		{"7 days", 7 * 24 * time.Hour, nil},
		{"7 days and a client clock 10m ahead", 7*24*time.Hour + 10*time.Minute, nil},
		{"8 days", 8 * 24 * time.Hour, ErrExpiresTooFar},
		{"100 years", 100 * 365 * 24 * time.Hour, ErrExpiresTooFar},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := presignedRequest(t, testNow.Add(c.ahead), "", nil)
			_, err := Verify(r, "", lookupOf(testID, testSecret), at(testNow))
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

// TestVerifyPresignedQueryHeaders checks botocore's form: Content-Type and
// x-amz-* as query parameters are signed in place of the headers and
// returned for the caller to act on.
func TestVerifyPresignedQueryHeaders(t *testing.T) {
	exp := testNow.Add(time.Hour)
	h := http.Header{"Content-Type": {"text/plain"}, "X-Amz-Meta-Color": {"red"}, "Content-Md5": {"kFcmaiXNSN2t+N0PCU36Ow=="}}
	signed, err := Presign("PUT", "http://h/b/k", "", h, testID, testSecret, exp)
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(signed, "http://h")
	inQuery := path + "&content-type=text%2Fplain&x-amz-meta-color=red&Content-MD5=kFcmaiXNSN2t%2BN0PCU36Ow%3D%3D"
	for _, c := range []struct {
		name    string
		target  string
		header  http.Header
		want    error
		hoisted http.Header
	}{
		{"as headers", path, h, nil, nil},
		{"as query parameters", inQuery, nil, nil, h},
		{"both, same values", inQuery, h, nil, nil},
		{"content-type in both, header differs", inQuery, http.Header{"Content-Type": {"text/html"}}, ErrSignatureDoesNotMatch, nil},
		{"meta in both, header differs", inQuery, http.Header{"X-Amz-Meta-Color": {"blue"}}, ErrSignatureDoesNotMatch, nil},
		{"meta parameter changed", strings.Replace(inQuery, "color=red", "color=blue", 1), nil, ErrSignatureDoesNotMatch, nil},
		{"meta parameter missing", strings.Replace(inQuery, "&x-amz-meta-color=red", "", 1), nil, ErrSignatureDoesNotMatch, nil},
		{"extra meta parameter", inQuery + "&x-amz-meta-size=big", nil, ErrSignatureDoesNotMatch, nil},
		{"half as header", strings.Replace(inQuery, "&x-amz-meta-color=red", "", 1), http.Header{"X-Amz-Meta-Color": {"red"}}, nil,
			http.Header{"Content-Type": {"text/plain"}, "Content-Md5": {"kFcmaiXNSN2t+N0PCU36Ow=="}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("PUT", c.target, nil)
			for k, vs := range c.header {
				r.Header[k] = vs
			}
			res, err := Verify(r, "", lookupOf(testID, testSecret), at(testNow))
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if err != nil {
				return
			}
			if got, want := len(res.QueryHeaders), len(c.hoisted); got != want {
				t.Fatalf("QueryHeaders = %v, want %v", res.QueryHeaders, c.hoisted)
			}
			for k, vs := range c.hoisted {
				if got := strings.Join(res.QueryHeaders[k], ","); got != strings.Join(vs, ",") {
					t.Errorf("QueryHeaders[%s] = %q, want %q", k, got, vs)
				}
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

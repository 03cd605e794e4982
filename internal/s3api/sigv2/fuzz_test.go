package sigv2

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// FuzzParseV2 feeds the Authorization header and query parsers, and Verify
// with both, arbitrary input: nothing panics, every error carries an S3
// code, and what parses is well formed and round-trips.
func FuzzParseV2(f *testing.F) {
	for _, s := range [][2]string{
		{"AWS AKIAIOSFODNN7EXAMPLE:qgk2+6Sv9/oM7G3qLEjTH1a1l1g=", ""},
		{"AWS  AKID:sig", "acl&versionId=1"},
		{"AWS AKID", "uploads="},
		{"AWS :", "response-content-type=a%3Bb&partNumber=1&uploadId=x"},
		{"AWS a:b:c", "x-id=GetObject"},
		{"AWS4-HMAC-SHA256 Credential=a/b/c", ""},
		{"", "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620"},
		{"", "AWSAccessKeyId=AKID&Signature=a+b&Expires=99999999999999999999"},
		{"", "AWSAccessKeyId=AKID&Signature=s&Expires=-1&content-type=text%2Fplain&x-amz-meta-a=b&X-AMZ-META-A=c"},
		{"", "Signature=&AWSAccessKeyId=&Expires="},
		{"", "AWSAccessKeyId=a&Signature=b&Expires=1&X-Amz-Signature=c"},
		{"", "AWSAccessKeyId=a&Signature=b&Expires=1&x-amz-security-token=t"},
		{"", "%zz=%&;=&&="},
	} {
		f.Add(s[0], s[1])
	}
	now := time.Unix(1175139620, 0).Add(-time.Hour)
	f.Fuzz(func(t *testing.T, header, rawQuery string) {
		if a, err := ParseAuthorization(header); err != nil {
			if S3Code(err) == "" {
				t.Fatalf("ParseAuthorization error without S3 code: %v", err)
			}
		} else {
			if !validToken(a.AccessKeyID) || !validToken(a.Signature) {
				t.Fatalf("accepted %q as %+v", header, a)
			}
			b, err := ParseAuthorization(a.String())
			if err != nil || b != a {
				t.Fatalf("round trip of %+v: %+v, %v", a, b, err)
			}
		}

		query, _ := url.ParseQuery(rawQuery)
		if p, err := ParsePresigned(query); err != nil {
			if S3Code(err) == "" {
				t.Fatalf("ParsePresigned error without S3 code: %v", err)
			}
		} else {
			secs, err := strconv.ParseInt(p.ExpiresRaw, 10, 64)
			if err != nil || !p.Expires.Equal(time.Unix(secs, 0)) || !validToken(p.AccessKeyID) || !validToken(p.Signature) {
				t.Fatalf("accepted %q as %+v", rawQuery, p)
			}
		}

		r := &http.Request{
			Method:     "GET",
			URL:        &url.URL{Path: "/b/k", RawQuery: rawQuery},
			RequestURI: "/b/k?" + rawQuery,
			Host:       "127.0.0.1",
			Header:     http.Header{"Date": {now.Format(http.TimeFormat)}},
		}
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		lookup := func(string) (string, error) { return docSecret, nil }
		res, err := Verify(r, "", lookup, at(now))
		if err != nil {
			if S3Code(err) == "" {
				t.Fatalf("Verify error without S3 code: %v", err)
			}
			return
		}
		if res.AccessKeyID == "" {
			t.Fatalf("verified without an access key: %+v", res)
		}
	})
}

package s3api

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// TestReadXMLVerifiesWholeBody: the body is verified to its last byte
// before it is parsed, whatever the parser would have needed.
func TestReadXMLVerifiesWholeBody(t *testing.T) {
	const signed = `<Delete><Object><Key>a</Key></Object></Delete>`
	sum := sha256.Sum256([]byte(signed))
	md := md5.Sum([]byte(signed))
	tests := []struct {
		name   string
		body   string
		sha256 []byte   // signed x-amz-content-sha256 (nil: unsigned)
		hdr    []string // header pairs
		want   string   // S3 error code, "" for success
	}{
		{"signed and intact", signed, sum[:], nil, ""},
		{"same length, tampered", strings.Replace(signed, "<Key>a<", "<Key>b<", 1), sum[:], nil, s3err.XAmzContentSHA256Mismatch},
		{"signed body plus trailing root", signed + `<Delete><Object><Key>b</Key></Object></Delete>`, sum[:], nil, s3err.XAmzContentSHA256Mismatch},
		{"signed body plus whitespace", signed + "\n", sum[:], nil, s3err.XAmzContentSHA256Mismatch},
		{"unsigned with trailing garbage", signed + "junk", nil, nil, s3err.MalformedXML},
		{"content-md5 intact", signed, nil, []string{"Content-MD5", base64.StdEncoding.EncodeToString(md[:])}, ""},
		{"content-md5 mismatch", signed + " ", nil, []string{"Content-MD5", base64.StdEncoding.EncodeToString(md[:])}, s3err.BadDigest},
		{"checksum mismatch", signed, nil, []string{"X-Amz-Checksum-Crc32", "AAAAAA=="}, s3err.BadDigest},
		{"too large", "<Delete>" + strings.Repeat(" ", 200) + "</Delete>", nil, nil, s3err.EntityTooLarge},
	}
	api := New(Services{}, testConfig(func(c *Config) { c.MaxXMLBody = 128 }), nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/b?delete", strings.NewReader(tc.body))
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				r.Header.Set(tc.hdr[i], tc.hdr[i+1])
			}
			q := &request{Request: r}
			q.pay.sha256 = tc.sha256
			var v deleteRequest
			err := api.readXML(q, &v)
			got := ""
			if err != nil {
				got = s3err.Translate(err).Code
			}
			if got != tc.want {
				t.Fatalf("got %q (%v), want %q", got, err, tc.want)
			}
			if err == nil && (len(v.Objects) != 1 || v.Objects[0].Key != "a") {
				t.Errorf("parsed %+v", v)
			}
		})
	}
}

// TestReadXMLShortBody: a body shorter than its Content-Length is
// IncompleteBody, never parsed.
func TestReadXMLShortBody(t *testing.T) {
	api := New(Services{}, testConfig(nil), nil)
	r := httptest.NewRequest("POST", "/b?delete", strings.NewReader(`<Delete></Delete>`))
	r.ContentLength = 100
	var v deleteRequest
	if got, want := s3err.Translate(api.readXML(&request{Request: r}, &v)).Code, s3err.IncompleteBody; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

package s3api

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/object/objectfake"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
)

// The S3 behaviour of the handlers, in-process over a fake of the services
// (fake_test.go): conditionals, ranges, error mapping, SSE and checksum
// headers, the refused-header table and bad input, each proving that a
// refused request reaches no write. test/e2e and test/s3compat prove the
// same behaviour through the binary and real clients.

func hexSHA256(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func xmlUnmarshal(b []byte, v any) error { return xml.Unmarshal(b, v) }

func md5B64(b []byte) string { s := md5.Sum(b); return base64.StdEncoding.EncodeToString(s[:]) }

func crc32B64(b []byte) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b)))
}

// want checks a response's status and S3 error code ("" for none).
func (r s3Result) want(t *testing.T, status int, code string) {
	t.Helper()
	if r.Code != status || r.code != code {
		t.Errorf("got %d %q (%s), want %d %q", r.Code, r.code, r.message, status, code)
	}
}

// noWrites fails unless the store saw no write.
func (e *s3Env) noWrites(t *testing.T) {
	t.Helper()
	if len(e.store.Writes) > 0 {
		t.Errorf("a refused request wrote: %v", e.store.Writes)
	}
}

var etagOf = func(b []byte) string { s := md5.Sum(b); return `"` + hex.EncodeToString(s[:]) + `"` }

// TestGetConditionals: If-Match, If-None-Match, If-Modified-Since and
// If-Unmodified-Since on GetObject and HeadObject, in RFC 9110's order.
func TestGetConditionals(t *testing.T) {
	etag := etagOf(testData)
	before, at, after := testMod.Add(-time.Hour).Format(http.TimeFormat), testMod.Format(http.TimeFormat), testMod.Add(time.Hour).Format(http.TimeFormat)
	for _, tc := range []struct {
		name   string
		hdr    []string
		status int
		code   string
	}{
		{"none", nil, 200, ""},
		{"If-Match the ETag", []string{"If-Match", etag}, 200, ""},
		{"If-Match unquoted", []string{"If-Match", strings.Trim(etag, `"`)}, 200, ""},
		{"If-Match *", []string{"If-Match", "*"}, 200, ""},
		{"If-Match in a list", []string{"If-Match", `"x", ` + etag}, 200, ""},
		{"If-Match another", []string{"If-Match", `"0123"`}, 412, s3err.PreconditionFailed},
		{"If-None-Match the ETag", []string{"If-None-Match", etag}, 304, ""},
		{"If-None-Match *", []string{"If-None-Match", "*"}, 304, ""},
		{"If-None-Match another", []string{"If-None-Match", `"0123"`}, 200, ""},
		{"If-Modified-Since the time", []string{"If-Modified-Since", at}, 304, ""},
		{"If-Modified-Since later", []string{"If-Modified-Since", after}, 304, ""},
		{"If-Modified-Since before", []string{"If-Modified-Since", before}, 200, ""},
		{"If-Modified-Since unparsable", []string{"If-Modified-Since", "yesterday"}, 200, ""},
		{"If-Unmodified-Since before", []string{"If-Unmodified-Since", before}, 412, s3err.PreconditionFailed},
		{"If-Unmodified-Since the time", []string{"If-Unmodified-Since", at}, 200, ""},
		{"If-Match wins over If-Unmodified-Since", []string{"If-Match", etag, "If-Unmodified-Since", before}, 200, ""},
		{"If-None-Match wins over If-Modified-Since", []string{"If-None-Match", `"0123"`, "If-Modified-Since", at}, 200, ""},
		{"If-Match fails before If-None-Match", []string{"If-Match", `"0123"`, "If-None-Match", etag}, 412, s3err.PreconditionFailed},
	} {
		for _, method := range []string{"GET", "HEAD"} {
			t.Run(method+" "+tc.name, func(t *testing.T) {
				e := newS3Env(t)
				e.store.add("b", "k", testData)
				r := e.alice(method, "/b/k", nil, tc.hdr...)
				if method == "HEAD" {
					tc.code = "" // no body
				}
				r.want(t, tc.status, tc.code)
				wantBody := method == "GET" && tc.status != 304
				if got := r.Body.Len() > 0; got != wantBody {
					t.Errorf("body of %d bytes", r.Body.Len())
				}
				if tc.status == 200 && method == "GET" && !bytes.Equal(r.Body.Bytes(), testData) {
					t.Errorf("body %q", r.Body)
				}
				switch tc.status {
				case 200, 304:
					if r.Header().Get("ETag") != etag || r.Header().Get("Last-Modified") != at {
						t.Errorf("validators: ETag %q Last-Modified %q", r.Header().Get("ETag"), r.Header().Get("Last-Modified"))
					}
				case 412:
					if r.Header().Get("ETag") != "" || r.Header().Get("Content-Length") == "100" {
						t.Errorf("412 with the object's headers: %v", r.Header())
					}
				}
				if tc.status == 200 && (r.Header().Get("Content-Length") != "100" || r.Header().Get("Accept-Ranges") != "bytes" || r.Header().Get("Content-Type") != "text/plain") {
					t.Errorf("headers %v", r.Header())
				}
			})
		}
	}
}

// TestGetRanges: Range, If-Range and partNumber on GetObject.
func TestGetRanges(t *testing.T) {
	etag := etagOf(testData)
	for _, tc := range []struct {
		name         string
		target       string
		hdr          []string
		status       int
		code         string
		contentRange string
		from, to     int // the bytes sent
	}{
		{"first bytes", "/b/k", []string{"Range", "bytes=10-19"}, 206, "", "bytes 10-19/100", 10, 20},
		{"one byte", "/b/k", []string{"Range", "bytes=0-0"}, 206, "", "bytes 0-0/100", 0, 1},
		{"suffix", "/b/k", []string{"Range", "bytes=-7"}, 206, "", "bytes 93-99/100", 93, 100},
		{"suffix longer than the object", "/b/k", []string{"Range", "bytes=-500"}, 206, "", "bytes 0-99/100", 0, 100},
		{"open-ended", "/b/k", []string{"Range", "bytes=90-"}, 206, "", "bytes 90-99/100", 90, 100},
		{"past the end, clipped", "/b/k", []string{"Range", "bytes=95-1000"}, 206, "", "bytes 95-99/100", 95, 100},
		{"beyond the end", "/b/k", []string{"Range", "bytes=200-300"}, 416, s3err.InvalidRange, "bytes */100", 0, 0},
		{"starting at the end", "/b/k", []string{"Range", "bytes=100-"}, 416, s3err.InvalidRange, "bytes */100", 0, 0},
		{"malformed: ignored", "/b/k", []string{"Range", "bytes=9-1"}, 200, "", "", 0, 100},
		{"other unit: ignored", "/b/k", []string{"Range", "items=1-2"}, 200, "", "", 0, 100},
		// Not RFC 9110's syntax (no whitespace inside it): S3 ignores it.
		{"space before a suffix: ignored", "/b/k", []string{"Range", "bytes= -1"}, 200, "", "", 0, 100},
		{"space inside: ignored", "/b/k", []string{"Range", "bytes=0 -1"}, 200, "", "", 0, 100},
		{"negative end: ignored", "/b/k", []string{"Range", "bytes=0--1"}, 200, "", "", 0, 100},
		{"If-Range the ETag", "/b/k", []string{"Range", "bytes=0-9", "If-Range", etag}, 206, "", "bytes 0-9/100", 0, 10},
		{"If-Range the date", "/b/k", []string{"Range", "bytes=0-9", "If-Range", testMod.Format(http.TimeFormat)}, 206, "", "bytes 0-9/100", 0, 10},
		{"If-Range stale", "/b/k", []string{"Range", "bytes=0-9", "If-Range", `"stale"`}, 200, "", "", 0, 100},
		// A simple object is its own part 1: a range of it, without a
		// part count (S3's answer); an empty one is answered whole.
		{"partNumber 1 of a simple object", "/b/k?partNumber=1", nil, 206, "", "bytes 0-99/100", 0, 100},
		{"partNumber 1 of an empty object", "/b/empty?partNumber=1", nil, 200, "", "", 0, 0},
		{"partNumber 2 of a simple object", "/b/k?partNumber=2", nil, 416, s3err.InvalidPartNumber, "", 0, 0},
		{"partNumber 0", "/b/k?partNumber=0", nil, 400, s3err.InvalidArgument, "", 0, 0},
		{"partNumber 10001", "/b/k?partNumber=10001", nil, 400, s3err.InvalidArgument, "", 0, 0},
		// Checked before the key is looked up, as S3 does.
		{"partNumber -3 of a missing key", "/b/nokey?partNumber=-3", nil, 400, s3err.InvalidArgument, "", 0, 0},
		{"partNumber and Range", "/b/k?partNumber=1", []string{"Range", "bytes=0-1"}, 400, s3err.InvalidRequest, "", 0, 0},
		{"partNumber 2 of three parts", "/b/mp?partNumber=2", nil, 206, "", "bytes 40-69/100", 40, 70},
		{"partNumber 4 of three parts", "/b/mp?partNumber=4", nil, 416, s3err.InvalidPartNumber, "", 0, 0},
		{"Range over parts", "/b/mp", []string{"Range", "bytes=35-44"}, 206, "", "bytes 35-44/100", 35, 45},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newS3Env(t)
			e.store.add("b", "k", testData)
			e.store.add("b", "empty", nil)
			e.store.add("b", "mp", testData, func(o *meta.Object) {
				o.ETag = "abc-3"
				o.Parts = []meta.ObjectPart{{Size: 40}, {Size: 30}, {Size: 30}}
			})
			r := e.alice("GET", tc.target, nil, tc.hdr...)
			r.want(t, tc.status, tc.code)
			if got := r.Header().Get("Content-Range"); got != tc.contentRange {
				t.Errorf("Content-Range %q, want %q", got, tc.contentRange)
			}
			if tc.status < 300 {
				if !bytes.Equal(r.Body.Bytes(), testData[tc.from:tc.to]) || r.Header().Get("Content-Length") != fmt.Sprint(tc.to-tc.from) {
					t.Errorf("sent %q (Content-Length %s), want bytes %d-%d", r.Body, r.Header().Get("Content-Length"), tc.from, tc.to)
				}
			}
			if strings.Contains(tc.target, "partNumber") && tc.status < 300 {
				want := ""
				if strings.Contains(tc.target, "/mp") {
					want = "3"
				}
				if got := r.Header().Get("X-Amz-Mp-Parts-Count"); got != want {
					t.Errorf("x-amz-mp-parts-count %q, want %s", got, want)
				}
			}
		})
	}
	t.Run("HEAD ignores Range", func(t *testing.T) {
		e := newS3Env(t)
		e.store.add("b", "k", testData)
		r := e.alice("HEAD", "/b/k", nil, "Range", "bytes=0-9")
		r.want(t, 200, "")
		if r.Header().Get("Content-Length") != "100" || r.Body.Len() != 0 {
			t.Errorf("HEAD with Range: %v, %d bytes", r.Header(), r.Body.Len())
		}
	})
	t.Run("response overrides", func(t *testing.T) {
		e := newS3Env(t)
		e.store.add("pub", "k", testData)
		r := e.alice("GET", "/pub/k?response-content-type=image/png&response-cache-control=no-store&response-content-disposition=attachment", nil)
		r.want(t, 200, "")
		for h, v := range map[string]string{"Content-Type": "image/png", "Cache-Control": "no-store", "Content-Disposition": "attachment"} {
			if got := r.Header().Get(h); got != v {
				t.Errorf("%s %q, want %q", h, got, v)
			}
		}
		anon := e.do(req{method: "GET", target: "/pub/k?response-content-type=image/png"})
		anon.want(t, 400, s3err.InvalidRequest)
		e.do(req{method: "GET", target: "/pub/k"}).want(t, 200, "")
	})
}

// TestWriteConditionals: If-None-Match and If-Match on PutObject,
// CopyObject, CompleteMultipartUpload and DeleteObject become the write's
// condition; what S3 does not define on writes is refused.
func TestWriteConditionals(t *testing.T) {
	etag := etagOf(testData)
	complete := []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"e"</ETag></Part></CompleteMultipartUpload>`)
	copySrc := []string{"X-Amz-Copy-Source", "/b/src"}
	for _, tc := range []struct {
		name         string
		method, path string
		body         []byte
		hdr          []string
		status       int
		code         string
		cond         meta.Cond // what the service was asked for (writes only)
	}{
		{"PutObject If-None-Match * on a key in use", "PUT", "/b/k", []byte("new"), []string{"If-None-Match", "*"}, 412, s3err.PreconditionFailed, meta.Cond{IfNoneMatch: true}},
		{"PutObject If-None-Match * on a new key", "PUT", "/b/new", []byte("new"), []string{"If-None-Match", "*"}, 200, "", meta.Cond{IfNoneMatch: true}},
		{"PutObject If-Match the ETag", "PUT", "/b/k", []byte("new"), []string{"If-Match", etag}, 200, "", meta.Cond{IfMatch: strings.Trim(etag, `"`)}},
		{"PutObject If-Match another", "PUT", "/b/k", []byte("new"), []string{"If-Match", `"0123"`}, 412, s3err.PreconditionFailed, meta.Cond{IfMatch: "0123"}},
		{"PutObject If-Match a missing key", "PUT", "/b/new", []byte("new"), []string{"If-Match", etag}, 404, s3err.NoSuchKey, meta.Cond{IfMatch: strings.Trim(etag, `"`)}},
		{"PutObject If-None-Match the ETag", "PUT", "/b/k", []byte("new"), []string{"If-None-Match", etag}, 412, s3err.PreconditionFailed, meta.Cond{IfNoneMatchETag: strings.Trim(etag, `"`)}},
		{"PutObject If-None-Match another ETag", "PUT", "/b/k", []byte("new"), []string{"If-None-Match", `"0123"`}, 200, "", meta.Cond{IfNoneMatchETag: "0123"}},
		{"PutObject If-None-Match an ETag on a new key", "PUT", "/b/new", []byte("new"), []string{"If-None-Match", etag}, 200, "", meta.Cond{IfNoneMatchETag: strings.Trim(etag, `"`)}},
		{"CopyObject If-None-Match * on a key in use", "PUT", "/b/k", nil, append([]string{"If-None-Match", "*"}, copySrc...), 412, s3err.PreconditionFailed, meta.Cond{IfNoneMatch: true}},
		{"CopyObject If-Match the ETag", "PUT", "/b/k", nil, append([]string{"If-Match", etag}, copySrc...), 200, "", meta.Cond{IfMatch: strings.Trim(etag, `"`)}},
		{"CopyObject If-None-Match the ETag", "PUT", "/b/k", nil, append([]string{"If-None-Match", etag}, copySrc...), 412, s3err.PreconditionFailed, meta.Cond{IfNoneMatchETag: strings.Trim(etag, `"`)}},
		{"Complete If-None-Match * on a key in use", "POST", "/b/k?uploadId=up1", complete, []string{"If-None-Match", "*"}, 412, s3err.PreconditionFailed, meta.Cond{IfNoneMatch: true}},
		{"Complete If-Match another", "POST", "/b/k?uploadId=up1", complete, []string{"If-Match", `"0123"`}, 412, s3err.PreconditionFailed, meta.Cond{IfMatch: "0123"}},
		{"DeleteObject If-Match another", "DELETE", "/b/k", nil, []string{"If-Match", `"0123"`}, 412, s3err.PreconditionFailed, meta.Cond{IfMatch: "0123"}},
		{"DeleteObject If-Match the ETag", "DELETE", "/b/k", nil, []string{"If-Match", etag}, 204, "", meta.Cond{IfMatch: strings.Trim(etag, `"`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newS3Env(t)
			e.store.add("b", "k", testData)
			e.store.add("b", "src", []byte("source"))
			e.store.Uploads["up1"] = meta.Upload{ID: "up1", Bucket: "b", Key: "k", InitiatorID: alice}
			r := e.alice(tc.method, tc.path, tc.body, tc.hdr...)
			r.want(t, tc.status, tc.code)
			var got meta.Cond
			switch {
			case strings.Contains(tc.name, "PutObject"):
				got = e.store.LastPut.Cond
			case strings.Contains(tc.name, "CopyObject"):
				got = e.store.LastCopy.Cond
			default:
				got = e.store.LastCond
			}
			if got != tc.cond {
				t.Errorf("condition %+v, want %+v", got, tc.cond)
			}
			if tc.status >= 300 {
				e.noWrites(t)
				if o, _ := e.store.Current("b", "k"); !bytes.Equal(e.store.Objects["b/k"].Data, testData) || o.ETag != strings.Trim(etag, `"`) {
					t.Errorf("b/k changed")
				}
			}
		})
	}
}

// TestCopySource: x-amz-copy-source and its conditions on CopyObject and
// UploadPartCopy.
func TestCopySource(t *testing.T) {
	etag := etagOf([]byte("source"))
	before, after := testMod.Add(-time.Hour).Format(http.TimeFormat), testMod.Add(time.Hour).Format(http.TimeFormat)
	for _, tc := range []struct {
		name   string
		path   string
		hdr    []string
		status int
		code   string
		part   string // the bytes an UploadPartCopy copies
	}{
		{"plain", "/b/dst", []string{"X-Amz-Copy-Source", "b/src"}, 200, "", ""},
		{"leading slash, encoded", "/b/dst", []string{"X-Amz-Copy-Source", "/b/%73rc"}, 200, "", ""},
		{"version null", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src?versionId=null"}, 200, "", ""},
		{"malformed version", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src?versionId=v2"}, 400, s3err.InvalidArgument, ""},
		{"another version", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src?versionId=0123456789abcdef0123456789abcdef"}, 404, s3err.NoSuchVersion, ""},
		{"no key", "/b/dst", []string{"X-Amz-Copy-Source", "/b"}, 400, s3err.InvalidArgument, ""},
		{"bad escape", "/b/dst", []string{"X-Amz-Copy-Source", "/b/%zz"}, 400, s3err.InvalidArgument, ""},
		{"missing source", "/b/dst", []string{"X-Amz-Copy-Source", "/b/nope"}, 404, s3err.NoSuchKey, ""},
		{"missing source bucket", "/b/dst", []string{"X-Amz-Copy-Source", "/nobucket/src"}, 404, s3err.NoSuchBucket, ""},
		{"another user's source", "/b/dst", []string{"X-Amz-Copy-Source", "/bb/src"}, 403, s3err.AccessDenied, ""},
		{"if-match", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-If-Match", etag}, 200, "", ""},
		{"if-match another", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-If-Match", `"0123"`}, 412, s3err.PreconditionFailed, ""},
		{"if-none-match", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-If-None-Match", etag}, 412, s3err.PreconditionFailed, ""},
		{"if-none-match another", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-If-None-Match", `"0123"`}, 200, "", ""},
		{"if-unmodified-since before", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-If-Unmodified-Since", before}, 412, s3err.PreconditionFailed, ""},
		{"if-unmodified-since after", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-If-Unmodified-Since", after}, 200, "", ""},
		{"if-modified-since after", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-If-Modified-Since", after}, 412, s3err.PreconditionFailed, ""},
		{"if-modified-since before", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-If-Modified-Since", before}, 200, "", ""},
		{"if-match wins over if-unmodified-since", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src",
			"X-Amz-Copy-Source-If-Match", etag, "X-Amz-Copy-Source-If-Unmodified-Since", before}, 200, "", ""},
		{"if-none-match wins over if-modified-since", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src",
			"X-Amz-Copy-Source-If-None-Match", `"0123"`, "X-Amz-Copy-Source-If-Modified-Since", after}, 200, "", ""},
		{"onto itself", "/b/src", []string{"X-Amz-Copy-Source", "/b/src"}, 400, s3err.InvalidRequest, ""},
		{"onto itself, COPY", "/b/src", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Metadata-Directive", "COPY"}, 400, s3err.InvalidRequest, ""},
		{"onto itself, REPLACE", "/b/src", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Metadata-Directive", "replace"}, 200, "", ""},
		{"unknown directive", "/b/dst", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Metadata-Directive", "MERGE"}, 400, s3err.InvalidArgument, ""},
		{"into another user's bucket", "/bb/dst", []string{"X-Amz-Copy-Source", "/b/src"}, 403, s3err.AccessDenied, ""},
		// UploadPartCopy.
		{"part", "/b/k?partNumber=1&uploadId=up1", []string{"X-Amz-Copy-Source", "/b/src"}, 200, "", "source"},
		{"part range", "/b/k?partNumber=1&uploadId=up1", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-Range", "bytes=1-3"}, 200, "", "our"},
		{"part range to the end", "/b/k?partNumber=1&uploadId=up1", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-Range", "bytes=1-5"}, 200, "", "ource"},
		// S3 copies exactly the range asked for, or refuses it ("Range
		// specified is not valid for source object of size").
		{"part range past the end", "/b/k?partNumber=1&uploadId=up1", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-Range", "bytes=1-6"}, 400, s3err.InvalidArgument, ""},
		{"part range open-ended", "/b/k?partNumber=1&uploadId=up1", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-Range", "bytes=1-"}, 400, s3err.InvalidArgument, ""},
		{"part suffix range", "/b/k?partNumber=1&uploadId=up1", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-Range", "bytes=-3"}, 400, s3err.InvalidArgument, ""},
		{"part range beyond", "/b/k?partNumber=1&uploadId=up1", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-Range", "bytes=10-20"}, 400, s3err.InvalidArgument, ""},
		{"part if-match another", "/b/k?partNumber=1&uploadId=up1", []string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-If-Match", `"0123"`}, 412, s3err.PreconditionFailed, ""},
		{"part number 0", "/b/k?partNumber=0&uploadId=up1", []string{"X-Amz-Copy-Source", "/b/src"}, 400, s3err.InvalidArgument, ""},
		{"part of no upload", "/b/k?partNumber=1&uploadId=nope", []string{"X-Amz-Copy-Source", "/b/src"}, 404, s3err.NoSuchUpload, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newS3Env(t)
			e.store.add("b", "src", []byte("source"), func(o *meta.Object) { o.Metadata = map[string]string{"color": "blue"} })
			e.store.add("bb", "src", []byte("bob's"))
			e.store.Uploads["up1"] = meta.Upload{ID: "up1", Bucket: "b", Key: "k", InitiatorID: alice}
			r := e.alice("PUT", tc.path, nil, tc.hdr...)
			r.want(t, tc.status, tc.code)
			if tc.status >= 300 {
				e.noWrites(t)
				return
			}
			var res struct {
				XMLName xml.Name
				ETag    string `xml:"ETag"`
			}
			if err := xml.Unmarshal(r.Body.Bytes(), &res); err != nil || res.ETag == "" {
				t.Fatalf("result %s: %v", r.Body, err)
			}
			if strings.Contains(tc.path, "partNumber") {
				if res.XMLName.Local != "CopyPartResult" || e.store.LastPart.Number != 1 || e.store.Parts["up1"][0].ETag != strings.Trim(etagOf([]byte(tc.part)), `"`) {
					t.Errorf("copied part %+v, result %s", e.store.Parts["up1"], r.Body)
				}
				return
			}
			if res.XMLName.Local != "CopyObjectResult" {
				t.Errorf("result %s", r.Body)
			}
			dst := strings.TrimPrefix(tc.path, "/")
			if got := e.store.Objects[dst]; string(got.Data) != "source" || res.ETag != etag {
				t.Errorf("copy %q, ETag %s", got.Data, res.ETag)
			}
		})
	}
	t.Run("metadata", func(t *testing.T) {
		e := newS3Env(t)
		e.store.add("b", "src", []byte("source"), func(o *meta.Object) { o.Metadata = map[string]string{"color": "blue"} })
		e.alice("PUT", "/b/copy", nil, "X-Amz-Copy-Source", "/b/src", "Content-Type", "image/png", "X-Amz-Meta-Color", "red").want(t, 200, "")
		if c := e.store.LastCopy; c.ReplaceMetadata || c.ContentType != "" || c.Metadata != nil {
			t.Errorf("COPY took the request's metadata: %+v", c)
		}
		e.alice("PUT", "/b/repl", nil, "X-Amz-Copy-Source", "/b/src", "X-Amz-Metadata-Directive", "REPLACE",
			"Content-Type", "image/png", "X-Amz-Meta-Color", "red").want(t, 200, "")
		if c := e.store.LastCopy; !c.ReplaceMetadata || c.ContentType != "image/png" || c.Metadata["color"] != "red" {
			t.Errorf("REPLACE: %+v", c)
		}
	})
}

// TestErrorMessages: a 501 keeps the message that says what Coffer
// refuses (written for the client); a 500 or 503 answers the table's
// generic message, whatever the error said.
func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		name         string
		method, path string
		hdr          []string
		fail         string
		err          error
		status       int
		want         string // in the message; "" the table's own
	}{
		{"refused header", "PUT", "/b/k", []string{"X-Amz-Write-Offset-Bytes", "8"}, "", nil, 501, "x-amz-write-offset-bytes: "},
		{"malformed version", "GET", "/b/k?versionId=v2", nil, "", nil, 400, "Invalid version id specified"},
		{"unknown operation", "GET", "/b?website", nil, "", nil, 501, "is not implemented by Coffer"},
		{"refused by the service", "PUT", "/b/k", nil, "Put", errcode.New(errcode.NotImplemented, "this thing is not implemented"), 501, "this thing is not implemented"},
		{"internal", "PUT", "/b/k", nil, "Put", errcode.New(errcode.Internal, "disk /var/lib/x on fire"), 500, ""},
		{"unavailable", "PUT", "/b/k", nil, "Put", errcode.New(errcode.Unavailable, "pool of db7 exhausted"), 503, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newS3Env(t)
			e.store.add("b", "k", testData)
			if tc.fail != "" {
				e.store.Fail[tc.fail] = tc.err
			}
			var body []byte
			if tc.method == "PUT" {
				body = []byte("x")
			}
			r := e.do(req{method: tc.method, target: tc.path, body: body, hdr: tc.hdr, as: aliceKey})
			if r.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Code, tc.status, r.Body)
			}
			switch generic := s3err.Table[r.code].Message; {
			case tc.want == "" && r.message != generic:
				t.Errorf("message %q, want the generic %q", r.message, generic)
			case tc.want != "" && !strings.Contains(r.message, tc.want):
				t.Errorf("message %q, want it to say %q", r.message, tc.want)
			}
		})
	}
}

// TestErrorMapping: errors of the services reach the client as S3 XML
// errors from s3err's one table, with the request's bucket, key and ID.
func TestErrorMapping(t *testing.T) {
	for _, tc := range []struct {
		name         string
		method, path string
		fail         string // method of the store that fails
		err          error
		status       int
		code         string
		retryAfter   string
		head         bool // HeadObject answers the same
	}{
		{"missing bucket", "GET", "/nobucket/k", "", nil, 404, s3err.NoSuchBucket, "", true},
		{"missing key", "GET", "/b/nokey", "", nil, 404, s3err.NoSuchKey, "", true},
		{"missing upload", "GET", "/b/k?uploadId=nope", "", nil, 404, s3err.NoSuchUpload, "", false},
		{"another user's bucket", "GET", "/bb?list-type=2", "", nil, 403, s3err.AccessDenied, "", false},
		{"another user's object", "GET", "/bb/k", "", nil, 403, s3err.AccessDenied, "", true},
		{"bucket in use", "PUT", "/bb", "", nil, 409, s3err.BucketAlreadyExists, "", false},
		{"own bucket", "PUT", "/b", "", nil, 409, s3err.BucketAlreadyOwnedByYou, "", false},
		{"bucket not empty", "DELETE", "/b", "", nil, 409, s3err.BucketNotEmpty, "", false},
		{"key too long", "PUT", "/b/" + strings.Repeat("k", 1025), "", nil, 400, s3err.KeyTooLongError, "", false},
		{"quota", "PUT", "/b/k", "Put", &errcode.Error{Code: errcode.QuotaExceeded, Message: "storage quota exceeded"}, 403, s3err.QuotaExceeded, "", false},
		{"too large", "PUT", "/b/k", "Put", errcode.New(errcode.TooLarge, "too large"), 400, s3err.EntityTooLarge, "", false},
		{"unavailable with a delay", "GET", "/b/k", "Get", errcode.Retry(errcode.Unavailable, 3*time.Second, "busy"), 503, s3err.ServiceUnavailable, "3", true},
		{"unavailable", "PUT", "/b/k", "Put", errcode.New(errcode.Unavailable, "down"), 503, s3err.ServiceUnavailable, "1", false},
		{"rate limited", "GET", "/b/k", "Get", errcode.Retry(errcode.RateLimited, 2*time.Second, "slow down"), 503, s3err.SlowDown, "2", true},
		{"unknown KMS key", "PUT", "/b/k", "Put", object.ErrKMSKey("alias/nope"), 400, s3err.KMSNotFound, "", false},
		{"internal", "GET", "/b/k", "Get", errcode.New(errcode.Internal, "disk /var/lib/secret on fire"), 500, s3err.InternalError, "", true},
		{"unclassified", "GET", "/b/k", "Get", fmt.Errorf("driver said /var/lib/secret"), 500, s3err.InternalError, "", true},
		{"failing open", "GET", "/b/k", "Open", object.ErrNoObject("k"), 404, s3err.NoSuchKey, "", false},
		{"unknown operation", "GET", "/b?website", "", nil, 501, s3err.NotImplemented, "", false},
		{"unknown object operation", "PUT", "/b/k?torrent", "", nil, 501, s3err.NotImplemented, "", false},
		{"post to an object", "POST", "/b/k", "", nil, 501, s3err.NotImplemented, "", false},
		{"method", "PATCH", "/b/k", "", nil, 405, s3err.MethodNotAllowed, "", false},
	} {
		for _, method := range []string{tc.method, "HEAD"} {
			if method == "HEAD" && !tc.head {
				continue
			}
			t.Run(method+" "+tc.name, func(t *testing.T) {
				e := newS3Env(t)
				e.store.add("b", "k", testData)
				e.store.add("bb", "k", testData)
				if tc.fail != "" {
					e.store.Fail[tc.fail] = tc.err
				}
				var body []byte
				if method == "PUT" && strings.Count(tc.path, "/") > 1 {
					body = []byte("x")
				}
				r := e.do(req{method: method, target: tc.path, body: body, as: aliceKey})
				if method == "HEAD" {
					if r.Code != tc.status || r.Body.Len() != 0 {
						t.Errorf("HEAD: %d with %d bytes, want %d and none", r.Code, r.Body.Len(), tc.status)
					}
					return
				}
				r.want(t, tc.status, tc.code)
				if got, want := r.Header().Get("Retry-After"), tc.retryAfter; got != want {
					t.Errorf("Retry-After %q, want %q", got, want)
				}
				id := r.Header().Get("X-Amz-Request-Id")
				if id == "" || r.requestID != id || r.Header().Get("Content-Type") != "application/xml" {
					t.Errorf("request ID %q in the body, %q in the header; Content-Type %q", r.requestID, id, r.Header().Get("Content-Type"))
				}
				if strings.Contains(r.Body.String(), "/var/lib") {
					t.Errorf("internal detail leaked: %s", r.Body)
				}
				if tc.status == 404 && tc.code != s3err.NoSuchUpload {
					bucket, key, _ := strings.Cut(strings.TrimPrefix(tc.path, "/"), "/")
					if r.bucket != bucket || r.key != key {
						t.Errorf("BucketName %q Key %q, want %q %q", r.bucket, r.key, bucket, key)
					}
				}
				e.noWrites(t)
			})
		}
	}
	t.Run("DeleteObject of a missing key", func(t *testing.T) {
		e := newS3Env(t)
		e.alice("DELETE", "/b/nokey", nil).want(t, 204, "")
		e.alice("DELETE", "/nobucket/k", nil).want(t, 404, s3err.NoSuchBucket)
		e.alice("DELETE", "/b/nokey?versionId=null", nil).want(t, 204, "")
	})
	t.Run("DeleteObjects reports each key", func(t *testing.T) {
		e := newS3Env(t)
		e.store.add("b", "k", testData)
		e.store.add("b", "k2", testData)
		body := []byte(`<Delete><Object><Key>k</Key></Object><Object><Key>gone</Key></Object>` +
			`<Object><Key>k2</Key><ETag>"0123"</ETag></Object><Object><Key>k2</Key><VersionId>v2</VersionId></Object>` +
			`<Object><Key>k2</Key><Size>3</Size></Object></Delete>`)
		r := e.alice("POST", "/b?delete", body, "Content-MD5", md5B64(body))
		r.want(t, 200, "")
		var res struct {
			Deleted []struct{ Key string }
			Error   []struct{ Key, Code string }
		}
		if err := xml.Unmarshal(r.Body.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(res.Deleted, res.Error)
		if want := "[{k} {gone}] [{k2 PreconditionFailed} {k2 InvalidArgument} {k2 NotImplemented}]"; got != want {
			t.Errorf("got %s, want %s", got, want)
		}
		if _, ok := e.store.Current("b", "k2"); !ok {
			t.Error("k2 deleted")
		}
	})
}

// TestAuthentication: signatures, keys and anonymous requests, as the API
// sees them before any operation runs.
func TestAuthentication(t *testing.T) {
	presign := func(method, target string, now time.Time, expires time.Duration) string {
		return presigned(t, method, target, aliceKey, now, expires)
	}
	for _, tc := range []struct {
		name   string
		r      req
		status int
		code   string
	}{
		{"signed", req{method: "PUT", target: "/b/k", body: []byte("x"), as: aliceKey}, 200, ""},
		{"unknown key", req{method: "PUT", target: "/b/k", body: []byte("x"), as: "CFUNKNOWN"}, 403, s3err.InvalidAccessKeyID},
		{"wrong secret", req{method: "PUT", target: "/b/k", body: []byte("x"), as: aliceKey, secret: "wrong"}, 403, s3err.SignatureDoesNotMatch},
		{"payload hash mismatch", req{method: "PUT", target: "/b/k", body: []byte("x"), as: aliceKey, payload: hexSHA256([]byte("y"))}, 400, s3err.XAmzContentSHA256Mismatch},
		{"payload hash malformed", req{method: "PUT", target: "/b/k", body: []byte("x"), as: aliceKey, payload: "abc"}, 400, s3err.InvalidArgument},
		{"unsigned payload", req{method: "PUT", target: "/b/k", body: []byte("x"), as: aliceKey, payload: sigv4.UnsignedPayload}, 200, ""},
		{"anonymous write", req{method: "PUT", target: "/b/k", body: []byte("x")}, 403, s3err.AccessDenied},
		{"anonymous read, private", req{method: "GET", target: "/b/k"}, 403, s3err.AccessDenied},
		{"anonymous read, public", req{method: "GET", target: "/pub/k"}, 200, ""},
		{"anonymous ListBuckets", req{method: "GET", target: "/"}, 403, s3err.AccessDenied},
		{"anonymous CreateBucket", req{method: "PUT", target: "/newb"}, 403, s3err.AccessDenied},
		{"presigned", req{method: "PUT", target: presign("PUT", "/b/k", testNow, time.Hour), body: []byte("x")}, 200, ""},
		{"presigned, tampered", req{method: "PUT", target: strings.Replace(presign("PUT", "/b/k", testNow, time.Hour), "/b/k?", "/b/j?", 1), body: []byte("x")}, 403, s3err.SignatureDoesNotMatch},
		{"presigned, expired", req{method: "GET", target: presign("GET", "/b/k", testNow.Add(-2*time.Hour), time.Hour)}, 403, s3err.AccessDenied},
		{"garbled authorization", req{method: "GET", target: "/b/k", hdr: []string{"Authorization", "AWS4-HMAC-SHA256 nonsense"}}, 400, s3err.AuthorizationHeaderMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newS3Env(t)
			e.store.add("pub", "k", testData)
			e.store.add("b", "k", testData)
			r := e.do(tc.r)
			r.want(t, tc.status, tc.code)
			if tc.status >= 300 {
				e.noWrites(t)
			}
		})
	}
	t.Run("clock skew", func(t *testing.T) {
		e := newS3Env(t)
		e.api.cfg.Now = func() time.Time { return testNow.Add(20 * time.Minute) }
		e.alice("GET", "/b", nil).want(t, 403, s3err.RequestTimeTooSkewed)
	})
}

// ssecHeaders are the SSE-C headers of key (prefix: the object's or the
// copy source's).
func ssecHeaders(prefix string, key []byte) []string {
	return []string{prefix + "Algorithm", "AES256", prefix + "Key", base64.StdEncoding.EncodeToString(key), prefix + "Key-Md5", md5B64(key)}
}

// TestSSE: the encryption a write asks for reaches the service, responses
// say how the bytes are stored, and SSE-C keys are checked before
// anything is read or sent.
func TestSSE(t *testing.T) {
	key, other := bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{8}, 32)
	ssec := ssecHeaders(sseCPrefix, key)
	const (
		sseH, kmsH, bkH = "X-Amz-Server-Side-Encryption", "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id", "X-Amz-Server-Side-Encryption-Bucket-Key-Enabled"
		algH, md5H      = "X-Amz-Server-Side-Encryption-Customer-Algorithm", "X-Amz-Server-Side-Encryption-Customer-Key-Md5"
	)
	for _, tc := range []struct {
		name         string
		method, path string
		hdr          []string
		remote       string
		status       int
		code         string
		sse          object.SSE        // asked of the service (writes)
		resp         map[string]string // response headers ("" absent)
	}{
		{"PutObject plain", "PUT", "/b/new", nil, "", 200, "", object.SSE{}, map[string]string{sseH: "", algH: ""}},
		{"PutObject SSE-S3", "PUT", "/b/new", []string{sseH, "AES256"}, "", 200, "", object.SSE{Mode: crypt.ModeServer},
			map[string]string{sseH: "AES256", kmsH: "", bkH: ""}},
		{"PutObject SSE-KMS", "PUT", "/b/new", []string{sseH, "aws:kms", kmsH, "alias/k1", bkH, "true"}, "", 200, "",
			object.SSE{Mode: crypt.ModeKMSKey, KMSKeyID: "alias/k1"}, map[string]string{sseH: "aws:kms", kmsH: "alias/k1", bkH: "true"}},
		{"PutObject SSE-KMS default key", "PUT", "/b/new", []string{sseH, "aws:kms"}, "", 200, "", object.SSE{Mode: crypt.ModeKMSKey},
			map[string]string{sseH: "aws:kms", kmsH: "default"}},
		{"PutObject SSE-C", "PUT", "/b/new", ssec, "", 200, "", object.SSE{Mode: crypt.ModeCustomer, CustomerKey: key},
			map[string]string{algH: "AES256", md5H: md5B64(key), sseH: ""}},
		{"PutObject SSE-C over plain HTTP from afar", "PUT", "/b/new", ssec, "192.0.2.1:1", 400, s3err.InvalidRequest, object.SSE{}, nil},
		{"PutObject SSE-C and SSE-S3", "PUT", "/b/new", append([]string{sseH, "AES256"}, ssec...), "", 400, s3err.InvalidArgument, object.SSE{}, nil},
		{"PutObject SSE-C wrong MD5", "PUT", "/b/new", []string{algH, "AES256", sseCPrefix + "Key", base64.StdEncoding.EncodeToString(key), md5H, md5B64(other)}, "", 400, s3err.InvalidArgument, object.SSE{}, nil},
		{"PutObject unknown algorithm", "PUT", "/b/new", []string{sseH, "AES128"}, "", 400, s3err.InvalidArgument, object.SSE{}, nil},
		{"PutObject DSSE", "PUT", "/b/new", []string{sseH, "aws:kms:dsse"}, "", 501, s3err.NotImplemented, object.SSE{}, nil},
		{"PutObject KMS key without aws:kms", "PUT", "/b/new", []string{sseH, "AES256", kmsH, "k"}, "", 400, s3err.InvalidArgument, object.SSE{}, nil},
		{"CopyObject SSE-S3", "PUT", "/b/new", []string{"X-Amz-Copy-Source", "/b/plain", sseH, "AES256"}, "", 200, "", object.SSE{Mode: crypt.ModeServer},
			map[string]string{sseH: "AES256"}},
		{"CopyObject of SSE-C with its key", "PUT", "/b/new", append([]string{"X-Amz-Copy-Source", "/b/ssec"}, ssecHeaders(copySSECPrefix, key)...), "", 200, "",
			object.SSE{}, map[string]string{sseH: "", algH: ""}},
		{"CopyObject of SSE-C without its key", "PUT", "/b/new", []string{"X-Amz-Copy-Source", "/b/ssec"}, "", 400, s3err.InvalidRequest, object.SSE{}, nil},
		{"CopyObject of SSE-C with another key", "PUT", "/b/new", append([]string{"X-Amz-Copy-Source", "/b/ssec"}, ssecHeaders(copySSECPrefix, other)...), "", 403, s3err.AccessDenied, object.SSE{}, nil},
		{"CopyObject of a plain source with a key", "PUT", "/b/new", append([]string{"X-Amz-Copy-Source", "/b/plain"}, ssecHeaders(copySSECPrefix, key)...), "", 400, s3err.InvalidRequest, object.SSE{}, nil},
		{"GetObject SSE-S3", "GET", "/b/s3", nil, "", 200, "", object.SSE{}, map[string]string{sseH: "AES256"}},
		{"GetObject SSE-KMS", "GET", "/b/kms", nil, "", 200, "", object.SSE{}, map[string]string{sseH: "aws:kms", kmsH: "alias/k1", bkH: "true"}},
		{"GetObject SSE-C with its key", "GET", "/b/ssec", ssec, "", 200, "", object.SSE{}, map[string]string{algH: "AES256", md5H: md5B64(key)}},
		{"HeadObject SSE-C with its key", "HEAD", "/b/ssec", ssec, "", 200, "", object.SSE{}, map[string]string{algH: "AES256", md5H: md5B64(key)}},
		{"GetObject SSE-C without a key", "GET", "/b/ssec", nil, "", 400, s3err.InvalidRequest, object.SSE{}, nil},
		{"GetObject SSE-C with another key", "GET", "/b/ssec", ssecHeaders(sseCPrefix, other), "", 403, s3err.AccessDenied, object.SSE{}, nil},
		{"GetObject plain with a key", "GET", "/b/plain", ssec, "", 400, s3err.InvalidRequest, object.SSE{}, nil},
		{"HeadObject SSE-C without a key", "HEAD", "/b/ssec", nil, "", 400, "", object.SSE{}, nil},
		{"CreateMultipartUpload SSE-KMS", "POST", "/b/mp?uploads", []string{sseH, "aws:kms", kmsH, "alias/k1"}, "", 200, "",
			object.SSE{Mode: crypt.ModeKMSKey, KMSKeyID: "alias/k1"}, map[string]string{sseH: "aws:kms", kmsH: "alias/k1"}},
		{"CreateMultipartUpload SSE-C", "POST", "/b/mp?uploads", ssec, "", 200, "", object.SSE{Mode: crypt.ModeCustomer, CustomerKey: key},
			map[string]string{algH: "AES256", md5H: md5B64(key)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newS3Env(t)
			e.store.add("b", "plain", []byte("plain"))
			for name, sse := range map[string]object.SSE{"s3": {Mode: crypt.ModeServer}, "kms": {Mode: crypt.ModeKMSKey, KMSKeyID: "alias/k1"},
				"ssec": {Mode: crypt.ModeCustomer, CustomerKey: key}} {
				env, err := objectfake.Envelope(sse)
				if err != nil {
					t.Fatal(err)
				}
				e.store.add("b", name, []byte("bytes of "+name), func(o *meta.Object) { o.Encryption = env })
			}
			var body []byte // a PutObject's
			if tc.method == "PUT" && !strings.Contains(fmt.Sprint(tc.hdr), "Copy-Source") {
				body = []byte("data")
			}
			r := e.do(req{method: tc.method, target: tc.path, hdr: tc.hdr, remote: tc.remote, as: aliceKey, body: body})
			r.want(t, tc.status, tc.code)
			if tc.status >= 300 {
				e.noWrites(t)
				if tc.method == "GET" && bytes.Contains(r.Body.Bytes(), []byte("bytes of")) {
					t.Errorf("sent the bytes: %s", r.Body)
				}
				return
			}
			var got object.SSE
			switch {
			case strings.HasPrefix(tc.name, "PutObject"):
				got = e.store.LastPut.SSE
			case strings.HasPrefix(tc.name, "CopyObject"):
				got = e.store.LastCopy.SSE
			case strings.HasPrefix(tc.name, "CreateMultipartUpload"):
				got = e.store.LastCreate.SSE
			}
			if got.Mode != tc.sse.Mode || got.KMSKeyID != tc.sse.KMSKeyID || !bytes.Equal(got.CustomerKey, tc.sse.CustomerKey) {
				t.Errorf("asked the service for %+v, want %+v", got, tc.sse)
			}
			for h, want := range tc.resp {
				if got := r.Header().Get(h); got != want {
					t.Errorf("%s: %q, want %q", h, got, want)
				}
			}
		})
	}
	t.Run("SSE-C upload parts", func(t *testing.T) {
		e := newS3Env(t)
		e.alice("POST", "/b/mp?uploads", nil, ssec...).want(t, 200, "")
		e.alice("PUT", "/b/mp?partNumber=1&uploadId=up1", []byte("part"), ssec...).want(t, 200, "")
		if !bytes.Equal(e.store.LastPart.CustomerKey, key) {
			t.Errorf("part key %x", e.store.LastPart.CustomerKey)
		}
		e.store.Writes = nil
		e.alice("PUT", "/b/mp?partNumber=2&uploadId=up1", []byte("part")).want(t, 400, s3err.InvalidRequest)
		e.alice("PUT", "/b/mp?partNumber=2&uploadId=up1", []byte("part"), ssecHeaders(sseCPrefix, other)...).want(t, 400, s3err.InvalidRequest)
		complete := []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"e"</ETag></Part></CompleteMultipartUpload>`)
		e.alice("POST", "/b/mp?uploadId=up1", complete, ssecHeaders(sseCPrefix, other)...).want(t, 400, s3err.InvalidRequest)
		e.noWrites(t)
		e.alice("POST", "/b/mp?uploadId=up1", complete, ssec...).want(t, 200, "")
	})
	t.Run("SSE-KMS upload parts repeat the upload's encryption", func(t *testing.T) {
		e := newS3Env(t)
		e.alice("POST", "/b/mp?uploads", nil, sseH, "aws:kms", kmsH, "alias/k1").want(t, 200, "")
		e.alice("PUT", "/b/mp?partNumber=1&uploadId=up1", []byte("part"), sseH, "aws:kms", kmsH, "alias/k1").want(t, 200, "")
		e.alice("PUT", "/b/mp?partNumber=2&uploadId=up1", []byte("part"), sseH, "aws:kms").want(t, 200, "")
		e.store.Writes = nil
		e.alice("PUT", "/b/mp?partNumber=3&uploadId=up1", []byte("part"), sseH, "aws:kms", kmsH, "alias/other").want(t, 400, s3err.InvalidArgument)
		e.alice("PUT", "/b/mp?partNumber=3&uploadId=up1", []byte("part"), sseH, "AES256").want(t, 400, s3err.InvalidArgument)
		e.alice("PUT", "/b/mp?partNumber=3&uploadId=up1", []byte("part"), sseH, "aws:kms:dsse").want(t, 501, s3err.NotImplemented)
		complete := []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"e"</ETag></Part></CompleteMultipartUpload>`)
		e.alice("POST", "/b/mp?uploadId=up1", complete, sseH, "AES256").want(t, 400, s3err.InvalidArgument)
		e.noWrites(t)
		e.alice("POST", "/b/mp?uploadId=up1", complete, sseH, "aws:kms", kmsH, "alias/k1").want(t, 200, "")
	})
	t.Run("SSE headers on reads", func(t *testing.T) {
		e := newS3Env(t)
		e.store.add("b", "k", []byte("v"))
		e.alice("GET", "/b/k", nil, sseH, "aws:kms").want(t, 400, s3err.InvalidArgument)
		e.alice("HEAD", "/b/k", nil, sseH, "AES256").want(t, 400, "")
	})
	t.Run("bucket default", func(t *testing.T) {
		e := newS3Env(t)
		e.alice("GET", "/b?encryption", nil).want(t, 404, s3err.SSEConfigNotFound)
		e.store.Encrypts = true
		r := e.alice("GET", "/b?encryption", nil)
		r.want(t, 200, "")
		if !strings.Contains(r.Body.String(), "<SSEAlgorithm>AES256</SSEAlgorithm>") {
			t.Errorf("default: %s", r.Body)
		}
		body := []byte(`<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>aws:kms</SSEAlgorithm><KMSMasterKeyID>alias/k1</KMSMasterKeyID></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>`)
		e.alice("PUT", "/b?encryption", body).want(t, 200, "")
		if b := e.store.Buckets["b"]; b.Encryption != meta.EncryptKMS || b.EncryptionKMSKey != "alias/k1" {
			t.Errorf("bucket %+v", b)
		}
		r = e.alice("GET", "/b?encryption", nil)
		if !strings.Contains(r.Body.String(), "<KMSMasterKeyID>alias/k1</KMSMasterKeyID>") || !strings.Contains(r.Body.String(), "<BucketKeyEnabled>true</BucketKeyEnabled>") {
			t.Errorf("configuration: %s", r.Body)
		}
		e.store.Writes = nil
		dsse := bytes.Replace(body, []byte(">aws:kms<"), []byte(">aws:kms:dsse<"), 1)
		e.alice("PUT", "/b?encryption", dsse).want(t, 501, s3err.NotImplemented)
		e.alice("PUT", "/b?encryption", []byte(`<ServerSideEncryptionConfiguration/>`)).want(t, 400, s3err.MalformedXML)
		e.noWrites(t)
		e.alice("DELETE", "/b?encryption", nil).want(t, 204, "")
	})
}

// TestRefusedHeaders: the rows of the refused-header table (unsupported.go,
// docs/s3.md) answer their error through the handler and reach no write;
// what clients send by default, and values Coffer honours, pass.
func TestRefusedHeaders(t *testing.T) {
	key := bytes.Repeat([]byte("k"), 32)
	ssec := ssecHeaders(sseCPrefix, key)
	complete := []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"e"</ETag></Part></CompleteMultipartUpload>`)
	ni, ia, ad, ireq := s3err.NotImplemented, s3err.InvalidArgument, s3err.AccessDenied, s3err.InvalidRequest
	type row struct {
		method, path string
		body         []byte
		hdr          []string
		code         string // "" accepted
	}
	put := func(code string, hdr ...string) row { return row{"PUT", "/b/k", []byte("changed"), hdr, code} }
	cp := func(code string, hdr ...string) row {
		return row{"PUT", "/b/k", nil, append([]string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Metadata-Directive", "REPLACE"}, hdr...), code}
	}
	mpu := func(code string, hdr ...string) row { return row{"POST", "/b/new-mp?uploads", nil, hdr, code} }
	mk := func(code string, hdr ...string) row { return row{"PUT", "/newbucket", nil, hdr, code} }
	rows := map[string]row{
		"PutObject DSSE":                           put(ni, "X-Amz-Server-Side-Encryption", "aws:kms:dsse"),
		"PutObject SSE-KMS context":                put(ni, "X-Amz-Server-Side-Encryption", "aws:kms", "X-Amz-Server-Side-Encryption-Context", "e30="),
		"PutObject unknown SSE header":             put(ni, "X-Amz-Server-Side-Encryption-Future-Thing", "x"),
		"CopyObject DSSE":                          cp(ni, "X-Amz-Server-Side-Encryption", "aws:kms:dsse"),
		"CopyObject copy-source SSE-C without key": cp(ia, "X-Amz-Copy-Source-Server-Side-Encryption-Customer-Algorithm", "AES256"),
		"CreateMultipartUpload DSSE":               mpu(ni, "X-Amz-Server-Side-Encryption", "aws:kms:dsse"),
		"UploadPart SSE-S3":                        {"PUT", "/b/mp?partNumber=2&uploadId=up1", []byte("p2"), []string{"X-Amz-Server-Side-Encryption", "AES256"}, ia}, // the upload is plain
		"UploadPart copy-source SSE-C":             {"PUT", "/b/mp?partNumber=2&uploadId=up1", []byte("p2"), []string{"X-Amz-Copy-Source-Server-Side-Encryption-Customer-Algorithm", "AES256"}, ni},
		"UploadPartCopy copy-source SSE-C without key": {"PUT", "/b/mp?partNumber=2&uploadId=up1", nil,
			[]string{"X-Amz-Copy-Source", "/b/src", "X-Amz-Copy-Source-Server-Side-Encryption-Customer-Algorithm", "AES256"}, ia},
		"ListParts SSE-C":                          {"GET", "/b/mp?uploadId=up1", nil, ssec, ni},
		"AbortMultipartUpload SSE-C":               {"DELETE", "/b/mp?uploadId=up1", nil, ssec, ni},
		"Complete SSE-S3":                          {"POST", "/b/mp?uploadId=up1", complete, []string{"X-Amz-Server-Side-Encryption", "AES256"}, ia}, // the upload is plain
		"DeleteObject SSE-KMS key":                 {"DELETE", "/b/k", nil, []string{"X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id", "k"}, ni},
		"GetObject SSE-S3":                         {"GET", "/b/k", nil, []string{"X-Amz-Server-Side-Encryption", "AES256"}, ia},
		"GetObject SSE-C of a plain object":        {"GET", "/b/k", nil, ssec, ireq},
		"PutObject object lock without a checksum": put(ireq, "X-Amz-Object-Lock-Mode", "GOVERNANCE", "X-Amz-Object-Lock-Retain-Until-Date", "2040-01-01T00:00:00Z"),
		"PutObject legal hold, no object lock":     put(ireq, "X-Amz-Object-Lock-Legal-Hold", "ON"),
		"PutObject legal hold maybe":               put(ia, "X-Amz-Object-Lock-Legal-Hold", "MAYBE"),
		"CopyObject lock mode without a date":      cp(ia, "X-Amz-Object-Lock-Mode", "COMPLIANCE"),
		"CreateMultipartUpload lock mode unknown":  mpu(ia, "X-Amz-Object-Lock-Mode", "FOREVER", "X-Amz-Object-Lock-Retain-Until-Date", "2040-01-01T00:00:00Z"),
		"GetObject object lock":                    {"GET", "/b/k", nil, []string{"X-Amz-Object-Lock-Mode", "GOVERNANCE"}, ni},
		"CreateBucket object lock maybe":           mk(ia, "X-Amz-Bucket-Object-Lock-Enabled", "maybe"),
		"CreateBucket ownership":                   mk(ia, "X-Amz-Object-Ownership", "Anyone"),
		"CreateBucket unknown canned ACL":          mk(ia, "X-Amz-Acl", "everyone-rules"),
		"CreateBucket canned ACL and grant":        mk(ireq, "X-Amz-Acl", "public-read", "X-Amz-Grant-Read", "id=bob"),
		"CreateBucket grant of an unknown kind":    mk(ia, "X-Amz-Grant-Read", "name=bob"),
		"PutObject ACL and grant":                  put(ireq, "X-Amz-Acl", "public-read", "X-Amz-Grant-Full-Control", "id=someone"),
		"CopyObject unknown canned ACL":            cp(ia, "X-Amz-Acl", "nobody"),
		"CreateMultipartUpload empty grant":        mpu(ia, "X-Amz-Grant-Read", ","),
		"GetObject ACL header":                     {"GET", "/b/k", nil, []string{"X-Amz-Acl", "public-read"}, ni},
		"CopyObject tagging directive":             cp(ia, "X-Amz-Tagging-Directive", "MERGE"),
		"PutObject storage class":                  put(ni, "X-Amz-Storage-Class", "GLACIER"),
		"CopyObject storage class":                 cp(ni, "X-Amz-Storage-Class", "STANDARD_IA"),
		"CreateMultipartUpload storage class":      mpu(ni, "X-Amz-Storage-Class", "ONEZONE_IA"),
		"PutObject website redirect":               put(ni, "X-Amz-Website-Redirect-Location", "/elsewhere"),
		"CopyObject website redirect":              cp(ni, "X-Amz-Website-Redirect-Location", "/elsewhere"),
		"CopyObject checksum algorithm":            cp(ni, "X-Amz-Checksum-Algorithm", "SHA256"),
		"PutObject write offset":                   put(ni, "X-Amz-Write-Offset-Bytes", "8"),
		"Abort if-match-initiated-time":            {"DELETE", "/b/mp?uploadId=up1", nil, []string{"X-Amz-If-Match-Initiated-Time", "Thu, 01 Dec 2044 16:00:00 GMT"}, ni},
		"GetObject malformed versionId":            {"GET", "/b/k?versionId=3HL4kqtJlcpXroDTDmJ", nil, nil, ia},
		"DeleteObject malformed versionId":         {"DELETE", "/b/k?versionId=3HL4kqtJlcpXroDTDmJ", nil, nil, ia},
		"DeleteObject versionId, escaped name":     {"DELETE", "/b/k?%76ersionId=3HL4kqtJlcpXroDTDmJ", nil, nil, ia},
		"PutBucketVersioning mfa":                  {"PUT", "/b?versioning", []byte(`<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>`), []string{"X-Amz-Mfa", "SERIAL 123456"}, ni},
		"DeleteObject if-match-size":               {"DELETE", "/b/k", nil, []string{"X-Amz-If-Match-Size", "1"}, ni},
		"DeleteObject if-match-last-modified":      {"DELETE", "/b/k", nil, []string{"X-Amz-If-Match-Last-Modified-Time", "Thu, 01 Dec 2044 16:00:00 GMT"}, ni},
		"CopyObject source version":                {"PUT", "/b/k", nil, []string{"X-Amz-Copy-Source", "/b/src?versionId=abc"}, ia},
		"PutObject wrong bucket owner":             put(ad, "X-Amz-Expected-Bucket-Owner", "111122223333"),
		"DeleteObject wrong bucket owner":          {"DELETE", "/b/k", nil, []string{"X-Amz-Expected-Bucket-Owner", "111122223333"}, ad},
		"ListObjectsV2 wrong bucket owner":         {"GET", "/b?list-type=2", nil, []string{"X-Amz-Expected-Bucket-Owner", "111122223333"}, ad},
		"CopyObject wrong source owner":            cp(ad, "X-Amz-Source-Expected-Bucket-Owner", "111122223333"),
		"ListObjects request payer":                {"GET", "/b", nil, []string{"X-Amz-Request-Payer", "requester"}, ni},
		"GetObject request payer":                  {"GET", "/b/k", nil, []string{"X-Amz-Request-Payer", "requester"}, ni},
		"DeleteObject mfa":                         {"DELETE", "/b/k", nil, []string{"X-Amz-Mfa", "SERIAL 123456"}, ni},
		"DeleteObjects mfa":                        {"POST", "/b?delete", []byte(`<Delete><Object><Key>k</Key></Object></Delete>`), []string{"X-Amz-Mfa", "SERIAL 123456"}, ni},
		"DeleteObject bypass governance, bad":      {"DELETE", "/b/k", nil, []string{"X-Amz-Bypass-Governance-Retention", "maybe"}, ia},
		"ListObjectsV2 other attributes":           {"GET", "/b?list-type=2", nil, []string{"X-Amz-Optional-Object-Attributes", "Owner"}, ia},
		// Accepted.
		"PutObject defaults": put("", "X-Amz-Storage-Class", "STANDARD", "X-Amz-Acl", "private",
			"X-Amz-Checksum-Crc32", crc32B64([]byte("changed")), "X-Amz-Sdk-Checksum-Algorithm", "CRC32", "X-Amz-Tagging", ""),
		"PutObject bucket-owner-full-control": put("", "X-Amz-Acl", "bucket-owner-full-control"),
		"PutObject aws-chunked only":          put("", "Content-Encoding", "aws-chunked"),
		"PutObject right bucket owner":        put("", "X-Amz-Expected-Bucket-Owner", alice),
		"CopyObject right owners": cp("", "X-Amz-Expected-Bucket-Owner", alice, "X-Amz-Source-Expected-Bucket-Owner", alice,
			"X-Amz-Tagging-Directive", "COPY"),
		"CreateMultipartUpload defaults":     mpu("", "X-Amz-Checksum-Algorithm", "CRC32", "X-Amz-Storage-Class", "STANDARD"),
		"UploadPart Content-Encoding":        {"PUT", "/b/mp?partNumber=2&uploadId=up1", []byte("p2"), []string{"Content-Encoding", "gzip"}, ""},
		"GetObject versionId=null":           {"GET", "/b/k?versionId=null", nil, nil, ""},
		"HeadObject versionId=null":          {"HEAD", "/b/k?versionId=null", nil, nil, ""},
		"GetObject Cache-Control":            {"GET", "/b/k", nil, []string{"Cache-Control", "no-cache"}, ""},
		"DeleteObject bypass governance":     {"DELETE", "/b/k", nil, []string{"X-Amz-Bypass-Governance-Retention", "true"}, ""},
		"ListObjectsV2 owner and attributes": {"GET", "/b?list-type=2", nil, []string{"X-Amz-Expected-Bucket-Owner", alice, "X-Amz-Optional-Object-Attributes", "RestoreStatus"}, ""},
		"ListObjects another op's header":    {"GET", "/b", nil, []string{"X-Amz-Storage-Class", "GLACIER"}, ""},
		"CreateBucket public-read": mk("", "X-Amz-Acl", "public-read", "X-Amz-Bucket-Object-Lock-Enabled", "false",
			"X-Amz-Object-Ownership", "BucketOwnerEnforced"),
	}
	status := map[string]int{"": 200, ni: 501, ia: 400, ad: 403, ireq: 400}
	for name, tc := range rows {
		t.Run(name, func(t *testing.T) {
			e := newS3Env(t)
			e.store.add("b", "k", []byte("original"))
			e.store.add("b", "src", []byte("source"))
			e.store.Uploads["up1"] = meta.Upload{ID: "up1", Bucket: "b", Key: "mp", InitiatorID: alice}
			r := e.alice(tc.method, tc.path, tc.body, tc.hdr...)
			want := status[tc.code]
			if tc.method == "DELETE" && want == 200 {
				want = 204
			}
			r.want(t, want, tc.code)
			if tc.code != "" {
				e.noWrites(t)
				if bytes.Contains(r.Body.Bytes(), []byte("original")) {
					t.Errorf("sent the object: %s", r.Body)
				}
			}
		})
	}
}

// TestBadInput: malformed requests get S3 XML errors before anything is
// written.
func TestBadInput(t *testing.T) {
	data := []byte("the payload")
	sum := md5.Sum(data)
	crc := crc32B64(data)
	for _, tc := range []struct {
		name   string
		r      req
		status int
		code   string
	}{
		{"PutObject without a length", req{method: "PUT", target: "/b/k", body: data, length: -1}, 411, s3err.MissingContentLength},
		{"PutObject over 5 GiB", req{method: "PUT", target: "/b/k", body: data, length: 5<<30 + 1, payload: sigv4.UnsignedPayload}, 400, s3err.EntityTooLarge},
		{"UploadPart over 5 GiB", req{method: "PUT", target: "/b/k?partNumber=1&uploadId=up1", body: data, length: 5<<30 + 1, payload: sigv4.UnsignedPayload}, 400, s3err.EntityTooLarge},
		{"UploadPart without a length", req{method: "PUT", target: "/b/k?partNumber=1&uploadId=up1", body: data, length: -1}, 411, s3err.MissingContentLength},
		{"Content-MD5 not base64", req{method: "PUT", target: "/b/k", body: data, hdr: []string{"Content-MD5", "!!"}}, 400, s3err.InvalidDigest},
		{"Content-MD5 short", req{method: "PUT", target: "/b/k", body: data, hdr: []string{"Content-MD5", "AAAA"}}, 400, s3err.InvalidDigest},
		{"Content-MD5 empty", req{method: "PUT", target: "/b/k", body: data, hdr: []string{"Content-MD5", ""}}, 400, s3err.InvalidDigest},
		{"checksum empty", req{method: "PUT", target: "/b/k", body: data, hdr: []string{"X-Amz-Checksum-Crc32", ""}}, 400, s3err.InvalidDigest},
		{"two checksums, empty", req{method: "PUT", target: "/b/k", body: data, hdr: []string{"X-Amz-Checksum-Crc32", "", "X-Amz-Checksum-Sha1", ""}}, 400, s3err.InvalidRequest},
		{"part checksum empty", req{method: "PUT", target: "/b/k?partNumber=1&uploadId=up1", body: data, hdr: []string{"X-Amz-Checksum-Sha1", ""}}, 400, s3err.InvalidDigest},
		{"Content-MD5 mismatch", req{method: "PUT", target: "/b/k", body: data, hdr: []string{"Content-MD5", md5B64([]byte("other"))}}, 400, s3err.BadDigest},
		{"checksum malformed", req{method: "PUT", target: "/b/k", body: data, hdr: []string{"X-Amz-Checksum-Crc32", "AAAA"}}, 400, s3err.InvalidDigest},
		{"checksum of another size", req{method: "PUT", target: "/b/k", body: data, hdr: []string{"X-Amz-Checksum-Sha256", crc}}, 400, s3err.InvalidDigest},
		{"two checksums", req{method: "PUT", target: "/b/k", body: data, hdr: []string{"X-Amz-Checksum-Crc32", crc, "X-Amz-Checksum-Crc32c", crc}}, 400, s3err.InvalidRequest},
		{"checksum mismatch", req{method: "PUT", target: "/b/k", body: data, hdr: []string{"X-Amz-Checksum-Crc32", "AAAAAA=="}}, 400, s3err.BadDigest},
		{"malformed Content-Type", req{method: "PUT", target: "/b/k", body: data, hdr: []string{"Content-Type", "text/plain; =x"}}, 400, s3err.InvalidArgument},
		{"part number not a number", req{method: "PUT", target: "/b/k?partNumber=one&uploadId=up1", body: data}, 400, s3err.InvalidArgument},
		{"part number 10001", req{method: "PUT", target: "/b/k?partNumber=10001&uploadId=up1", body: data}, 400, s3err.InvalidArgument},
		{"max-keys negative", req{method: "GET", target: "/b?list-type=2&max-keys=-1"}, 400, s3err.InvalidArgument},
		{"max-keys not a number", req{method: "GET", target: "/b?max-keys=ten"}, 400, s3err.InvalidArgument},
		{"encoding-type", req{method: "GET", target: "/b?list-type=2&encoding-type=base64"}, 400, s3err.InvalidArgument},
		{"continuation token", req{method: "GET", target: "/b?list-type=2&continuation-token=%21%21"}, 400, s3err.InvalidArgument},
		{"prefix not UTF-8", req{method: "GET", target: "/b?list-type=2&prefix=%ff"}, 400, s3err.InvalidArgument},
		{"version marker without key marker", req{method: "GET", target: "/b?versions&version-id-marker=null"}, 400, s3err.InvalidArgument},
		{"version marker not null", req{method: "GET", target: "/b?versions&key-marker=a&version-id-marker=v2"}, 400, s3err.InvalidArgument},
		{"max-parts", req{method: "GET", target: "/b/k?uploadId=up1&max-parts=-1"}, 400, s3err.InvalidArgument},
		{"part-number-marker", req{method: "GET", target: "/b/k?uploadId=up1&part-number-marker=x"}, 400, s3err.InvalidArgument},
		{"max-uploads", req{method: "GET", target: "/b?uploads&max-uploads=x"}, 400, s3err.InvalidArgument},
		{"DeleteObjects not XML", req{method: "POST", target: "/b?delete", body: []byte("keys: a, b")}, 400, s3err.MalformedXML},
		{"DeleteObjects empty", req{method: "POST", target: "/b?delete", body: []byte("<Delete></Delete>")}, 400, s3err.MalformedXML},
		{"DeleteObjects 1001 keys", req{method: "POST", target: "/b?delete", body: []byte("<Delete>" + strings.Repeat("<Object><Key>k</Key></Object>", 1001) + "</Delete>")}, 400, s3err.MalformedXML},
		{"DeleteObjects unknown element", req{method: "POST", target: "/b?delete", body: []byte("<Delete><Object><Key>k</Key><Owner/></Object></Delete>")}, 400, s3err.MalformedXML},
		{"DeleteObjects no body", req{method: "POST", target: "/b?delete"}, 400, s3err.MalformedXML},
		{"Complete not XML", req{method: "POST", target: "/b/k?uploadId=up1", body: []byte("parts")}, 400, s3err.MalformedXML},
		{"CreateBucket elsewhere", req{method: "PUT", target: "/newb", body: []byte("<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>")}, 400, s3err.IllegalLocationConstraint},
		{"CreateBucket directory bucket", req{method: "PUT", target: "/newb", body: []byte("<CreateBucketConfiguration><Bucket><Type>Directory</Type></Bucket></CreateBucketConfiguration>")}, 501, s3err.NotImplemented},
		{"CreateBucket tags", req{method: "PUT", target: "/newb", body: []byte("<CreateBucketConfiguration><Tags><Tag><Key>a</Key><Value>b</Value></Tag></Tags></CreateBucketConfiguration>")}, 501, s3err.NotImplemented},
		{"CreateBucket trailing garbage", req{method: "PUT", target: "/newb", body: []byte("<CreateBucketConfiguration/>junk")}, 400, s3err.MalformedXML},
		{"XML body over the limit", req{method: "POST", target: "/b?delete", body: []byte("<Delete>" + strings.Repeat(" ", 64<<10) + "</Delete>")}, 400, s3err.EntityTooLarge},
		{"XML body shorter than announced", req{method: "POST", target: "/b?delete", body: []byte("<Delete><Object><Key>k</Key></Object></Delete>"), length: 100, payload: sigv4.UnsignedPayload}, 400, s3err.IncompleteBody},
		{"DeleteObjects without Content-MD5 or a checksum", req{method: "POST", target: "/b?delete", body: []byte("<Delete><Object><Key>k</Key></Object></Delete>"),
			hdr: []string{}}, 400, s3err.InvalidRequest},
	} {
		if strings.HasSuffix(tc.r.target, "?delete") && tc.r.hdr == nil {
			// S3 requires Content-MD5 (or a checksum) of DeleteObjects.
			tc.r.hdr = []string{"Content-MD5", md5B64(tc.r.body)}
		}
		t.Run(tc.name, func(t *testing.T) {
			e := newS3Env(t)
			e.store.add("b", "k", []byte("original"))
			e.store.Uploads["up1"] = meta.Upload{ID: "up1", Bucket: "b", Key: "k", InitiatorID: alice}
			tc.r.as = aliceKey
			e.do(tc.r).want(t, tc.status, tc.code)
			e.noWrites(t)
		})
	}
	t.Run("the fixtures are right", func(t *testing.T) {
		e := newS3Env(t)
		e.alice("PUT", "/b/k", data, "Content-MD5", base64.StdEncoding.EncodeToString(sum[:]), "X-Amz-Checksum-Crc32", crc).want(t, 200, "")
	})
}

// checksumOf computes S3's checksums with the standard library (not the
// code under test): base64 of the digest of data under alg.
func checksumOf(alg string, data []byte) string {
	var sum []byte
	switch alg {
	case "CRC32":
		sum = binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(data))
	case "CRC32C":
		sum = binary.BigEndian.AppendUint32(nil, crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	case "CRC64NVME":
		sum = binary.BigEndian.AppendUint64(nil, crc64.Checksum(data, crc64.MakeTable(0x9a6c9329ac4bc9b5)))
	case "SHA1":
		s := sha1.Sum(data)
		sum = s[:]
	case "SHA256":
		s := sha256.Sum256(data)
		sum = s[:]
	}
	return base64.StdEncoding.EncodeToString(sum)
}

// must returns v, panicking on err (test fixtures only).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestMultipartChecksumType: x-amz-checksum-type on CreateMultipartUpload
// takes the values and algorithm combinations S3 allows (InvalidRequest
// otherwise, and no upload), and a FULL_OBJECT upload completes with the
// CRC of the whole object, combined from its parts'.
func TestMultipartChecksumType(t *testing.T) {
	for _, tc := range []struct {
		alg, typ string // headers; "" absent
		want     string // the upload's type in the response, or the error's message
		ok       bool
	}{
		{"CRC32", "FULL_OBJECT", "FULL_OBJECT", true},
		{"crc32c", "full_object", "FULL_OBJECT", true},
		{"CRC64NVME", "FULL_OBJECT", "FULL_OBJECT", true},
		{"SHA256", "COMPOSITE", "COMPOSITE", true},
		{"CRC32", "", "", true},
		{"CRC32", "garbage", "x-amz-checksum-type header is invalid", false},
		{"SHA1", "FULL_OBJECT", "FULL_OBJECT checksum type cannot be used with the SHA1 checksum algorithm", false},
		{"SHA256", "FULL_OBJECT", "FULL_OBJECT checksum type cannot be used with the SHA256", false},
		{"CRC64NVME", "COMPOSITE", "COMPOSITE checksum type cannot be used with the CRC64NVME", false},
		{"", "COMPOSITE", "can only be used with the x-amz-checksum-algorithm header", false},
	} {
		t.Run(tc.alg+" "+tc.typ, func(t *testing.T) {
			e := newS3Env(t)
			var hdr []string
			if tc.alg != "" {
				hdr = append(hdr, "X-Amz-Checksum-Algorithm", tc.alg)
			}
			if tc.typ != "" {
				hdr = append(hdr, "X-Amz-Checksum-Type", tc.typ)
			}
			r := e.alice("POST", "/b/mp?uploads", nil, hdr...)
			if !tc.ok {
				r.want(t, 400, s3err.InvalidRequest)
				if !strings.Contains(r.message, tc.want) {
					t.Errorf("message %q, want %q", r.message, tc.want)
				}
				e.noWrites(t)
				return
			}
			r.want(t, 200, "")
			if got := r.Header().Get("X-Amz-Checksum-Type"); got != tc.want {
				t.Errorf("type %q, want %q", got, tc.want)
			}
		})
	}
	// Three parts of different sizes: the object's CRC is the CRC of
	// their concatenation (computed here with the standard library).
	parts := [][]byte{[]byte(strings.Repeat("a", 1000)), []byte("short"), []byte(strings.Repeat("xyz", 777))}
	whole := bytes.Join(parts, nil)
	for _, tc := range []struct{ alg, typ string }{{"CRC32", "FULL_OBJECT"}, {"CRC32C", "FULL_OBJECT"}, {"CRC64NVME", "FULL_OBJECT"}, {"CRC64NVME", ""}} {
		t.Run("complete "+tc.alg+" "+tc.typ, func(t *testing.T) {
			e := newS3Env(t)
			hdr := []string{"X-Amz-Checksum-Algorithm", tc.alg}
			if tc.typ != "" {
				hdr = append(hdr, "X-Amz-Checksum-Type", tc.typ)
			}
			e.alice("POST", "/b/mp?uploads", nil, hdr...).want(t, 200, "")
			list := "<CompleteMultipartUpload>"
			for i, p := range parts {
				n := strconv.Itoa(i + 1)
				e.alice("PUT", "/b/mp?partNumber="+n+"&uploadId=up1", p).want(t, 200, "")
				list += "<Part><PartNumber>" + n + "</PartNumber><ETag>\"e\"</ETag></Part>"
			}
			r := e.alice("POST", "/b/mp?uploadId=up1", []byte(list+"</CompleteMultipartUpload>"))
			r.want(t, 200, "")
			if want := "<Checksum" + tc.alg + ">" + checksumOf(tc.alg, whole) + "</Checksum" + tc.alg + "><ChecksumType>FULL_OBJECT</ChecksumType>"; !strings.Contains(r.Body.String(), want) {
				t.Errorf("CompleteMultipartUpload: %s\nwant %s", r.Body, want)
			}
		})
	}
}

// TestChecksumHeaders: S3's additional checksums through every operation
// that names one: the algorithm parsed from its header (any case), the
// digest checked, and the stored checksum sent back under the right
// header or XML element.
func TestChecksumHeaders(t *testing.T) {
	data := []byte("hello world")
	for _, alg := range []string{"CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"} {
		sum := checksumOf(alg, data)
		lower := strings.ToLower(alg)
		t.Run(alg, func(t *testing.T) {
			e := newS3Env(t)
			// PutObject: the header's algorithm and digest reach the
			// service; the response names them.
			r := e.alice("PUT", "/b/k", data, "x-amz-checksum-"+lower, sum)
			r.want(t, 200, "")
			if p := e.store.LastPut; p.ChecksumAlgorithm != alg || base64.StdEncoding.EncodeToString(p.ChecksumWant) != sum {
				t.Errorf("asked the service for %q %x", p.ChecksumAlgorithm, p.ChecksumWant)
			}
			if got := r.Header().Get("X-Amz-Checksum-" + lower); got != sum || r.Header().Get("X-Amz-Checksum-Type") != "FULL_OBJECT" {
				t.Errorf("response checksum %q type %q, want %q", got, r.Header().Get("X-Amz-Checksum-Type"), sum)
			}
			e.alice("PUT", "/b/bad", data, "X-Amz-Checksum-"+alg, checksumOf(alg, []byte("other"))).want(t, 400, s3err.BadDigest)
			// The SDK's algorithm without a digest: computed, not checked.
			r = e.alice("PUT", "/b/sdk", data, "X-Amz-Sdk-Checksum-Algorithm", lower)
			r.want(t, 200, "")
			if got := r.Header().Get("X-Amz-Checksum-" + alg); got != sum || e.store.LastPut.ChecksumAlgorithm != alg || e.store.LastPut.ChecksumWant != nil {
				t.Errorf("SDK algorithm: response %q, asked %q %x", got, e.store.LastPut.ChecksumAlgorithm, e.store.LastPut.ChecksumWant)
			}
			// GetObject sends it on a whole-object read with checksum mode.
			r = e.alice("GET", "/b/k", nil, "X-Amz-Checksum-Mode", "ENABLED")
			if got := r.Header().Get("X-Amz-Checksum-" + alg); got != sum {
				t.Errorf("GET with checksum mode: %q", got)
			}
			for _, hdr := range [][]string{nil, {"X-Amz-Checksum-Mode", "ENABLED", "Range", "bytes=0-1"}} {
				if got := e.alice("GET", "/b/k", nil, hdr...).Header().Get("X-Amz-Checksum-" + alg); got != "" {
					t.Errorf("GET %v: checksum %q", hdr, got)
				}
			}
			// Listings name the algorithm.
			r = e.alice("GET", "/b?list-type=2&prefix=k", nil)
			if !strings.Contains(r.Body.String(), "<ChecksumAlgorithm>"+alg+"</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType>") {
				t.Errorf("listing: %s", r.Body)
			}
			// Multipart: the upload's algorithm, each part's checksum, the
			// object's (composite; CRC64NVME's can only be full-object).
			typ, whole := "COMPOSITE", checksumOf(alg, must(base64.StdEncoding.DecodeString(sum)))+"-1"
			if alg == "CRC64NVME" {
				typ, whole = "FULL_OBJECT", sum
			}
			r = e.alice("POST", "/b/mp?uploads", nil, "X-Amz-Checksum-Algorithm", lower, "X-Amz-Checksum-Type", strings.ToLower(typ))
			r.want(t, 200, "")
			if r.Header().Get("X-Amz-Checksum-Algorithm") != alg || r.Header().Get("X-Amz-Checksum-Type") != typ {
				t.Errorf("CreateMultipartUpload: %v", r.Header())
			}
			r = e.alice("PUT", "/b/mp?partNumber=1&uploadId=up1", data, "X-Amz-Checksum-"+lower, sum)
			r.want(t, 200, "")
			if got := r.Header().Get("X-Amz-Checksum-" + lower); got != sum {
				t.Errorf("UploadPart checksum %q, want %q", got, sum)
			}
			e.alice("PUT", "/b/mp?partNumber=2&uploadId=up1", data, "X-Amz-Checksum-"+lower, checksumOf(alg, nil)).want(t, 400, s3err.BadDigest)
			r = e.alice("GET", "/b/mp?uploadId=up1", nil)
			if !strings.Contains(r.Body.String(), "<Checksum"+alg+">"+sum+"</Checksum"+alg+">") || !strings.Contains(r.Body.String(), "<ChecksumAlgorithm>"+alg+"</ChecksumAlgorithm>") {
				t.Errorf("ListParts: %s", r.Body)
			}
			r = e.alice("POST", "/b/mp?uploadId=up1", []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"e"</ETag><Checksum`+
				alg+`>`+sum+`</Checksum`+alg+`></Part></CompleteMultipartUpload>`))
			if !strings.Contains(r.Body.String(), "<Checksum"+alg+">"+whole+"</Checksum"+alg+"><ChecksumType>"+typ+"</ChecksumType>") {
				t.Errorf("CompleteMultipartUpload: %s", r.Body)
			}
		})
	}
	t.Run("no checksum", func(t *testing.T) {
		e := newS3Env(t)
		e.alice("POST", "/b/mp?uploads", nil).want(t, 200, "")
		r := e.alice("PUT", "/b/mp?partNumber=1&uploadId=up1", data)
		for h := range r.Header() {
			if strings.HasPrefix(h, "X-Amz-Checksum") {
				t.Errorf("UploadPart: %s", h)
			}
		}
		r = e.alice("POST", "/b/mp?uploadId=up1", []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"e"</ETag></Part></CompleteMultipartUpload>`))
		if strings.Contains(r.Body.String(), "<Checksum") {
			t.Errorf("CompleteMultipartUpload: %s", r.Body)
		}
	})
	t.Run("unknown algorithm", func(t *testing.T) {
		e := newS3Env(t)
		e.alice("POST", "/b/mp?uploads", nil, "X-Amz-Checksum-Algorithm", "MD5").want(t, 400, s3err.InvalidArgument)
		e.noWrites(t)
		// An SDK algorithm Coffer does not know is not computed.
		e.alice("PUT", "/b/k", data, "X-Amz-Sdk-Checksum-Algorithm", "MD5").want(t, 200, "")
		if e.store.LastPut.ChecksumAlgorithm != "" {
			t.Errorf("asked for %q", e.store.LastPut.ChecksumAlgorithm)
		}
	})
	// An aws-chunked body's trailing checksum is verified while it is
	// decoded; the service computes the same algorithm.
	for _, tc := range []struct {
		name, trailer, line string
		status              int
		code                string
	}{
		{"trailer", "x-amz-checksum-crc32c", "x-amz-checksum-crc32c:" + checksumOf("CRC32C", data), 200, ""},
		{"trailer, upper case", "X-Amz-Checksum-SHA256", "x-amz-checksum-sha256:" + checksumOf("SHA256", data), 200, ""},
		{"trailer mismatch", "x-amz-checksum-crc32c", "x-amz-checksum-crc32c:" + checksumOf("CRC32C", nil), 400, s3err.BadDigest},
		{"trailer unknown", "x-amz-checksum-md5", "x-amz-checksum-md5:AAAA", 400, s3err.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newS3Env(t)
			body := []byte(fmt.Sprintf("%x\r\n%s\r\n0\r\n%s\r\n\r\n", len(data), data, tc.line))
			r := e.do(req{method: "PUT", target: "/b/k", body: body, as: aliceKey, payload: sigv4.StreamingUnsignedPayloadTrailer,
				hdr: []string{"Content-Encoding", "aws-chunked", "X-Amz-Decoded-Content-Length", fmt.Sprint(len(data)), "X-Amz-Trailer", tc.trailer}})
			r.want(t, tc.status, tc.code)
			if tc.status != 200 {
				e.noWrites(t)
				return
			}
			alg := strings.ToUpper(strings.TrimPrefix(strings.ToLower(tc.trailer), "x-amz-checksum-"))
			if p := e.store.LastPut; p.ChecksumAlgorithm != alg || p.ChecksumWant != nil || string(e.store.Objects["b/k"].Data) != string(data) {
				t.Errorf("asked the service for %q %x; stored %q", p.ChecksumAlgorithm, p.ChecksumWant, e.store.Objects["b/k"].Data)
			}
			if got := r.Header().Get("X-Amz-Checksum-" + alg); got != checksumOf(alg, data) {
				t.Errorf("response checksum %q", got)
			}
		})
	}
}

// TestUploadPartDirect: an UploadPart is a direct upload's part
// (object.PartInput.Direct: opaque ETag, no MD5 unless announced) only
// when it comes through a URL presigned with the user's internal key,
// which the file API presigns direct uploads with; the same URL presigned
// with one of the user's own keys, or a header-signed request with
// either, is S3's UploadPart and keeps its MD5 ETag.
func TestUploadPartDirect(t *testing.T) {
	const target = "/b/k?partNumber=1&uploadId=up1"
	presign := func(key string) string { return presigned(t, "PUT", target, key, testNow, time.Hour) }
	for _, tc := range []struct {
		name   string
		r      req
		direct bool
	}{
		{"presigned with the internal key", req{method: "PUT", target: presign(aliceInternal), body: testData}, true},
		{"presigned with the user's key", req{method: "PUT", target: presign(aliceKey), body: testData}, false},
		{"header-signed with the internal key", req{method: "PUT", target: target, body: testData, as: aliceInternal}, false},
		{"header-signed with the user's key", req{method: "PUT", target: target, body: testData, as: aliceKey}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newS3Env(t)
			e.store.Uploads["up1"] = meta.Upload{ID: "up1", Bucket: "b", Key: "k", InitiatorID: alice}
			e.do(tc.r).want(t, 200, "")
			if got := e.store.LastPart.Direct; got != tc.direct {
				t.Errorf("PartInput.Direct %v, want %v", got, tc.direct)
			}
		})
	}
}

// TestListObjectsNoParts: ListObjects (v1 and v2) asks the store for no
// parts of multipart objects (meta.ListOptions.NoParts): the page shows
// none of them.
func TestListObjectsNoParts(t *testing.T) {
	for _, target := range []string{"/b?list-type=2", "/b"} {
		e := newS3Env(t)
		e.alice("GET", target, nil).want(t, 200, "")
		if o := e.store.LastList; !o.NoParts {
			t.Errorf("%s listed with %+v, want NoParts", target, o)
		}
	}
}

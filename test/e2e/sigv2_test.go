package e2e

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/sigv2"
	"github.com/coffer-storage/coffer/test/testenv"
)

// s3v2 sends a request signed with SigV2's Authorization header; path is
// "/bucket/key" (escaped as needed), hdr pairs of headers.
func (u *s3User) s3v2(t *testing.T, method, path string, body []byte, hdr ...string) s3Resp {
	t.Helper()
	req, err := http.NewRequest(method, u.srv.S3URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if err := sigv2.SignRequest(req, "", u.id, u.secret, time.Now()); err != nil {
		t.Fatal(err)
	}
	return doS3(t, req)
}

// presignV2 returns a SigV2 presigned URL for path, valid until expires.
func (u *s3User) presignV2(t *testing.T, method, path string, expires time.Time) string {
	t.Helper()
	signed, err := sigv2.Presign(method, u.srv.S3URL+path, "", nil, u.id, u.secret, expires)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

// send sends an unsigned request (or one signed in its URL).
func send(t *testing.T, method, url string, body []byte, hdr ...string) s3Resp {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return doS3(t, req)
}

// TestS3SigV2 drives the real binary with AWS Signature Version 2: header
// authentication through a whole object life cycle (including multipart),
// presigned URLs, and every refusal (expired, too far ahead, tampered,
// skewed, unknown or revoked key, another user's bucket, bad body digests).
func TestS3SigV2(t *testing.T) {
	srv := testenv.Start(t)
	u := newS3User(t, srv)
	other := newS3User(t, srv)
	bucket := "sigv2-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))
	data := randBytes(t, 100<<10)
	key := "/" + bucket + "/dir/a%20key+plus.bin"

	t.Run("header: create bucket, put, get, list, delete", func(t *testing.T) {
		if r := u.s3v2(t, "PUT", "/"+bucket, nil); r.status != 200 {
			t.Fatalf("CreateBucket: %d %s", r.status, r.body)
		}
		if r := u.s3v2(t, "PUT", key, data, "Content-Type", "application/x-test", "X-Amz-Meta-Color", "red"); r.status != 200 {
			t.Fatalf("PutObject: %d %s", r.status, r.body)
		}
		r := u.s3v2(t, "GET", key, nil)
		if r.status != 200 || !bytes.Equal(r.body, data) {
			t.Fatalf("GetObject: %d, %d bytes (want 200, %d bytes) %s", r.status, len(r.body), len(data), r.body)
		}
		if got, want := r.header.Get("Content-Type"), "application/x-test"; got != want {
			t.Errorf("Content-Type = %q, want %q", got, want)
		}
		if got, want := r.header.Get("X-Amz-Meta-Color"), "red"; got != want {
			t.Errorf("x-amz-meta-color = %q, want %q", got, want)
		}
		if r := u.s3v2(t, "GET", key, nil, "Range", "bytes=0-9"); r.status != 206 || !bytes.Equal(r.body, data[:10]) {
			t.Errorf("ranged GetObject: %d, %d bytes", r.status, len(r.body))
		}
		r = u.s3v2(t, "GET", "/"+bucket+"?list-type=2&prefix=dir%2F", nil)
		if r.status != 200 || !bytes.Contains(r.body, []byte("<Key>dir/a key+plus.bin</Key>")) {
			t.Errorf("ListObjectsV2: %d %s", r.status, r.body)
		}
		if r := u.s3v2(t, "PUT", "/"+bucket+"/gone", []byte("x")); r.status != 200 {
			t.Fatalf("PutObject: %d %s", r.status, r.body)
		}
		if r := u.s3v2(t, "DELETE", "/"+bucket+"/gone", nil); r.status != 204 {
			t.Errorf("DeleteObject: %d %s", r.status, r.body)
		}
		u.absent(t, "/"+bucket+"/gone")
	})

	t.Run("header: multipart upload", func(t *testing.T) {
		mpu := "/" + bucket + "/mpu"
		r := u.s3v2(t, "POST", mpu+"?uploads", nil)
		var init struct{ UploadId string }
		if r.status != 200 || xml.Unmarshal(r.body, &init) != nil || init.UploadId == "" {
			t.Fatalf("CreateMultipartUpload: %d %s", r.status, r.body)
		}
		part1, part2 := randBytes(t, 5<<20), []byte("tail")
		var etags []string
		for i, p := range [][]byte{part1, part2} {
			r := u.s3v2(t, "PUT", mpu+"?partNumber="+string(rune('1'+i))+"&uploadId="+init.UploadId, p)
			if r.status != 200 {
				t.Fatalf("UploadPart %d: %d %s", i+1, r.status, r.body)
			}
			etags = append(etags, r.header.Get("ETag"))
		}
		complete := "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" + etags[0] +
			"</ETag></Part><Part><PartNumber>2</PartNumber><ETag>" + etags[1] + "</ETag></Part></CompleteMultipartUpload>"
		if r := u.s3v2(t, "POST", mpu+"?uploadId="+init.UploadId, []byte(complete)); r.status != 200 {
			t.Fatalf("CompleteMultipartUpload: %d %s", r.status, r.body)
		}
		if r := u.s3v2(t, "GET", mpu, nil); r.status != 200 || !bytes.Equal(r.body, append(part1, part2...)) {
			t.Errorf("GET completed upload: %d, %d bytes", r.status, len(r.body))
		}
	})

	t.Run("presigned GET and PUT", func(t *testing.T) {
		r := send(t, "GET", u.presignV2(t, "GET", key, time.Now().Add(time.Hour)), nil)
		if r.status != 200 || !bytes.Equal(r.body, data) {
			t.Fatalf("presigned GET: %d, %d bytes %s", r.status, len(r.body), r.body)
		}
		body := randBytes(t, 70<<10)
		if r := send(t, "PUT", u.presignV2(t, "PUT", "/"+bucket+"/pre%20put", time.Now().Add(time.Hour)), body); r.status != 200 {
			t.Fatalf("presigned PUT: %d %s", r.status, r.body)
		}
		if r := u.s3v2(t, "GET", "/"+bucket+"/pre%20put", nil); r.status != 200 || !bytes.Equal(r.body, body) {
			t.Errorf("GET after presigned PUT: %d, %d bytes", r.status, len(r.body))
		}
		// A signed response override is honoured.
		r = send(t, "GET", u.presignV2(t, "GET", key+"?response-content-type=text%2Fx-override", time.Now().Add(time.Hour)), nil)
		if r.status != 200 || r.header.Get("Content-Type") != "text/x-override" {
			t.Errorf("presigned GET with override: %d, Content-Type %q", r.status, r.header.Get("Content-Type"))
		}
	})

	t.Run("presigned PUT with metadata in the query", func(t *testing.T) {
		// botocore writes Content-Type and x-amz-* of a presigned request
		// into the query; they are signed and must take effect.
		h := http.Header{"Content-Type": {"text/plain"}, "X-Amz-Meta-Origin": {"query"}}
		signed, err := sigv2.Presign("PUT", srv.S3URL+"/"+bucket+"/meta", "", h, u.id, u.secret, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		url := signed + "&content-type=text%2Fplain&x-amz-meta-origin=query"
		if r := send(t, "PUT", strings.Replace(url, "origin=query", "origin=other", 1), []byte("m")); r.status != 403 || r.code != "SignatureDoesNotMatch" {
			t.Errorf("tampered query metadata: got %d %s", r.status, r.code)
		}
		if r := send(t, "PUT", url, []byte("m")); r.status != 200 {
			t.Fatalf("presigned PUT: %d %s", r.status, r.body)
		}
		r := u.s3v2(t, "HEAD", "/"+bucket+"/meta", nil)
		if r.header.Get("Content-Type") != "text/plain" || r.header.Get("X-Amz-Meta-Origin") != "query" {
			t.Errorf("HEAD: Content-Type %q, x-amz-meta-origin %q; want text/plain, query", r.header.Get("Content-Type"), r.header.Get("X-Amz-Meta-Origin"))
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			do     func(t *testing.T) s3Resp
			status int
			code   string
			absent string // must not exist afterwards
		}{
			{"expired", func(t *testing.T) s3Resp {
				return send(t, "GET", u.presignV2(t, "GET", key, time.Now().Add(-time.Minute)), nil)
			}, 403, "AccessDenied", ""},
			{"expires more than 7 days ahead", func(t *testing.T) s3Resp {
				return send(t, "GET", u.presignV2(t, "GET", key, time.Now().Add(8*24*time.Hour)), nil)
			}, 403, "AccessDenied", ""},
			{"presigned key tampered", func(t *testing.T) s3Resp {
				url := u.presignV2(t, "PUT", "/"+bucket+"/t1", time.Now().Add(time.Hour))
				return send(t, "PUT", strings.Replace(url, "/t1?", "/t2?", 1), data)
			}, 403, "SignatureDoesNotMatch", "/" + bucket + "/t2"},
			{"presigned method tampered", func(t *testing.T) s3Resp {
				return send(t, "PUT", u.presignV2(t, "GET", "/"+bucket+"/t3", time.Now().Add(time.Hour)), data)
			}, 403, "SignatureDoesNotMatch", "/" + bucket + "/t3"},
			{"presigned expiry tampered", func(t *testing.T) s3Resp {
				exp := time.Now().Add(time.Hour)
				url := u.presignV2(t, "GET", key, exp)
				return send(t, "GET", strings.Replace(url, itoa(exp.Unix()), itoa(exp.Unix()+3600), 1), nil)
			}, 403, "SignatureDoesNotMatch", ""},
			{"presigned sub-resource added", func(t *testing.T) s3Resp {
				return send(t, "DELETE", u.presignV2(t, "DELETE", key, time.Now().Add(time.Hour))+"&uploadId=x", nil)
			}, 403, "SignatureDoesNotMatch", ""},
			{"presigned PUT turned into a copy by the query", func(t *testing.T) s3Resp {
				h := http.Header{"X-Amz-Copy-Source": {key}}
				signed, _ := sigv2.Presign("PUT", srv.S3URL+"/"+bucket+"/t11", "", h, u.id, u.secret, time.Now().Add(time.Hour))
				return send(t, "PUT", signed+"&x-amz-copy-source="+url.QueryEscape(key), []byte("body"))
			}, 400, "InvalidRequest", "/" + bucket + "/t11"},
			{"header signed, then a header changed", func(t *testing.T) s3Resp {
				req, _ := http.NewRequest("PUT", srv.S3URL+"/"+bucket+"/t4", bytes.NewReader(data))
				req.Header.Set("X-Amz-Acl", "private")
				sigv2.SignRequest(req, "", u.id, u.secret, time.Now())
				req.Header.Set("X-Amz-Acl", "public-read")
				return doS3(t, req)
			}, 403, "SignatureDoesNotMatch", "/" + bucket + "/t4"},
			{"header signed, then the key changed", func(t *testing.T) s3Resp {
				req, _ := http.NewRequest("PUT", srv.S3URL+"/"+bucket+"/t5", bytes.NewReader(data))
				sigv2.SignRequest(req, "", u.id, u.secret, time.Now())
				req.URL.Path = "/" + bucket + "/t6"
				return doS3(t, req)
			}, 403, "SignatureDoesNotMatch", "/" + bucket + "/t6"},
			{"clock skew", func(t *testing.T) s3Resp {
				req, _ := http.NewRequest("GET", srv.S3URL+key, nil)
				sigv2.SignRequest(req, "", u.id, u.secret, time.Now().Add(-20*time.Minute))
				return doS3(t, req)
			}, 403, "RequestTimeTooSkewed", ""},
			{"no date", func(t *testing.T) s3Resp {
				req, _ := http.NewRequest("GET", srv.S3URL+key, nil)
				sigv2.SignRequest(req, "", u.id, u.secret, time.Now())
				req.Header.Del("Date")
				return doS3(t, req)
			}, 403, "AccessDenied", ""},
			{"malformed header", func(t *testing.T) s3Resp {
				return send(t, "GET", srv.S3URL+key, nil, "Authorization", "AWS "+u.id, "Date", time.Now().UTC().Format(http.TimeFormat))
			}, 400, "InvalidArgument", ""},
			{"unknown key", func(t *testing.T) s3Resp {
				signed, _ := sigv2.Presign("GET", srv.S3URL+key, "", nil, "AKIDUNKNOWN", "x", time.Now().Add(time.Hour))
				return send(t, "GET", signed, nil)
			}, 403, "InvalidAccessKeyId", ""},
			{"another user's bucket", func(t *testing.T) s3Resp {
				return other.s3v2(t, "PUT", "/"+bucket+"/t7", data)
			}, 403, "AccessDenied", "/" + bucket + "/t7"},
			{"x-amz-content-sha256 mismatch", func(t *testing.T) s3Resp {
				return u.s3v2(t, "PUT", "/"+bucket+"/t8", data, "X-Amz-Content-Sha256", hexSHA([]byte("other")))
			}, 400, "XAmzContentSHA256Mismatch", "/" + bucket + "/t8"},
			{"Content-MD5 mismatch", func(t *testing.T) s3Resp {
				sum := md5.Sum([]byte("other"))
				return u.s3v2(t, "PUT", "/"+bucket+"/t9", data, "Content-Md5", base64.StdEncoding.EncodeToString(sum[:]))
			}, 400, "BadDigest", "/" + bucket + "/t9"},
			{"aws-chunked body", func(t *testing.T) s3Resp {
				return u.s3v2(t, "PUT", "/"+bucket+"/t10", data, "X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
			}, 400, "InvalidArgument", "/" + bucket + "/t10"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := c.do(t)
				if r.status != c.status || r.code != c.code {
					t.Errorf("got %d %s, want %d %s\n%s", r.status, r.code, c.status, c.code, r.body)
				}
				if c.absent != "" {
					u.absent(t, c.absent)
				}
			})
		}
	})

	t.Run("revoked key", func(t *testing.T) {
		c := srv.NewUser(t)
		var k struct {
			ID     string `json:"access_key_id"`
			Secret string `json:"secret_access_key"`
		}
		if st := c.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "revoked"}, &k); st != 201 {
			t.Fatalf("create key: %d", st)
		}
		v := &s3User{Client: c, srv: srv, id: k.ID, secret: k.Secret}
		b := bucket + "-r"
		if r := v.s3v2(t, "PUT", "/"+b, nil); r.status != 200 {
			t.Fatalf("CreateBucket: %d %s", r.status, r.body)
		}
		url := v.presignV2(t, "GET", "/"+b+"?list-type=2", time.Now().Add(time.Hour))
		if r := send(t, "GET", url, nil); r.status != 200 {
			t.Fatalf("presigned list before revoking: %d %s", r.status, r.body)
		}
		resp := c.Do(t, "DELETE", "/api/v1/keys/"+k.ID, nil)
		resp.Body.Close()
		if resp.StatusCode != 204 {
			t.Fatalf("delete key: %d", resp.StatusCode)
		}
		if r := send(t, "GET", url, nil); r.status != 403 || r.code != "InvalidAccessKeyId" {
			t.Errorf("presigned list after revoking: got %d %s, want 403 InvalidAccessKeyId", r.status, r.code)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestS3SigV2VirtualHost: with --s3-domain, SigV2 signs the bucket of
// BUCKET.domain as the first segment of the resource, and a signature for
// one bucket does not address another.
func TestS3SigV2VirtualHost(t *testing.T) {
	srv := testenv.Start(t, "--s3-domain", "s3.coffer.test")
	u := newS3User(t, srv)
	bucket := "vhost2-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))
	u.mustBucket(t, bucket)
	port := srv.S3URL[strings.LastIndex(srv.S3URL, ":"):]
	host := bucket + ".s3.coffer.test" + port
	req, _ := http.NewRequest("PUT", srv.S3URL+"/dir/v.txt", strings.NewReader("virtual"))
	req.Host = host
	if err := sigv2.SignRequest(req, bucket, u.id, u.secret, time.Now()); err != nil {
		t.Fatal(err)
	}
	if r := doS3(t, req); r.status != 200 {
		t.Fatalf("virtual-host PUT: %d %s", r.status, r.body)
	}
	signed, err := sigv2.Presign("GET", srv.S3URL+"/dir/v.txt", bucket, nil, u.id, u.secret, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	get := func(host string) s3Resp {
		req, _ := http.NewRequest("GET", signed, nil)
		req.Host = host
		return doS3(t, req)
	}
	if r := get(host); r.status != 200 || string(r.body) != "virtual" {
		t.Errorf("virtual-host presigned GET: %d %q", r.status, r.body)
	}
	// The same URL against another bucket's host, or path style, fails.
	u.mustBucket(t, bucket+"x")
	if r := get(bucket + "x.s3.coffer.test" + port); r.status != 403 || r.code != "SignatureDoesNotMatch" {
		t.Errorf("presigned GET on another bucket's host: got %d %s", r.status, r.code)
	}
	if r := get(strings.TrimPrefix(srv.S3URL, "http://")); r.status != 403 || r.code != "SignatureDoesNotMatch" {
		t.Errorf("presigned GET path style: got %d %s", r.status, r.code)
	}
}

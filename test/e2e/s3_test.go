package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
	"github.com/coffer-storage/coffer/test/testenv"
)

// s3User is a user with an S3 key.
type s3User struct {
	*testenv.Client
	srv    *testenv.Server
	id     string
	secret string
}

func newS3User(t *testing.T, srv *testenv.Server) *s3User {
	t.Helper()
	c := srv.NewUser(t)
	var k struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if st := c.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "test"}, &k); st != 201 || k.ID == "" || k.Secret == "" {
		t.Fatalf("create key: %d %+v", st, k)
	}
	return &s3User{Client: c, srv: srv, id: k.ID, secret: k.Secret}
}

type s3Resp struct {
	status int
	header http.Header
	body   []byte
	code   string // S3 error code, if any
}

func hexSHA(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// s3 sends a SigV4-signed request; path is "/bucket/key" (escaped as
// needed), hdr pairs of headers. payloadHash "" means the body's SHA-256.
func (u *s3User) s3(t *testing.T, method, path string, body []byte, payloadHash string, hdr ...string) s3Resp {
	t.Helper()
	req, err := http.NewRequest(method, u.srv.S3URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if payloadHash == "" {
		payloadHash = hexSHA(body)
	}
	if err := sigv4.SignRequest(req, u.id, u.secret, "us-east-1", payloadHash, time.Now()); err != nil {
		t.Fatal(err)
	}
	return doS3(t, req)
}

func doS3(t *testing.T, req *http.Request) s3Resp {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := s3Resp{status: resp.StatusCode, header: resp.Header, body: b}
	if resp.StatusCode >= 300 && len(b) > 0 {
		var e struct {
			Code string `xml:"Code"`
		}
		if xml.Unmarshal(b, &e) == nil {
			r.code = e.Code
		}
	}
	return r
}

func (u *s3User) mustBucket(t *testing.T, name string) {
	t.Helper()
	if r := u.s3(t, "PUT", "/"+name, nil, ""); r.status != 200 {
		t.Fatalf("create bucket %s: %d %s", name, r.status, r.body)
	}
}

// createUpload starts a multipart upload at path (/bucket/key) and returns
// its ID.
func (u *s3User) createUpload(t *testing.T, path string) string {
	t.Helper()
	init := u.s3(t, "POST", path+"?uploads", nil, "")
	var ir struct {
		UploadID string `xml:"UploadId"`
	}
	if xml.Unmarshal(init.body, &ir); ir.UploadID == "" {
		t.Fatalf("create upload: %d %s", init.status, init.body)
	}
	return ir.UploadID
}

func (u *s3User) absent(t *testing.T, path string) {
	t.Helper()
	if r := u.s3(t, "HEAD", path, nil, ""); r.status != 404 {
		t.Errorf("%s exists after a refused request (HEAD %d)", path, r.status)
	}
}

func TestS3BadInput(t *testing.T) {
	srv := testenv.Start(t)
	u := newS3User(t, srv)
	bucket := "bad-input-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))
	u.mustBucket(t, bucket)
	data := []byte("the payload")

	t.Run("wrong secret", func(t *testing.T) {
		bad := *u
		bad.secret = "wrong" + u.secret
		if r := bad.s3(t, "PUT", "/"+bucket+"/k1", data, ""); r.status != 403 || r.code != "SignatureDoesNotMatch" {
			t.Errorf("got %d %s", r.status, r.code)
		}
		u.absent(t, "/"+bucket+"/k1")
	})
	t.Run("unknown key", func(t *testing.T) {
		bad := *u
		bad.id = "CFUNKNOWNKEY00000000"
		if r := bad.s3(t, "GET", "/"+bucket, nil, ""); r.status != 403 || r.code != "InvalidAccessKeyId" {
			t.Errorf("got %d %s", r.status, r.code)
		}
	})
	t.Run("revoked key", func(t *testing.T) {
		var k struct {
			ID     string `json:"access_key_id"`
			Secret string `json:"secret_access_key"`
		}
		u.JSON(t, "POST", "/api/v1/keys", nil, &k)
		other := *u
		other.id, other.secret = k.ID, k.Secret
		if r := other.s3(t, "GET", "/"+bucket, nil, ""); r.status != 200 {
			t.Fatalf("fresh key refused: %d %s", r.status, r.body)
		}
		if st := u.JSON(t, "DELETE", "/api/v1/keys/"+k.ID, nil, nil); st != 204 {
			t.Fatalf("revoke: %d", st)
		}
		if r := other.s3(t, "PUT", "/"+bucket+"/k2", data, ""); r.status != 403 || r.code != "InvalidAccessKeyId" {
			t.Errorf("revoked key: %d %s", r.status, r.code)
		}
		u.absent(t, "/"+bucket+"/k2")
	})
	t.Run("wrong payload hash", func(t *testing.T) {
		r := u.s3(t, "PUT", "/"+bucket+"/k3", data, hexSHA([]byte("other bytes")))
		if r.status != 400 || r.code != "XAmzContentSHA256Mismatch" {
			t.Errorf("got %d %s", r.status, r.code)
		}
		u.absent(t, "/"+bucket+"/k3")
	})
	t.Run("content-md5 mismatch", func(t *testing.T) {
		wrong := md5.Sum([]byte("other"))
		r := u.s3(t, "PUT", "/"+bucket+"/k4", data, "", "Content-MD5", base64.StdEncoding.EncodeToString(wrong[:]))
		if r.status != 400 || r.code != "BadDigest" {
			t.Errorf("got %d %s", r.status, r.code)
		}
		u.absent(t, "/"+bucket+"/k4")
	})
	t.Run("checksum mismatch", func(t *testing.T) {
		r := u.s3(t, "PUT", "/"+bucket+"/k5", data, "", "X-Amz-Checksum-Crc32", "AAAAAA==")
		if r.status != 400 || r.code != "BadDigest" {
			t.Errorf("got %d %s", r.status, r.code)
		}
		u.absent(t, "/"+bucket+"/k5")
	})
	t.Run("key of 1025 bytes", func(t *testing.T) {
		r := u.s3(t, "PUT", "/"+bucket+"/"+strings.Repeat("k", 1025), data, "")
		if r.status != 400 || r.code != "KeyTooLongError" {
			t.Errorf("got %d %s", r.status, r.code)
		}
	})
	t.Run("clock skew", func(t *testing.T) {
		req, _ := http.NewRequest("GET", srv.S3URL+"/"+bucket, nil)
		sigv4.SignRequest(req, u.id, u.secret, "us-east-1", sigv4.EmptySHA256, time.Now().Add(-20*time.Minute))
		if r := doS3(t, req); r.status != 403 || r.code != "RequestTimeTooSkewed" {
			t.Errorf("got %d %s", r.status, r.code)
		}
	})
	t.Run("tampered presigned URL", func(t *testing.T) {
		signed, err := sigv4.Presign("PUT", srv.S3URL+"/"+bucket+"/k6", nil, u.id, u.secret, "us-east-1", time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tampered := strings.Replace(signed, "/k6?", "/k7?", 1)
		req, _ := http.NewRequest("PUT", tampered, bytes.NewReader(data))
		if r := doS3(t, req); r.status != 403 || r.code != "SignatureDoesNotMatch" {
			t.Errorf("got %d %s", r.status, r.code)
		}
		u.absent(t, "/"+bucket+"/k7")
		// The untampered URL works.
		req, _ = http.NewRequest("PUT", signed, bytes.NewReader(data))
		if r := doS3(t, req); r.status != 200 {
			t.Errorf("presigned PUT: %d %s", r.status, r.body)
		}
	})
	t.Run("expired presigned URL", func(t *testing.T) {
		signed, _ := sigv4.Presign("GET", srv.S3URL+"/"+bucket+"/k6", nil, u.id, u.secret, "us-east-1", time.Now().Add(-2*time.Hour), time.Hour)
		req, _ := http.NewRequest("GET", signed, nil)
		if r := doS3(t, req); r.status != 403 || r.code != "AccessDenied" {
			t.Errorf("got %d %s", r.status, r.code)
		}
	})
	t.Run("bad chunk signature", func(t *testing.T) {
		for _, badChunk := range []int{0, 1} {
			key := fmt.Sprintf("/%s/chunked-%d", bucket, badChunk)
			status, code := chunkedPut(t, u, key, [][]byte{bytes.Repeat([]byte("a"), 65536), []byte("tail")}, badChunk)
			if status != 403 || code != "SignatureDoesNotMatch" {
				t.Errorf("bad chunk %d: got %d %s", badChunk, status, code)
			}
			u.absent(t, key)
		}
		if status, _ := chunkedPut(t, u, "/"+bucket+"/chunked-ok", [][]byte{bytes.Repeat([]byte("a"), 65536), []byte("tail")}, -1); status != 200 {
			t.Errorf("valid chunked upload: %d", status)
		}
		if r := u.s3(t, "GET", "/"+bucket+"/chunked-ok", nil, ""); r.status != 200 || len(r.body) != 65540 {
			t.Errorf("chunked object: %d, %d bytes", r.status, len(r.body))
		}
	})
	t.Run("unknown operation", func(t *testing.T) {
		if r := u.s3(t, "GET", "/"+bucket+"?website", nil, ""); r.status != 501 || r.code != "NotImplemented" {
			t.Errorf("GetBucketWebsite: %d %s", r.status, r.code)
		}
		if r := u.s3(t, "PUT", "/"+bucket+"/x?torrent", []byte("<Torrent/>"), ""); r.status != 501 || r.code != "NotImplemented" {
			t.Errorf("PutObjectTorrent: %d %s", r.status, r.code)
		}
		// Object lock in a bucket made without it: S3's InvalidRequest.
		if r := u.s3(t, "PUT", "/"+bucket+"/x?retention", []byte("<Retention/>"), "", "Content-MD5", md5b64([]byte("<Retention/>"))); r.status != 400 || r.code != "InvalidRequest" {
			t.Errorf("PutObjectRetention: %d %s", r.status, r.code)
		}
		u.absent(t, "/"+bucket+"/x")
	})
	t.Run("anonymous", func(t *testing.T) {
		req, _ := http.NewRequest("PUT", srv.S3URL+"/"+bucket+"/anon", bytes.NewReader(data))
		if r := doS3(t, req); r.status != 403 || r.code != "AccessDenied" {
			t.Errorf("anonymous PUT: %d %s", r.status, r.code)
		}
		u.absent(t, "/"+bucket+"/anon")
	})
}

// chunkedPut uploads chunks with STREAMING-AWS4-HMAC-SHA256-PAYLOAD,
// corrupting the signature of chunk bad (-1: none), and returns the status
// and S3 error code.
func chunkedPut(t *testing.T, u *s3User, path string, chunks [][]byte, bad int) (int, string) {
	t.Helper()
	total := 0
	for _, c := range chunks {
		total += len(c)
	}
	now := time.Now().UTC()
	req, _ := http.NewRequest("PUT", u.srv.S3URL+path, nil)
	req.Header.Set("X-Amz-Decoded-Content-Length", fmt.Sprint(total))
	req.Header.Set("Content-Encoding", "aws-chunked")
	if err := sigv4.SignRequest(req, u.id, u.secret, "us-east-1", sigv4.StreamingPayload, now); err != nil {
		t.Fatal(err)
	}
	authz := req.Header.Get("Authorization")
	prev := authz[strings.LastIndex(authz, "Signature=")+len("Signature="):]
	date := now.Format("20060102")
	amzDate := now.Format("20060102T150405Z")
	scope := sigv4.Scope(date, "us-east-1", "s3")
	key := sigv4.SigningKey(u.secret, date, "us-east-1", "s3")
	var body bytes.Buffer
	for i, c := range append(chunks, nil) {
		sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + amzDate + "\n" + scope + "\n" + prev + "\n" + sigv4.EmptySHA256 + "\n" + hexSHA(c)
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(sts))
		sig := hex.EncodeToString(mac.Sum(nil))
		prev = sig
		if i == bad {
			sig = strings.Repeat("0", 64)
		}
		fmt.Fprintf(&body, "%x;chunk-signature=%s\r\n", len(c), sig)
		body.Write(c)
		body.WriteString("\r\n")
	}
	req.Body = io.NopCloser(bytes.NewReader(body.Bytes()))
	req.ContentLength = int64(body.Len())
	r := doS3(t, req)
	return r.status, r.code
}

// TestS3CrossUser: user B gets AccessDenied (or NoSuch*) for every
// operation on user A's buckets, objects and uploads, and nothing changes.
func TestS3CrossUser(t *testing.T) {
	srv := testenv.Start(t)
	a, b := newS3User(t, srv), newS3User(t, srv)
	ab := "alice-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))
	bb := "bob-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))
	a.mustBucket(t, ab)
	b.mustBucket(t, bb)
	secret := randBytes(t, 5000)
	// A's bucket is versioned: its versions are A's too.
	if r := a.s3(t, "PUT", "/"+ab+"?versioning", []byte(`<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>`), ""); r.status != 200 {
		t.Fatalf("enable versioning: %d %s", r.status, r.body)
	}
	if r := a.s3(t, "PUT", "/"+ab+"/secret.bin", []byte("an older secret"), ""); r.status != 200 {
		t.Fatal("setup put")
	}
	if r := a.s3(t, "PUT", "/"+ab+"/secret.bin", secret, ""); r.status != 200 {
		t.Fatal("setup put")
	}
	lv := a.s3(t, "GET", "/"+ab+"?versions", nil, "")
	var versions struct {
		Version []struct {
			VersionID string `xml:"VersionId"`
		}
	}
	if err := xml.Unmarshal(lv.body, &versions); err != nil || len(versions.Version) != 2 {
		t.Fatalf("setup versions: %d %s", lv.status, lv.body)
	}
	old := versions.Version[1].VersionID
	// A's deleted key: its latest version is a marker, which B must not
	// remove (that would bring the object back).
	a.s3(t, "PUT", "/"+ab+"/gone.bin", []byte("deleted by alice"), "")
	marker := a.s3(t, "DELETE", "/"+ab+"/gone.bin", nil, "").header.Get("X-Amz-Version-Id")
	if marker == "" {
		t.Fatal("setup delete marker")
	}
	// B's own upload, to copy A's version into.
	bUpload := "uploadId=" + url.QueryEscape(b.createUpload(t, "/"+bb+"/bmp.bin"))
	delVersion := `<Delete><Object><Key>secret.bin</Key><VersionId>` + old + `</VersionId></Object></Delete>`
	delVersionMD5 := md5.Sum([]byte(delVersion))
	b.s3(t, "PUT", "/"+bb+"/mine.bin", []byte("bob's"), "")
	init := a.s3(t, "POST", "/"+ab+"/mp.bin?uploads", nil, "")
	var ir struct {
		UploadID string `xml:"UploadId"`
	}
	xml.Unmarshal(init.body, &ir)
	if ir.UploadID == "" {
		t.Fatalf("create upload: %d %s", init.status, init.body)
	}
	part := bytes.Repeat([]byte("p"), 1000)
	pr := a.s3(t, "PUT", "/"+ab+"/mp.bin?partNumber=1&uploadId="+url.QueryEscape(ir.UploadID), part, "")
	etag := pr.header.Get("ETag")
	complete := fmt.Sprintf(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>`, etag)
	del := `<Delete><Object><Key>secret.bin</Key></Object></Delete>`
	delMD5 := md5.Sum([]byte(del))
	up := "uploadId=" + url.QueryEscape(ir.UploadID)
	const tagging = `<Tagging><TagSet><Tag><Key>by</Key><Value>bob</Value></Tag></TagSet></Tagging>`
	if r := a.s3(t, "PUT", "/"+ab+"/secret.bin?tagging", []byte(`<Tagging><TagSet><Tag><Key>by</Key><Value>alice</Value></Tag></TagSet></Tagging>`), ""); r.status != 200 {
		t.Fatalf("setup tagging: %d %s", r.status, r.body)
	}
	if r := a.s3(t, "PUT", "/"+ab+"?tagging", []byte(`<Tagging><TagSet><Tag><Key>by</Key><Value>alice</Value></Tag></TagSet></Tagging>`), ""); r.status != 204 {
		t.Fatalf("setup bucket tagging: %d %s", r.status, r.body)
	}
	cases := []struct {
		name         string
		method, path string
		body         string
		hdr          []string
	}{
		{"ListObjectsV2", "GET", "/" + ab + "?list-type=2", "", nil},
		{"ListObjects", "GET", "/" + ab, "", nil},
		{"HeadBucket", "HEAD", "/" + ab, "", nil},
		{"GetBucketLocation", "GET", "/" + ab + "?location", "", nil},
		{"DeleteBucket", "DELETE", "/" + ab, "", nil},
		{"GetObject", "GET", "/" + ab + "/secret.bin", "", nil},
		{"GetObject missing key", "GET", "/" + ab + "/missing.bin", "", nil},
		{"HeadObject", "HEAD", "/" + ab + "/secret.bin", "", nil},
		{"PutObject overwrite", "PUT", "/" + ab + "/secret.bin", "evil", nil},
		{"PutObject new", "PUT", "/" + ab + "/planted.bin", "evil", nil},
		{"DeleteObject", "DELETE", "/" + ab + "/secret.bin", "", nil},
		{"DeleteObjects", "POST", "/" + ab + "?delete", del, []string{"Content-MD5", base64.StdEncoding.EncodeToString(delMD5[:])}},
		{"CopyObject from A", "PUT", "/" + bb + "/stolen.bin", "", []string{"X-Amz-Copy-Source", "/" + ab + "/secret.bin"}},
		{"CopyObject into A", "PUT", "/" + ab + "/secret.bin", "", []string{"X-Amz-Copy-Source", "/" + bb + "/mine.bin"}},
		{"CreateMultipartUpload", "POST", "/" + ab + "/b-upload?uploads", "", nil},
		{"ListMultipartUploads", "GET", "/" + ab + "?uploads", "", nil},
		{"UploadPart", "PUT", "/" + ab + "/mp.bin?partNumber=2&" + up, "evil part", nil},
		{"UploadPartCopy", "PUT", "/" + ab + "/mp.bin?partNumber=3&" + up, "", []string{"X-Amz-Copy-Source", "/" + bb + "/mine.bin"}},
		{"ListParts", "GET", "/" + ab + "/mp.bin?" + up, "", nil},
		{"CompleteMultipartUpload", "POST", "/" + ab + "/mp.bin?" + up, complete, nil},
		{"AbortMultipartUpload", "DELETE", "/" + ab + "/mp.bin?" + up, "", nil},
		{"UploadPart via B's bucket", "PUT", "/" + bb + "/mp.bin?partNumber=2&" + up, "evil part", nil},
		{"Complete via B's bucket", "POST", "/" + bb + "/mp.bin?" + up, complete, nil},
		{"Abort via B's bucket", "DELETE", "/" + bb + "/mp.bin?" + up, "", nil},
		{"GetObject version", "GET", "/" + ab + "/secret.bin?versionId=" + old, "", nil},
		{"HeadObject version", "HEAD", "/" + ab + "/secret.bin?versionId=" + old, "", nil},
		{"DeleteObject version", "DELETE", "/" + ab + "/secret.bin?versionId=" + old, "", nil},
		{"DeleteObjects version", "POST", "/" + ab + "?delete", delVersion, []string{"Content-MD5", base64.StdEncoding.EncodeToString(delVersionMD5[:])}},
		{"ListObjectVersions", "GET", "/" + ab + "?versions", "", nil},
		{"GetBucketVersioning", "GET", "/" + ab + "?versioning", "", nil},
		{"PutBucketVersioning", "PUT", "/" + ab + "?versioning", `<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>`, nil},
		{"CopyObject of A's version", "PUT", "/" + bb + "/stolen.bin", "", []string{"X-Amz-Copy-Source", "/" + ab + "/secret.bin?versionId=" + old}},
		{"UploadPartCopy of A's version", "PUT", "/" + bb + "/bmp.bin?partNumber=1&" + bUpload, "", []string{"X-Amz-Copy-Source", "/" + ab + "/secret.bin?versionId=" + old}},
		{"DeleteObject of A's delete marker", "DELETE", "/" + ab + "/gone.bin?versionId=" + marker, "", nil},
		{"HeadObject of A's delete marker", "HEAD", "/" + ab + "/gone.bin?versionId=" + marker, "", nil},
		{"GetObject of A's deleted key", "GET", "/" + ab + "/gone.bin", "", nil},
		{"GetObjectTagging", "GET", "/" + ab + "/secret.bin?tagging", "", nil},
		{"GetObjectTagging version", "GET", "/" + ab + "/secret.bin?tagging&versionId=" + old, "", nil},
		{"PutObjectTagging", "PUT", "/" + ab + "/secret.bin?tagging", tagging, nil},
		{"PutObjectTagging version", "PUT", "/" + ab + "/secret.bin?tagging&versionId=" + old, tagging, nil},
		{"DeleteObjectTagging", "DELETE", "/" + ab + "/secret.bin?tagging", "", nil},
		{"DeleteObjectTagging version", "DELETE", "/" + ab + "/secret.bin?tagging&versionId=" + old, "", nil},
		{"GetBucketTagging", "GET", "/" + ab + "?tagging", "", nil},
		{"PutBucketTagging", "PUT", "/" + ab + "?tagging", tagging, nil},
		{"DeleteBucketTagging", "DELETE", "/" + ab + "?tagging", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := b.s3(t, tc.method, tc.path, []byte(tc.body), "", tc.hdr...)
			switch {
			case r.status == 403 && (r.code == "AccessDenied" || tc.method == "HEAD"):
			case r.status == 404 && (r.code == "NoSuchUpload" || r.code == "NoSuchKey" || tc.method == "HEAD"):
			default:
				t.Errorf("got %d %s, want 403 AccessDenied or 404", r.status, r.code)
			}
		})
	}
	// Nothing changed for A; nothing leaked to B.
	if r := a.s3(t, "GET", "/"+ab+"/secret.bin", nil, ""); r.status != 200 || !bytes.Equal(r.body, secret) {
		t.Errorf("A's object changed: %d", r.status)
	}
	if r := a.s3(t, "GET", "/"+ab+"/secret.bin?versionId="+old, nil, ""); r.status != 200 || string(r.body) != "an older secret" {
		t.Errorf("A's older version changed: %d", r.status)
	}
	if r := a.s3(t, "GET", "/"+ab+"?versions", nil, ""); r.status != 200 || strings.Count(string(r.body), "<Version>") != 3 || strings.Count(string(r.body), "<DeleteMarker>") != 1 {
		t.Errorf("A's versions changed: %d %s", r.status, r.body)
	}
	if r := a.s3(t, "GET", "/"+ab+"/gone.bin", nil, ""); r.status != 404 || r.header.Get("X-Amz-Delete-Marker") != "true" || r.header.Get("X-Amz-Version-Id") != marker {
		t.Errorf("A's deleted key: %d, marker %q, version %q", r.status, r.header.Get("X-Amz-Delete-Marker"), r.header.Get("X-Amz-Version-Id"))
	}
	if r := a.s3(t, "GET", "/"+ab+"/secret.bin?tagging&versionId="+old, nil, ""); r.status != 200 || strings.Contains(string(r.body), "bob") {
		t.Errorf("A's older version's tags changed: %d %s", r.status, r.body)
	}
	if lp := b.s3(t, "GET", "/"+bb+"/bmp.bin?"+bUpload, nil, ""); lp.status != 200 || strings.Contains(string(lp.body), "<Part>") {
		t.Errorf("B's upload holds a part copied from A's version: %d %s", lp.status, lp.body)
	}
	if r := a.s3(t, "GET", "/"+ab+"?versioning", nil, ""); !strings.Contains(string(r.body), "<Status>Enabled</Status>") {
		t.Errorf("A's versioning changed: %s", r.body)
	}
	for _, p := range []string{"/" + ab + "/secret.bin?tagging", "/" + ab + "?tagging"} {
		if r := a.s3(t, "GET", p, nil, ""); r.status != 200 || !strings.Contains(string(r.body), "<Value>alice</Value>") {
			t.Errorf("A's tags at %s changed: %d %s", p, r.status, r.body)
		}
	}
	a.absent(t, "/"+ab+"/planted.bin")
	b.absent(t, "/"+bb+"/stolen.bin")
	lp := a.s3(t, "GET", "/"+ab+"/mp.bin?"+up, nil, "")
	if lp.status != 200 || strings.Count(string(lp.body), "<Part>") != 1 {
		t.Errorf("A's upload parts changed: %d %s", lp.status, lp.body)
	}
	if r := a.s3(t, "POST", "/"+ab+"/mp.bin?"+up, []byte(complete), ""); r.status != 200 {
		t.Errorf("A cannot complete own upload: %d %s", r.status, r.body)
	}
}

// TestDirectUpload: the presigned direct-upload flow of the file API.
func TestDirectUpload(t *testing.T) {
	srv := testenv.Start(t, "--default-quota", "100MiB")
	c := srv.NewUser(t)
	const size = 13<<20 + 12345
	data := randBytes(t, size)
	type session struct {
		UploadID string `json:"upload_id"`
		PartSize int64  `json:"part_size"`
		Parts    []struct {
			PartNumber int    `json:"part_number"`
			URL        string `json:"url"`
		} `json:"parts"`
		Uploaded []struct {
			PartNumber int    `json:"part_number"`
			Size       int64  `json:"size"`
			ETag       string `json:"etag"`
		} `json:"uploaded_parts"`
	}
	var s session
	if st := c.JSON(t, "POST", "/api/v1/uploads", map[string]any{"bucket": c.Bucket, "key": "direct/big.bin", "size": size, "part_size": 5 << 20}, &s); st != 201 {
		t.Fatalf("create: %d", st)
	}
	if s.PartSize != 5<<20 || len(s.Parts) != 3 {
		t.Fatalf("session: part size %d, %d parts", s.PartSize, len(s.Parts))
	}
	// On an S3 blob backend the part URLs are the backend's own: the bytes
	// never cross Coffer.
	if testenv.ScaleOut() == strings.HasPrefix(s.Parts[0].URL, srv.S3URL) {
		t.Fatalf("part URL %s (Coffer's S3 API is %s, scale-out %v)", s.Parts[0].URL, srv.S3URL, testenv.ScaleOut())
	}
	// A part whose Content-MD5 is not its bytes' is refused, and nothing
	// is recorded (checked by the status below: 3 parts).
	if !testenv.ScaleOut() {
		other := md5.Sum([]byte("other bytes"))
		req, _ := http.NewRequest("PUT", s.Parts[2].URL, bytes.NewReader(data[2*s.PartSize:]))
		req.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(other[:]))
		if r := doS3(t, req); r.status != 400 || r.code != "BadDigest" {
			t.Fatalf("part with a wrong Content-MD5: %d %s", r.status, r.code)
		}
	}
	// PUT the parts out of order and concurrently, straight to the URLs.
	etags := make([]string, len(s.Parts))
	errs := make(chan error, len(s.Parts))
	for _, i := range []int{2, 0, 1} {
		go func() {
			p := s.Parts[i]
			lo := int64(p.PartNumber-1) * s.PartSize
			hi := min(lo+s.PartSize, size)
			req, _ := http.NewRequest("PUT", p.URL, bytes.NewReader(data[lo:hi]))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("part %d: %d", p.PartNumber, resp.StatusCode)
				return
			}
			etags[i] = resp.Header.Get("ETag")
			errs <- nil
		}()
	}
	for range s.Parts {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// On Coffer's S3 API a direct upload's part ETag is opaque (24 hex
	// digits: no MD5 is computed for it), never an MD5's 32.
	for i, e := range etags {
		if raw, err := hex.DecodeString(strings.Trim(e, `"`)); !testenv.ScaleOut() && (err != nil || len(raw) != 12) {
			t.Errorf("part %d's ETag %s: want 24 hex digits", i+1, e)
		}
	}
	var st session
	if code := c.JSON(t, "GET", "/api/v1/uploads/"+s.UploadID, nil, &st); code != 200 || len(st.Uploaded) != 3 {
		t.Fatalf("status: %d %+v", code, st)
	}
	// Another user can neither see, complete nor abort it.
	other := srv.NewUser(t)
	parts := []map[string]any{}
	for i, e := range etags {
		parts = append(parts, map[string]any{"part_number": i + 1, "etag": e})
	}
	for _, probe := range []struct{ method, path string }{
		{"GET", "/api/v1/uploads/" + s.UploadID},
		{"POST", "/api/v1/uploads/" + s.UploadID + "/complete"},
		{"DELETE", "/api/v1/uploads/" + s.UploadID},
	} {
		var body any
		if probe.method == "POST" {
			body = map[string]any{"parts": parts}
		}
		if code := other.JSON(t, probe.method, probe.path, body, nil); code != 404 {
			t.Errorf("other user %s %s: %d, want 404", probe.method, probe.path, code)
		}
	}
	// A part URL is bound to its upload, part and key: reusing it for
	// another part (or, on Coffer's own S3 API, another key) fails.
	tampered := strings.Replace(s.Parts[0].URL, "partNumber=1", "partNumber=9", 1)
	if !testenv.ScaleOut() {
		tampered = strings.Replace(s.Parts[0].URL, "direct/big.bin", "direct/other.bin", 1)
	}
	req, _ := http.NewRequest("PUT", tampered, bytes.NewReader([]byte("x")))
	if r := doS3(t, req); r.status != 403 {
		t.Errorf("tampered part URL: %d", r.status)
	}
	var f fileJSON
	if code := c.JSON(t, "POST", "/api/v1/uploads/"+s.UploadID+"/complete", map[string]any{"parts": parts}, &f); code != 200 || f.Size != size {
		t.Fatalf("complete: %d %+v", code, f)
	}
	if tag, n, ok := strings.Cut(strings.Trim(f.ETag, `"`), "-"); !ok || len(tag) != 32 || n != "3" {
		t.Errorf("object ETag %s: want the multipart form <32 hex>-3", f.ETag)
	}
	resp, body := get(t, c, c.Bucket, "direct/big.bin")
	if resp.StatusCode != 200 || sha(body) != sha(data) {
		t.Fatalf("download: %d, sha ok %v", resp.StatusCode, sha(body) == sha(data))
	}
	if resp, body := get(t, c, c.Bucket, "direct/big.bin", "Range", fmt.Sprintf("bytes=%d-%d", 5<<20-10, 5<<20+9)); resp.StatusCode != 206 || !bytes.Equal(body, data[5<<20-10:5<<20+10]) {
		t.Errorf("range across parts: %d", resp.StatusCode)
	}
	if code := c.JSON(t, "GET", "/api/v1/uploads/"+s.UploadID, nil, nil); code != 404 {
		t.Errorf("completed session still visible: %d", code)
	}

	// Abort reclaims: usage returns to what it was.
	var me1, me2 struct {
		UsageBytes int64 `json:"usage_bytes"`
	}
	c.JSON(t, "GET", "/api/v1/me", nil, &me1)
	var s2 session
	c.JSON(t, "POST", "/api/v1/uploads", map[string]any{"bucket": c.Bucket, "key": "direct/aborted.bin", "size": 6 << 20}, &s2)
	req, _ = http.NewRequest("PUT", s2.Parts[0].URL, bytes.NewReader(data[:6<<20]))
	if r := doS3(t, req); r.status != 200 {
		t.Fatalf("part: %d %s", r.status, r.body)
	}
	if code := c.JSON(t, "DELETE", "/api/v1/uploads/"+s2.UploadID, nil, nil); code != 204 {
		t.Fatalf("abort: %d", code)
	}
	c.JSON(t, "GET", "/api/v1/me", nil, &me2)
	if me1.UsageBytes != me2.UsageBytes {
		t.Errorf("usage after abort %d, before %d", me2.UsageBytes, me1.UsageBytes)
	}
	if resp, _ := get(t, c, c.Bucket, "direct/aborted.bin"); resp.StatusCode != 404 {
		t.Errorf("aborted upload visible: %d", resp.StatusCode)
	}
	// The quota is checked at create.
	var p testenv.Problem
	if code := c.JSON(t, "POST", "/api/v1/uploads", map[string]any{"bucket": c.Bucket, "key": "too/big", "size": 200 << 20}, &p); code != 507 || p.Code != "quota_exceeded" {
		t.Errorf("over-quota session: %d %s", code, p.Code)
	}
	// Declared size must match what is completed.
	var s3s session
	c.JSON(t, "POST", "/api/v1/uploads", map[string]any{"bucket": c.Bucket, "key": "direct/short.bin", "size": 100}, &s3s)
	req, _ = http.NewRequest("PUT", s3s.Parts[0].URL, bytes.NewReader(data[:50]))
	r := doS3(t, req)
	if code := c.JSON(t, "POST", "/api/v1/uploads/"+s3s.UploadID+"/complete", map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": r.header.Get("ETag")}}}, &p); code != 400 {
		t.Errorf("short upload completed: %d", code)
	}
}

// TestKeyCLI: `coffer key create` issues a working key while the server
// runs, and `coffer key delete` revokes it: on the embedded shape the
// command is a separate process that cannot notify the server, whose key
// cache sees the deletion within its bound (1 s); on PostgreSQL the
// deletion is announced to the nodes at once.
func TestKeyCLI(t *testing.T) {
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	out, err := srv.Command("key", "create", "--data", srv.Data, "--email", c.Email, "--name", "cli").CombinedOutput()
	if err != nil {
		t.Fatalf("key create: %v\n%s", err, out)
	}
	var id, secret string
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "access_key_id:"); ok {
			id = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "secret_access_key:"); ok {
			secret = strings.TrimSpace(v)
		}
	}
	u := &s3User{Client: c, srv: srv, id: id, secret: secret}
	if r := u.s3(t, "GET", "/", nil, ""); r.status != 200 || !strings.Contains(string(r.body), c.Bucket) {
		t.Fatalf("ListBuckets with the CLI key: %d %s", r.status, r.body)
	}
	if out, err := srv.Command("key", "delete", "--data", srv.Data, "--email", c.Email, "--id", id).CombinedOutput(); err != nil {
		t.Fatalf("key delete: %v\n%s", err, out)
	}
	// The server's cached key was loaded before the deletion, so it
	// expires within the cache's 1 s: a request sent later is refused
	// (however long the machine takes to answer it).
	deleted := time.Now()
	for {
		sent := time.Now()
		r := u.s3(t, "GET", "/", nil, "")
		if r.status == 403 && r.code == "InvalidAccessKeyId" {
			break
		}
		if sent.Sub(deleted) > time.Second {
			t.Fatalf("revoked CLI key still answers %d %s to a request sent %v after the deletion", r.status, r.code, sent.Sub(deleted))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestS3VirtualHost: with --s3-domain, BUCKET.domain addresses BUCKET.
func TestS3VirtualHost(t *testing.T) {
	srv := testenv.Start(t, "--s3-domain", "s3.coffer.test")
	u := newS3User(t, srv)
	bucket := "vhost-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))
	u.mustBucket(t, bucket)
	port := srv.S3URL[strings.LastIndex(srv.S3URL, ":"):]
	send := func(method, path string, body []byte) s3Resp {
		req, _ := http.NewRequest(method, srv.S3URL+path, bytes.NewReader(body))
		req.Host = bucket + ".s3.coffer.test" + port
		if err := sigv4.SignRequest(req, u.id, u.secret, "us-east-1", hexSHA(body), time.Now()); err != nil {
			t.Fatal(err)
		}
		return doS3(t, req)
	}
	if r := send("PUT", "/dir/v.txt", []byte("virtual")); r.status != 200 {
		t.Fatalf("virtual-host PUT: %d %s", r.status, r.body)
	}
	if r := u.s3(t, "GET", "/"+bucket+"/dir/v.txt", nil, ""); r.status != 200 || string(r.body) != "virtual" {
		t.Errorf("path-style GET of a virtual-host PUT: %d %q", r.status, r.body)
	}
	if r := send("GET", "/?list-type=2", nil); r.status != 200 || !strings.Contains(string(r.body), "<Key>dir/v.txt</Key>") {
		t.Errorf("virtual-host list: %d %s", r.status, r.body)
	}
}

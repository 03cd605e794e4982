package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
	"github.com/coffer-storage/coffer/test/testenv"
)

// Encryption at rest, on both shapes (docs/encryption.md): with
// --encryption on, no byte of an object's plaintext reaches the data
// folder (SQLite files, blobs) or MinIO's, while every read — whole
// objects and ranges, single, multipart, inline, copies — returns the
// exact bytes; objects stored before encryption was turned on stay
// readable; a flipped byte in a blob is an error, never data.

// storageScanner reports whether needle appears in any file the server's
// stores keep: the data folder (embedded) or MinIO's data folder and the
// PostgreSQL data folder (scale-out).
type storageScanner struct{ dirs []string }

func (s storageScanner) contains(t *testing.T, needle []byte) []string {
	t.Helper()
	var found []string
	for _, dir := range s.dirs {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(path)
			if err == nil && bytes.Contains(b, needle) {
				found = append(found, path)
			}
			return nil
		})
	}
	return found
}

// fill returns n bytes of marker repeated, with a counter every repeat so
// ranges are not all alike.
func fill(marker string, n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s%08d|", marker, i)
	}
	return b.Bytes()[:n]
}

func TestEncryptionAtRest(t *testing.T) {
	var (
		srv     *testenv.Server
		scanner storageScanner
		kmsArgs []string
	)
	if testenv.ScaleOut() {
		b := testenv.NewBackends(t)
		// Every node must share the keys: a keyring file named by --kms.
		keyring := filepath.Join(t.TempDir(), "keyring")
		key := base64.StdEncoding.EncodeToString(randBytes(t, 32))
		if err := os.WriteFile(keyring, []byte("default 1 "+key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		kmsArgs = []string{"--kms", "local://" + keyring}
		srv = testenv.StartNode(t, b)
		scanner = storageScanner{dirs: []string{filepath.Join(b.MinIO.Dir, "data"), b.PG.Dir, srv.Data}}
	} else {
		srv = testenv.Start(t)
		scanner = storageScanner{dirs: []string{srv.Data}}
	}
	u := newS3User(t, srv)
	bucket := "enc-" + hex.EncodeToString(randBytes(t, 4))
	u.mustBucket(t, bucket)
	put := func(key string, data []byte, hdr ...string) s3Resp {
		t.Helper()
		r := u.s3(t, "PUT", "/"+bucket+"/"+key, data, "", hdr...)
		if r.status != 200 {
			t.Fatalf("PUT %s: %d %s", key, r.status, r.body)
		}
		return r
	}

	// Before: plaintext objects (a blob and an inline one). The scanner
	// must find their marker, or it proves nothing later.
	const plainMarker = "PLAINTEXT-CONTROL-c0ffee-"
	plainBig, plainSmall := fill(plainMarker, 300_000), fill(plainMarker, 500)
	put("plain-big", plainBig)
	put("plain-small", plainSmall)
	if testenv.ScaleOut() {
		time.Sleep(time.Second) // PostgreSQL's WAL reaches the disk
	}
	if found := scanner.contains(t, []byte(plainMarker)); len(found) == 0 {
		t.Fatal("the scanner does not find plaintext stored without encryption: it cannot prove anything")
	}

	// Turn encryption on.
	srv.Args = append(slices.Clone(srv.Args), append([]string{"--encryption", "on"}, kmsArgs...)...)
	srv.Restart()
	wantBody(t, u, bucket, "plain-big", plainBig)
	wantBody(t, u, bucket, "plain-small", plainSmall)

	const marker = "SECRET-MARKER-9d1e7b-"
	single := fill(marker, 300_000) // 4.6 segments
	small := fill(marker, 1000)     // inline
	put("single", single)
	put("small", small)
	// Multipart: two 5 MiB parts and a small last one.
	sizes := []int{5 << 20, 5<<20 + 3, 1000}
	multi := fill(marker, sizes[0]+sizes[1]+sizes[2])
	init := u.s3(t, "POST", "/"+bucket+"/multi?uploads", nil, "")
	var ir struct {
		UploadID string `xml:"UploadId"`
	}
	xml.Unmarshal(init.body, &ir)
	if ir.UploadID == "" {
		t.Fatalf("create upload: %d %s", init.status, init.body)
	}
	complete := "<CompleteMultipartUpload>"
	off := 0
	for i, n := range sizes {
		pr := u.s3(t, "PUT", fmt.Sprintf("/%s/multi?partNumber=%d&uploadId=%s", bucket, i+1, url.QueryEscape(ir.UploadID)), multi[off:off+n], "")
		if pr.status != 200 {
			t.Fatalf("part %d: %d %s", i+1, pr.status, pr.body)
		}
		complete += fmt.Sprintf("<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", i+1, pr.header.Get("ETag"))
		off += n
	}
	complete += "</CompleteMultipartUpload>"
	if r := u.s3(t, "POST", "/"+bucket+"/multi?uploadId="+url.QueryEscape(ir.UploadID), []byte(complete), ""); r.status != 200 || bytes.Contains(r.body, []byte("<Error>")) {
		t.Fatalf("complete: %d %s", r.status, r.body)
	}
	// Copies: of an encrypted object, of a plaintext one.
	put("copy-single", nil, "X-Amz-Copy-Source", "/"+bucket+"/single")
	put("copy-plain", nil, "X-Amz-Copy-Source", "/"+bucket+"/plain-big")
	// The file API stores through the same service.
	fileSmall := fill(marker, 200)
	if resp := u.Do(t, "PUT", testenv.FileURL(bucket, "file-small"), bytes.NewReader(fileSmall)); resp.StatusCode != 201 && resp.StatusCode != 200 {
		t.Fatalf("file API PUT: %d", resp.StatusCode)
	} else {
		resp.Body.Close()
	}

	// Every other upload path, tus uploads left in flight included.
	others := uploadEveryOtherWay(t, u, bucket, marker)

	if testenv.ScaleOut() {
		time.Sleep(time.Second)
	}
	if found := scanner.contains(t, []byte(marker)); len(found) > 0 {
		t.Errorf("plaintext of encrypted objects found in storage: %v", found)
	}
	// The copy of the plaintext object is encrypted; its source is not.
	// (Its marker is the plaintext control's, still in the source.)

	// Reads: exact bytes, whole and ranged, through both APIs.
	for key, data := range map[string][]byte{"single": single, "small": small, "multi": multi,
		"copy-single": single, "copy-plain": plainBig, "file-small": fileSmall} {
		wantBody(t, u, bucket, key, data)
		wantRanges(t, u, bucket, key, data, 64<<10, 2*(64<<10), sizes[0], sizes[0]+sizes[1])
	}
	for key, data := range others {
		wantBody(t, u, bucket, key, data)
	}
	resp := u.Do(t, "GET", testenv.FileURL(bucket, "multi"), nil, "Range", "bytes=5242870-5242889")
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 206 || !bytes.Equal(got, multi[5242870:5242890]) {
		t.Errorf("file API range across parts: %d %q", resp.StatusCode, got)
	}
	// HEAD and conditional requests see the plaintext's size and ETag.
	h := u.s3(t, "HEAD", "/"+bucket+"/single", nil, "")
	if h.header.Get("Content-Length") != fmt.Sprint(len(single)) {
		t.Errorf("HEAD Content-Length %s, want %d", h.header.Get("Content-Length"), len(single))
	}
	if r := u.s3(t, "GET", "/"+bucket+"/single", nil, "", "If-None-Match", h.header.Get("ETag")); r.status != 304 {
		t.Errorf("If-None-Match with the ETag: %d, want 304", r.status)
	}

	// Restarted, still readable (the keyring persisted).
	srv.Restart()
	wantBody(t, u, bucket, "multi", multi)
	wantBody(t, u, bucket, "small", small)

	if testenv.ScaleOut() {
		return // tampering with MinIO's files would trip MinIO's own bitrot check first
	}
	// A flipped byte in a blob: an error, never data. Find the blob of a
	// fresh object (the one file that appeared).
	before := blobPaths(t, srv.Data)
	tamper := fill(marker, 200_000)
	put("tamper", tamper)
	var blobPath string
	for _, p := range blobPaths(t, srv.Data) {
		if !slices.Contains(before, p) {
			blobPath = p
		}
	}
	if blobPath == "" {
		t.Fatal("no new blob file for the object")
	}
	ct, err := os.ReadFile(blobPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{100, 70_000} { // first segment: 500 before headers; later: the body fails
		bad := bytes.Clone(ct)
		bad[at] ^= 0x20
		if err := os.WriteFile(blobPath, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", srv.S3URL+"/"+bucket+"/tamper", nil)
		r, body, err := u.signedGet(t, req)
		switch {
		case at < 64<<10 && (err != nil || r.StatusCode != 500):
			t.Errorf("tampered first segment: status %v, err %v; want 500", statusOf(r), err)
		case err == nil && r.StatusCode == 200 && bytes.Equal(body, tamper):
			t.Errorf("tampered byte %d: the full object was returned", at)
		case err == nil && r.StatusCode == 200:
			t.Errorf("tampered byte %d: 200 with %d bytes and no error", at, len(body))
		}
		if len(body) > 0 && r.StatusCode == 200 && !bytes.Equal(body, tamper[:len(body)]) {
			t.Errorf("tampered byte %d: wrong bytes returned", at)
		}
	}
	if !strings.Contains(srv.Stderr(), "failed authentication") {
		t.Errorf("integrity failure not logged:\n%s", srv.Stderr())
	}
}

// uploadEveryOtherWay stores marker-filled objects through every upload
// path TestEncryptionAtRest's S3 requests do not take — the file API's
// form upload and copy, a share link's drop box, a direct upload, and
// tus (whole, in several PATCHes, concatenated) — and leaves tus uploads
// in flight: paused with the marker in the last partial 64-byte block
// (which a running MD5/SHA-256 state holds), and a file under 64 bytes
// paused whole. It returns the finished objects' keys and bytes.
func uploadEveryOtherWay(t *testing.T, u *s3User, bucket, marker string) map[string][]byte {
	t.Helper()
	done := map[string][]byte{}
	c := u.Client

	// Form upload (the console's fallback), and a copy of it.
	form := fill(marker, 3000)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	w, _ := mw.CreateFormFile("file", "form.bin")
	w.Write(form)
	mw.Close()
	resp := c.Do(t, "POST", "/api/v1/buckets/"+bucket+"/files", &body, "Content-Type", mw.FormDataContentType())
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("form upload: %d", resp.StatusCode)
	}
	done["form.bin"] = form
	if st := c.JSON(t, "POST", "/api/v1/buckets/"+bucket+"/copy", map[string]any{"from": "form.bin", "to": "form-copy.bin"}, nil); st != 201 {
		t.Fatalf("file API copy: %d", st)
	}
	done["form-copy.bin"] = form

	// A share link's drop box.
	var share struct {
		Token string `json:"token"`
	}
	if st := c.JSON(t, "POST", "/api/v1/shares", map[string]any{"bucket": bucket, "prefix": "drop/", "allow_upload": true}, &share); st != 201 {
		t.Fatalf("drop-box share: %d", st)
	}
	dropped := fill(marker, 700)
	resp = testenv.NewClient(c.Base).Do(t, "PUT", "/s/"+share.Token+"/dropped.bin", bytes.NewReader(dropped))
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("drop-box PUT: %d", resp.StatusCode)
	}
	done["drop/dropped.bin"] = dropped

	// A direct upload: presigned part URLs.
	direct := fill(marker, 5000)
	var s struct {
		UploadID string `json:"upload_id"`
		Parts    []struct {
			URL string `json:"url"`
		} `json:"parts"`
	}
	if st := c.JSON(t, "POST", "/api/v1/uploads", map[string]any{"bucket": bucket, "key": "direct.bin", "size": len(direct)}, &s); st != 201 || len(s.Parts) != 1 {
		t.Fatalf("direct upload: %d, %d parts", st, len(s.Parts))
	}
	req, _ := http.NewRequest("PUT", s.Parts[0].URL, bytes.NewReader(direct))
	pr, err := http.DefaultClient.Do(req)
	if err != nil || pr.StatusCode != 200 {
		t.Fatalf("direct upload part: %v %v", err, pr)
	}
	pr.Body.Close()
	if st := c.JSON(t, "POST", "/api/v1/uploads/"+s.UploadID+"/complete", map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": pr.Header.Get("ETag")}}}, nil); st != 200 {
		t.Fatalf("direct upload complete: %d", st)
	}
	done["direct.bin"] = direct

	// tus: a file in three PATCHes, each ending inside a 64-byte block.
	tusData := fill(marker, 100_003)
	path := tusCreate(t, c, "Upload-Length", fmt.Sprint(len(tusData)), "Upload-Metadata", tusMeta("bucket", bucket, "key", "tus.bin"))
	for _, r := range [][2]int{{0, 40_001}, {40_001, 80_002}, {80_002, len(tusData)}} {
		if resp, body := tusPatch(t, c, path, r[0], tusData[r[0]:r[1]]); resp.StatusCode != 204 {
			t.Fatalf("tus PATCH at %d: %d %s", r[0], resp.StatusCode, body)
		}
	}
	done["tus.bin"] = tusData
	// A file under 64 bytes, finished.
	tiny := fill(marker, 50)
	path = tusCreate(t, c, "Upload-Length", "50", "Upload-Metadata", tusMeta("bucket", bucket, "key", "tus-tiny.bin"))
	if resp, body := tusPatch(t, c, path, 0, tiny); resp.StatusCode != 204 {
		t.Fatalf("tus tiny PATCH: %d %s", resp.StatusCode, body)
	}
	done["tus-tiny.bin"] = tiny
	// Concatenation of two partial uploads.
	concat := fill(marker, 1500)
	var partials []string
	for _, r := range [][2]int{{0, 700}, {700, 1500}} {
		p := tusCreate(t, c, "Upload-Length", fmt.Sprint(r[1]-r[0]), "Upload-Concat", "partial", "Upload-Metadata", tusMeta("bucket", bucket))
		if resp, body := tusPatch(t, c, p, 0, concat[r[0]:r[1]]); resp.StatusCode != 204 {
			t.Fatalf("tus partial PATCH: %d %s", resp.StatusCode, body)
		}
		partials = append(partials, p)
	}
	tusCreate(t, c, "Upload-Concat", "final;"+strings.Join(partials, " "), "Upload-Metadata", tusMeta("bucket", bucket, "key", "tus-concat.bin"))
	done["tus-concat.bin"] = concat
	// In flight: paused 100 bytes in (the marker at 64..99, the partial
	// block a hash state keeps), and a file under 64 bytes paused whole
	// but for its last byte.
	paused := make([]byte, 1000)
	copy(paused[64:], marker)
	path = tusCreate(t, c, "Upload-Length", "1000", "Upload-Metadata", tusMeta("bucket", bucket, "key", "tus-paused.bin"))
	if resp, body := tusPatch(t, c, path, 0, paused[:100]); resp.StatusCode != 204 {
		t.Fatalf("tus paused PATCH: %d %s", resp.StatusCode, body)
	}
	path = tusCreate(t, c, "Upload-Length", "51", "Upload-Metadata", tusMeta("bucket", bucket, "key", "tus-tiny-paused.bin"))
	if resp, body := tusPatch(t, c, path, 0, fill(marker, 50)); resp.StatusCode != 204 {
		t.Fatalf("tus tiny paused PATCH: %d %s", resp.StatusCode, body)
	}
	return done
}

func statusOf(r *http.Response) any {
	if r == nil {
		return "none"
	}
	return r.StatusCode
}

// signedGet sends a signed GET and reads the body, returning a body read
// error (a cut connection) as err.
func (u *s3User) signedGet(t *testing.T, req *http.Request) (*http.Response, []byte, error) {
	t.Helper()
	if err := sigv4.SignRequest(req, u.id, u.secret, "us-east-1", hexSHA(nil), time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// blobPaths lists the blob files of an embedded data folder.
func blobPaths(t *testing.T, data string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(filepath.Join(data, "blobs", "blobs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out = append(out, path)
		}
		return nil
	})
	return out
}

func wantBody(t *testing.T, u *s3User, bucket, key string, want []byte) {
	t.Helper()
	r := u.s3(t, "GET", "/"+bucket+"/"+key, nil, "")
	if r.status != 200 || !bytes.Equal(r.body, want) {
		t.Errorf("GET %s: %d, %d bytes (want 200, %d bytes, equal: %v)", key, r.status, len(r.body), len(want), bytes.Equal(r.body, want))
	}
}

// wantRanges reads first byte, last byte, suffixes and ranges across the
// given boundaries (segments, parts).
func wantRanges(t *testing.T, u *s3User, bucket, key string, data []byte, boundaries ...int) {
	t.Helper()
	n := len(data)
	type rng struct {
		hdr        string
		start, end int // [start, end)
	}
	rs := []rng{{"bytes=0-0", 0, 1}, {fmt.Sprintf("bytes=%d-", n-1), n - 1, n}, {"bytes=-1", n - 1, n}, {"bytes=-100", max(0, n-100), n}}
	for _, b := range boundaries {
		if b > 10 && b < n-10 {
			rs = append(rs, rng{fmt.Sprintf("bytes=%d-%d", b-10, b+9), b - 10, b + 10}, rng{fmt.Sprintf("bytes=%d-", b), b, n})
		}
	}
	for _, r := range rs {
		resp := u.s3(t, "GET", "/"+bucket+"/"+key, nil, "", "Range", r.hdr)
		if resp.status != 206 || !bytes.Equal(resp.body, data[r.start:r.end]) {
			t.Errorf("GET %s Range %s: %d, %d bytes; want 206 and bytes [%d,%d)", key, r.hdr, resp.status, len(resp.body), r.start, r.end)
		}
	}
}

// TestBucketEncryptionSetting: the file API's bucket setting (PATCH
// /buckets/{bucket} {encryption}) makes new objects encrypted with the
// server's encryption off; bad settings change nothing.
func TestBucketEncryptionSetting(t *testing.T) {
	keyring := filepath.Join(t.TempDir(), "keyring")
	if err := os.WriteFile(keyring, []byte("default 1 "+base64.StdEncoding.EncodeToString(randBytes(t, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testenv.Start(t, "--kms", "local://"+keyring)
	u := newS3User(t, srv)
	bucket := u.Bucket
	sseOf := func(key string, body []byte) string {
		t.Helper()
		resp := u.Do(t, "PUT", testenv.FileURL(bucket, key), bytes.NewReader(body))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("PUT %s: %d", key, resp.StatusCode)
		}
		wantBody(t, u, bucket, key, body)
		return u.s3(t, "HEAD", "/"+bucket+"/"+key, nil, "").header.Get("X-Amz-Server-Side-Encryption")
	}
	if got := sseOf("plain", []byte("plain")); got != "" {
		t.Errorf("no setting: encryption %q, want none", got)
	}
	var b struct {
		Encryption *struct {
			Default  string `json:"default"`
			KMSKeyID string `json:"kms_key_id"`
		} `json:"encryption"`
	}
	if st := u.JSON(t, "PATCH", "/api/v1/buckets/"+bucket, map[string]any{"encryption": map[string]string{"default": "AES256"}}, &b); st != 200 || b.Encryption == nil || b.Encryption.Default != "AES256" {
		t.Fatalf("PATCH encryption AES256: %d %+v", st, b.Encryption)
	}
	if got := sseOf("enc", fill("BUCKET-DEFAULT-", 100_000)); got != "AES256" {
		t.Errorf("with the bucket default: encryption %q, want AES256", got)
	}
	if st := u.JSON(t, "PATCH", "/api/v1/buckets/"+bucket, map[string]any{"encryption": map[string]string{"default": "aws:kms", "kms_key_id": "nope"}}, nil); st != 404 {
		t.Errorf("unknown KMS key: %d, want 404 (resource kms_key)", st)
	}
	if st := u.JSON(t, "PATCH", "/api/v1/buckets/"+bucket, map[string]any{"encryption": map[string]string{"default": "AES128"}}, nil); st != 400 {
		t.Errorf("bad default: %d, want 400", st)
	}
	if st := u.JSON(t, "PATCH", "/api/v1/buckets/"+bucket, map[string]any{}, nil); st != 400 {
		t.Errorf("empty PATCH: %d, want 400", st)
	}
	if st := u.JSON(t, "GET", "/api/v1/buckets/"+bucket, nil, &b); st != 200 || b.Encryption == nil || b.Encryption.Default != "AES256" {
		t.Errorf("after refused PATCHes: %d %+v, want AES256 unchanged", st, b.Encryption)
	}
	b.Encryption = nil
	if st := u.JSON(t, "PATCH", "/api/v1/buckets/"+bucket, map[string]any{"encryption": map[string]string{"default": ""}}, &b); st != 200 || b.Encryption != nil {
		t.Errorf("PATCH encryption off: %d %+v", st, b.Encryption)
	}
	if got := sseOf("plain2", []byte("plain again")); got != "" {
		t.Errorf("setting removed: encryption %q, want none", got)
	}
}

// TestDirectUploadEncrypted: with encryption on, direct uploads' part URLs
// are Coffer's own S3 endpoint (on both shapes: never the blob store's,
// which would store the parts as sent), and the parts are encrypted.
func TestDirectUploadEncrypted(t *testing.T) {
	keyring := filepath.Join(t.TempDir(), "keyring")
	if err := os.WriteFile(keyring, []byte("default 1 "+base64.StdEncoding.EncodeToString(randBytes(t, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testenv.Start(t, "--encryption", "on", "--kms", "local://"+keyring)
	u := newS3User(t, srv)
	const size = 5<<20 + 777
	data := fill("DIRECT-ENCRYPTED-", size)
	var s struct {
		UploadID string `json:"upload_id"`
		PartSize int64  `json:"part_size"`
		Parts    []struct {
			PartNumber int    `json:"part_number"`
			URL        string `json:"url"`
		} `json:"parts"`
	}
	if st := u.JSON(t, "POST", "/api/v1/uploads", map[string]any{"bucket": u.Bucket, "key": "direct.bin", "size": size, "part_size": 5 << 20}, &s); st != 201 || len(s.Parts) != 2 {
		t.Fatalf("create: %d, %d parts", st, len(s.Parts))
	}
	var parts []map[string]any
	for _, p := range s.Parts {
		if !strings.HasPrefix(p.URL, srv.S3URL+"/") {
			t.Fatalf("part URL %s is not Coffer's S3 API (%s)", p.URL, srv.S3URL)
		}
		lo := int64(p.PartNumber-1) * s.PartSize
		req, _ := http.NewRequest("PUT", p.URL, bytes.NewReader(data[lo:min(lo+s.PartSize, size)]))
		r := doS3(t, req)
		if r.status != 200 || r.header.Get("X-Amz-Server-Side-Encryption") != "AES256" {
			t.Fatalf("part %d: %d, encryption %q", p.PartNumber, r.status, r.header.Get("X-Amz-Server-Side-Encryption"))
		}
		parts = append(parts, map[string]any{"part_number": p.PartNumber, "etag": r.header.Get("ETag")})
	}
	if code := u.JSON(t, "POST", "/api/v1/uploads/"+s.UploadID+"/complete", map[string]any{"parts": parts}, nil); code != 200 {
		t.Fatalf("complete: %d", code)
	}
	wantBody(t, u, u.Bucket, "direct.bin", data)
	if h := u.s3(t, "HEAD", "/"+u.Bucket+"/direct.bin", nil, ""); h.header.Get("X-Amz-Server-Side-Encryption") != "AES256" {
		t.Errorf("HEAD: encryption %q, want AES256", h.header.Get("X-Amz-Server-Side-Encryption"))
	}
}

// TestAdminKMSRotate: POST /api/v1/admin/kms/rotate switches new objects
// to a new key version while the node runs; objects under the old one
// still read; only administrators may.
func TestAdminKMSRotate(t *testing.T) {
	keyring := filepath.Join(t.TempDir(), "keyring")
	if err := os.WriteFile(keyring, []byte("default 1 "+base64.StdEncoding.EncodeToString(randBytes(t, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testenv.Start(t, "--encryption", "on", "--kms", "local://"+keyring)
	u := newS3User(t, srv)
	old := fill("BEFORE-ROTATION-", 100_000)
	if r := u.s3(t, "PUT", "/"+u.Bucket+"/old", old, ""); r.status != 200 {
		t.Fatalf("PUT: %d", r.status)
	}
	if st := u.JSON(t, "POST", "/api/v1/admin/kms/rotate", nil, nil); st != 403 {
		t.Errorf("rotate as a user: %d, want 403", st)
	}
	admin := newAdmin(t, srv)
	var res struct {
		KEK      string `json:"kek"`
		Previous string `json:"previous_kek"`
		Rotated  bool   `json:"rotated"`
		Job      struct {
			Name  string `json:"name"`
			State string `json:"state"`
		} `json:"job"`
	}
	if st := admin.JSON(t, "POST", "/api/v1/admin/kms/rotate", nil, &res); st != 200 || res.KEK != "local:default#2" || res.Previous != "local:default#1" || !res.Rotated ||
		res.Job.Name != "rewrap" || res.Job.State != "running" {
		t.Fatalf("rotate: %d %+v", st, res)
	}
	b, err := os.ReadFile(keyring)
	if err != nil || !strings.Contains(string(b), "default 2 ") {
		t.Fatalf("keyring after rotate: %v\n%s", err, b)
	}
	newer := fill("AFTER-ROTATION-", 100_000)
	if r := u.s3(t, "PUT", "/"+u.Bucket+"/new", newer, ""); r.status != 200 {
		t.Fatalf("PUT after rotate: %d", r.status)
	}
	srv.Restart()
	wantBody(t, u, u.Bucket, "old", old)
	wantBody(t, u, u.Bucket, "new", newer)
}

// TestSSEKMSKeyAllowList (issue 18, N9), through the S3 API with signed
// requests: with a keyring holding "default" and "finance", any user may
// name the default key, but "finance" only once an administrator allowed
// it (coffer kms allow, or the admin API); until then it answers exactly
// as a key that does not exist (same status, code and message), for
// PutObject, CreateMultipartUpload, CopyObject and PutBucketEncryption.
// Withdrawn, it stops new writes, under a bucket default too.
func TestSSEKMSKeyAllowList(t *testing.T) {
	keyring := filepath.Join(t.TempDir(), "keyring")
	if err := os.WriteFile(keyring, []byte("default 1 "+base64.StdEncoding.EncodeToString(randBytes(t, 32))+"\n"+
		"finance 1 "+base64.StdEncoding.EncodeToString(randBytes(t, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testenv.Start(t, "--kms", "local://"+keyring)
	alice, bob := newS3User(t, srv), newS3User(t, srv)
	kmsHdr := func(key string) []string {
		return []string{"X-Amz-Server-Side-Encryption", "aws:kms", "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id", key}
	}
	sseConfig := func(key string) []byte {
		return []byte("<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>aws:kms</SSEAlgorithm><KMSMasterKeyID>" +
			key + "</KMSMasterKeyID></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>")
	}
	for _, u := range []*s3User{alice, bob} {
		if r := u.s3(t, "PUT", "/"+u.Bucket+"/src", []byte("source"), ""); r.status != 200 {
			t.Fatalf("put src: %d", r.status)
		}
	}
	ops := map[string]func(u *s3User, key string) s3Resp{
		"PutObject": func(u *s3User, key string) s3Resp {
			return u.s3(t, "PUT", "/"+u.Bucket+"/obj", []byte("data"), "", kmsHdr(key)...)
		},
		"CreateMultipartUpload": func(u *s3User, key string) s3Resp {
			return u.s3(t, "POST", "/"+u.Bucket+"/mp?uploads", nil, "", kmsHdr(key)...)
		},
		"CopyObject": func(u *s3User, key string) s3Resp {
			return u.s3(t, "PUT", "/"+u.Bucket+"/copy", nil, "", append(kmsHdr(key), "X-Amz-Copy-Source", "/"+u.Bucket+"/src")...)
		},
		"PutBucketEncryption": func(u *s3User, key string) s3Resp {
			return u.s3(t, "PUT", "/"+u.Bucket+"?encryption", sseConfig(key), "")
		},
	}
	// refusal is what a client learns from r: status, code and message
	// with the key's name taken out.
	refusal := func(r s3Resp, key string) string {
		var e struct {
			Message string `xml:"Message"`
		}
		xml.Unmarshal(r.body, &e)
		return fmt.Sprintf("%d %s %s", r.status, r.code, strings.ReplaceAll(e.Message, key, "KEY"))
	}
	wantRefused := func(who string, u *s3User) {
		t.Helper()
		for name, op := range ops {
			unknown := refusal(op(u, "no-such-key"), "no-such-key")
			if !strings.HasPrefix(unknown, "400 KMS.NotFoundException ") {
				t.Errorf("%s's %s under an unknown key: %s, want 400 KMS.NotFoundException", who, name, unknown)
			}
			if got := refusal(op(u, "finance"), "finance"); got != unknown {
				t.Errorf("%s's %s under finance: %q; want what an unknown key gets, %q", who, name, got, unknown)
			}
		}
	}
	wantAllowed := func(who string, u *s3User, key string) {
		t.Helper()
		for name, op := range ops {
			if r := op(u, key); r.status != 200 {
				t.Errorf("%s's %s under %q: %d %s", who, name, key, r.status, r.body)
			}
		}
	}

	// Nobody is allowed finance yet; the default key is everyone's.
	wantRefused("bob", bob)
	wantRefused("alice", alice)
	wantAllowed("bob", bob, "default")
	if r := bob.s3(t, "HEAD", "/"+bob.Bucket+"/obj", nil, ""); r.header.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id") != "default" {
		t.Errorf("bob's object: KMS key %q, want default", r.header.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id"))
	}

	// The CLI allows alice; bob still gets the unknown key's answer.
	if out, err := cli(t, srv, "kms", "allow", "--key", "finance", "--email", alice.Email); err != nil {
		t.Fatalf("coffer kms allow: %v\n%s", err, out)
	}
	wantAllowed("alice", alice, "finance")
	wantRefused("bob", bob)
	if r := alice.s3(t, "PUT", "/"+alice.Bucket+"/by-default", []byte("data"), ""); r.status != 200 ||
		r.header.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id") != "finance" {
		t.Errorf("alice's put under her bucket default finance: %d, key %q", r.status, r.header.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id"))
	}
	if out, err := cli(t, srv, "kms", "grants"); err != nil || !strings.Contains(out, "finance\t"+alice.Email) {
		t.Errorf("coffer kms grants: %v\n%s", err, out)
	}

	// The admin API allows bob, lists both grants, and withdraws bob's.
	admin := newAdmin(t, srv)
	var me struct {
		ID string `json:"id"`
	}
	if st := bob.JSON(t, "GET", "/api/v1/me", nil, &me); st != 200 {
		t.Fatalf("/me: %d", st)
	}
	grant := "/api/v1/admin/users/" + me.ID + "/kms-keys/finance"
	if st := bob.JSON(t, "PUT", grant, nil, nil); st != 403 {
		t.Errorf("bob allowing himself: %d, want 403", st)
	}
	if st := admin.JSON(t, "PUT", grant, nil, nil); st != 200 {
		t.Fatalf("admin PUT %s: %d", grant, st)
	}
	wantAllowed("bob", bob, "finance")
	var list struct {
		Grants []struct {
			Key    string `json:"key"`
			UserID string `json:"user_id"`
		} `json:"grants"`
	}
	if st := admin.JSON(t, "GET", "/api/v1/admin/kms/grants", nil, &list); st != 200 || len(list.Grants) != 2 {
		t.Errorf("GET /api/v1/admin/kms/grants: %d %+v, want 2 grants", st, list)
	}
	if st := admin.JSON(t, "DELETE", grant, nil, nil); st != 204 {
		t.Errorf("admin DELETE %s: %d", grant, st)
	}
	if st := admin.JSON(t, "DELETE", grant, nil, nil); st != 404 {
		t.Errorf("admin DELETE %s again: %d, want 404", grant, st)
	}
	wantRefused("bob", bob)

	// Alice's grant withdrawn: no new writes under finance, her bucket
	// default's included; what she stored stays readable.
	if out, err := cli(t, srv, "kms", "disallow", "--key", "finance", "--email", alice.Email); err != nil {
		t.Fatalf("coffer kms disallow: %v\n%s", err, out)
	}
	if r := alice.s3(t, "PUT", "/"+alice.Bucket+"/after", []byte("data"), ""); r.status != 400 || r.code != "KMS.NotFoundException" {
		t.Errorf("alice's put under her bucket default after the grant was withdrawn: %d %s", r.status, r.code)
	}
	wantBody(t, alice, alice.Bucket, "by-default", []byte("data"))
}

package e2e

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// tusMeta encodes an Upload-Metadata header.
func tusMeta(kv ...string) string {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, kv[i]+" "+base64.StdEncoding.EncodeToString([]byte(kv[i+1])))
	}
	return strings.Join(parts, ",")
}

// tusDo sends a tus request (Tus-Resumable set) and returns the response
// with its body read.
func tusDo(t *testing.T, c *testenv.Client, method, path string, body []byte, hdr ...string) (*http.Response, string) {
	t.Helper()
	var r io.Reader
	size := int64(0)
	if body != nil {
		r, size = bytes.NewReader(body), int64(len(body))
	}
	resp, err := c.DoErr(t.Context(), method, path, r, size, append([]string{"Tus-Resumable", "1.0.0"}, hdr...)...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// tusCreate creates an upload and returns its path.
func tusCreate(t *testing.T, c *testenv.Client, hdr ...string) string {
	t.Helper()
	resp, body := tusDo(t, c, "POST", "/api/v1/tus/", nil, hdr...)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	loc := resp.Header.Get("Location")
	i := strings.Index(loc, "/api/v1/tus/")
	if i < 0 {
		t.Fatalf("Location %q", loc)
	}
	return loc[i:]
}

func tusPatch(t *testing.T, c *testenv.Client, path string, off int, chunk []byte, hdr ...string) (*http.Response, string) {
	t.Helper()
	return tusDo(t, c, "PATCH", path, chunk, append([]string{"Upload-Offset", strconv.Itoa(off), "Content-Type", "application/offset+octet-stream"}, hdr...)...)
}

func checksumHeader(alg string, b []byte) string {
	var sum []byte
	switch alg {
	case "sha1":
		s := sha1.Sum(b)
		sum = s[:]
	default:
		s := sha256.Sum256(b)
		sum = s[:]
	}
	return alg + " " + base64.StdEncoding.EncodeToString(sum)
}

// TestTusProtocol runs the protocol checks on a plain server and on one
// encrypting at rest (where each PATCH's part is ciphertext in the blob
// store, and concatenation must read the partial uploads' plaintext).
func TestTusProtocol(t *testing.T) {
	// A keyring named by --kms: the scale-out shape needs the key
	// provider every node shares.
	keyring := filepath.Join(t.TempDir(), "keyring")
	if err := os.WriteFile(keyring, []byte("default 1 "+base64.StdEncoding.EncodeToString(randBytes(t, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, flags := range map[string][]string{"plain": nil, "encrypted": {"--encryption", "on", "--kms", "local://" + keyring}} {
		t.Run(name, func(t *testing.T) { testTusProtocol(t, testenv.Start(t, flags...)) })
	}
}

func testTusProtocol(t *testing.T, srv *testenv.Server) {
	c := srv.NewUser(t)
	data := make([]byte, 3<<20+123)
	for i := range data {
		data[i] = byte(i * 7)
	}

	t.Run("OPTIONS advertises the extensions", func(t *testing.T) {
		resp, _ := tusDo(t, testenv.NewClient(srv.URL), "OPTIONS", "/api/v1/tus/", nil)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		for _, ext := range []string{"creation", "creation-with-upload", "creation-defer-length", "termination", "checksum", "expiration", "concatenation"} {
			if !strings.Contains(","+resp.Header.Get("Tus-Extension")+",", ","+ext+",") {
				t.Errorf("Tus-Extension %q lacks %s", resp.Header.Get("Tus-Extension"), ext)
			}
		}
		for _, alg := range []string{"sha1", "sha256"} {
			if !strings.Contains(resp.Header.Get("Tus-Checksum-Algorithm"), alg) {
				t.Errorf("Tus-Checksum-Algorithm %q lacks %s", resp.Header.Get("Tus-Checksum-Algorithm"), alg)
			}
		}
	})

	t.Run("anonymous creation is refused", func(t *testing.T) {
		resp, _ := tusDo(t, testenv.NewClient(srv.URL), "POST", "/api/v1/tus/", nil, "Upload-Length", "10", "Upload-Metadata", tusMeta("bucket", c.Bucket, "key", "x"))
		if got, want := resp.StatusCode, 401; got != want {
			t.Errorf("status %d, want %d", got, want)
		}
	})

	t.Run("chunks with checksums become the object", func(t *testing.T) {
		path := tusCreate(t, c, "Upload-Length", strconv.Itoa(len(data)), "Upload-Metadata", tusMeta("bucket", c.Bucket, "key", "tus/a.bin", "content-type", "application/x-test"))
		resp, _ := tusDo(t, c, "HEAD", path, nil)
		if got := resp.Header.Get("Upload-Offset"); got != "0" {
			t.Fatalf("Upload-Offset %q", got)
		}
		if resp.Header.Get("Upload-Expires") == "" {
			t.Errorf("no Upload-Expires on HEAD")
		}
		off := 0
		for i, step := range []int{1 << 20, 2 << 20, 123} {
			chunk := data[off : off+step]
			alg := []string{"sha1", "sha256", "sha256"}[i]
			resp, body := tusPatch(t, c, path, off, chunk, "Upload-Checksum", checksumHeader(alg, chunk))
			if resp.StatusCode != 204 {
				t.Fatalf("PATCH %d: %d %s", i, resp.StatusCode, body)
			}
			off += step
			if got := resp.Header.Get("Upload-Offset"); got != strconv.Itoa(off) {
				t.Fatalf("PATCH %d: Upload-Offset %q, want %d", i, got, off)
			}
			if off < len(data) && resp.Header.Get("Upload-Expires") == "" {
				t.Errorf("PATCH %d: no Upload-Expires", i)
			}
			if off < len(data) {
				if r, _ := get(t, c, c.Bucket, "tus/a.bin"); r.StatusCode != 404 {
					t.Errorf("half-written upload visible: %d", r.StatusCode)
				}
			}
		}
		r, body := get(t, c, c.Bucket, "tus/a.bin")
		if r.StatusCode != 200 || !bytes.Equal(body, data) {
			t.Fatalf("object: %d, %d bytes", r.StatusCode, len(body))
		}
		sum := md5.Sum(data)
		if got, want := strings.Trim(r.Header.Get("ETag"), `"`), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("ETag %q, want %q", got, want)
		}
		whole := sha256.Sum256(data)
		if got, want := r.Header.Get("X-Checksum-Sha256"), hex.EncodeToString(whole[:]); got != want {
			t.Errorf("X-Checksum-Sha256 %q, want %q", got, want)
		}
		if got, want := r.Header.Get("Content-Type"), "application/x-test"; got != want {
			t.Errorf("Content-Type %q, want %q", got, want)
		}
		if resp, _ := tusDo(t, c, "HEAD", path, nil); resp.StatusCode != 404 {
			t.Errorf("finished upload HEAD: %d, want 404", resp.StatusCode)
		}
	})

	t.Run("checksum mismatch is 460 and stores nothing", func(t *testing.T) {
		path := tusCreate(t, c, "Upload-Length", "100", "Upload-Metadata", tusMeta("bucket", c.Bucket, "key", "tus/bad.bin"))
		resp, body := tusPatch(t, c, path, 0, data[:100], "Upload-Checksum", checksumHeader("sha256", data[1:101]))
		if got, want := resp.StatusCode, 460; got != want {
			t.Fatalf("status %d (%s), want %d", got, body, want)
		}
		resp, _ = tusDo(t, c, "HEAD", path, nil)
		if got := resp.Header.Get("Upload-Offset"); got != "0" {
			t.Errorf("after mismatch Upload-Offset %q, want 0", got)
		}
		resp, body = tusPatch(t, c, path, 0, data[:100], "Upload-Checksum", "crc99 AAAA")
		if got, want := resp.StatusCode, 400; got != want {
			t.Errorf("unknown algorithm: %d (%s), want %d", got, body, want)
		}
		resp, body = tusDo(t, c, "PATCH", path, data[:100], "Upload-Offset", "0", "Content-Type", "application/octet-stream")
		if got, want := resp.StatusCode, 415; got != want {
			t.Errorf("PATCH with Content-Type application/octet-stream: %d (%s), want %d", got, body, want)
		}
		resp, body = tusPatch(t, c, path, 0, data[:100], "Upload-Checksum", checksumHeader("sha1", data[:100]))
		if resp.StatusCode != 204 {
			t.Fatalf("retry: %d %s", resp.StatusCode, body)
		}
		if r, body := get(t, c, c.Bucket, "tus/bad.bin"); r.StatusCode != 200 || !bytes.Equal(body, data[:100]) {
			t.Errorf("object after retry: %d", r.StatusCode)
		}
	})

	t.Run("deferred length, creation-with-upload, termination", func(t *testing.T) {
		resp, body := tusDo(t, c, "POST", "/api/v1/tus/", data[:1000], "Upload-Defer-Length", "1", "Content-Type", "application/offset+octet-stream",
			"Upload-Metadata", tusMeta("bucket", c.Bucket, "filename", "tus/deferred.bin"))
		if resp.StatusCode != 201 || resp.Header.Get("Upload-Offset") != "1000" {
			t.Fatalf("create with upload: %d %q %s", resp.StatusCode, resp.Header.Get("Upload-Offset"), body)
		}
		path := resp.Header.Get("Location")[strings.Index(resp.Header.Get("Location"), "/api/v1/tus/"):]
		resp, body = tusPatch(t, c, path, 1000, data[1000:1500], "Upload-Length", "1500")
		if resp.StatusCode != 204 {
			t.Fatalf("last PATCH: %d %s", resp.StatusCode, body)
		}
		if r, got := get(t, c, c.Bucket, "tus/deferred.bin"); r.StatusCode != 200 || !bytes.Equal(got, data[:1500]) {
			t.Errorf("deferred object: %d", r.StatusCode)
		}

		path = tusCreate(t, c, "Upload-Length", "10", "Upload-Metadata", tusMeta("bucket", c.Bucket, "key", "tus/gone.bin"))
		tusPatch(t, c, path, 0, data[:5])
		if resp, body := tusDo(t, c, "DELETE", path, nil); resp.StatusCode != 204 {
			t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
		}
		if resp, _ := tusDo(t, c, "HEAD", path, nil); resp.StatusCode != 404 {
			t.Errorf("terminated upload HEAD: %d", resp.StatusCode)
		}
	})

	t.Run("concatenation", func(t *testing.T) {
		var partials []string
		for _, r := range [][2]int{{0, 700}, {700, 2000}} {
			p := tusCreate(t, c, "Upload-Length", strconv.Itoa(r[1]-r[0]), "Upload-Concat", "partial", "Upload-Metadata", tusMeta("bucket", c.Bucket))
			if resp, body := tusPatch(t, c, p, 0, data[r[0]:r[1]]); resp.StatusCode != 204 {
				t.Fatalf("partial PATCH: %d %s", resp.StatusCode, body)
			}
			partials = append(partials, p)
		}
		tusCreate(t, c, "Upload-Concat", "final;"+strings.Join(partials, " "), "Upload-Metadata", tusMeta("bucket", c.Bucket, "key", "tus/concat.bin"))
		r, got := get(t, c, c.Bucket, "tus/concat.bin")
		if r.StatusCode != 200 || !bytes.Equal(got, data[:2000]) {
			t.Fatalf("concatenated object: %d, %d bytes", r.StatusCode, len(got))
		}
		whole := sha256.Sum256(data[:2000])
		if got, want := r.Header.Get("X-Checksum-Sha256"), hex.EncodeToString(whole[:]); got != want {
			t.Errorf("concatenated X-Checksum-Sha256 %q, want %q", got, want)
		}
		for _, p := range partials {
			if resp, _ := tusDo(t, c, "HEAD", p, nil); resp.StatusCode != 404 {
				t.Errorf("partial upload %s after concatenation: %d, want 404", p, resp.StatusCode)
			}
		}
	})

	t.Run("another user's upload is not found", func(t *testing.T) {
		path := tusCreate(t, c, "Upload-Length", "10", "Upload-Metadata", tusMeta("bucket", c.Bucket, "key", "tus/mine.bin"))
		other := srv.NewUser(t)
		for _, m := range []string{"HEAD", "PATCH", "DELETE"} {
			var body []byte
			if m == "PATCH" {
				body = []byte("0123456789")
			}
			resp, _ := tusDo(t, other, m, path, body, "Upload-Offset", "0", "Content-Type", "application/offset+octet-stream")
			if resp.StatusCode != 404 {
				t.Errorf("%s of another user's upload: %d, want 404", m, resp.StatusCode)
			}
		}
		resp, _ := tusDo(t, other, "POST", "/api/v1/tus/", nil, "Upload-Length", "10", "Upload-Metadata", tusMeta("bucket", c.Bucket, "key", "planted"))
		if resp.StatusCode != 403 && resp.StatusCode != 404 {
			t.Errorf("creating in another user's bucket: %d", resp.StatusCode)
		}
	})
}

// TestTusExpiry: an unfinished upload announces its expiry, is gone at
// once when it passes, and the janitor gives its bytes back.
func TestTusExpiry(t *testing.T) {
	srv := testenv.Start(t, "--tus-expiry", "2s", "--janitor-interval", "300ms")
	c := srv.NewUser(t)
	usage := func() int64 {
		var me struct {
			UsageBytes int64 `json:"usage_bytes"`
		}
		if st := c.JSON(t, "GET", "/api/v1/me", nil, &me); st != 200 {
			t.Fatalf("/me: %d", st)
		}
		return me.UsageBytes
	}
	path := tusCreate(t, c, "Upload-Length", "100000", "Upload-Metadata", tusMeta("bucket", c.Bucket, "key", "tus/expiring.bin"))
	resp, _ := tusPatch(t, c, path, 0, make([]byte, 50000))
	exp, err := http.ParseTime(resp.Header.Get("Upload-Expires"))
	if err != nil || exp.Before(time.Now()) || exp.After(time.Now().Add(3*time.Second)) {
		t.Fatalf("Upload-Expires %q: %v", resp.Header.Get("Upload-Expires"), err)
	}
	if got := usage(); got < 50000 {
		t.Errorf("usage with an upload in progress: %d, want >= 50000", got)
	}
	time.Sleep(time.Until(exp) + 1100*time.Millisecond) // the header has whole seconds
	if resp, _ := tusPatch(t, c, path, 50000, make([]byte, 10)); resp.StatusCode != 404 {
		t.Errorf("PATCH after expiry: %d, want 404", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for usage() != 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if got := usage(); got != 0 {
		t.Errorf("usage after the janitor: %d, want 0", got)
	}
	if r, _ := get(t, c, c.Bucket, "tus/expiring.bin"); r.StatusCode != 404 {
		t.Errorf("expired upload became an object: %d", r.StatusCode)
	}
}

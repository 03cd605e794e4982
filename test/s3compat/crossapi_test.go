package s3compat

import (
	"bytes"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// testCrossAPI: what the file API writes, S3 clients read, and the other
// way round.
func (e *env) testCrossAPI(t *testing.T) {
	py := python(t)
	b := e.bucket("crossapi")
	if st := e.user.JSON(t, "POST", "/api/v1/buckets", map[string]string{"name": b}, nil); st != 201 {
		t.Fatalf("POST /api/v1/buckets %s: status %d", b, st)
	}
	pydir, err := filepath.Abs("py")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	xapi := &runner{
		e: e, name: "xapi.py (boto3)", bin: py, dir: home, bucket: b, timeout: 3 * time.Minute,
		pre: []string{filepath.Join(pydir, "xapi.py")},
		env: childEnv(map[string]string{
			"HOME":                 home,
			"COFFER_S3_ENDPOINT":   e.srv.S3URL,
			"COFFER_S3_ACCESS_KEY": e.accessKey,
			"COFFER_S3_SECRET_KEY": e.secretKey,
		}),
	}
	work := t.TempDir()

	t.Run("file-api-to-s3", func(t *testing.T) {
		src := filepath.Join(work, "report.bin")
		writeRandom(t, src, 3<<20+7, 8)
		data, _ := os.ReadFile(src)
		key := "from file api/report ü+1.bin"
		resp := e.user.Do(t, "PUT", testenv.FileURL(b, key), bytes.NewReader(data), "X-Checksum-Sha256", shaHex(data))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("file API PUT %s: status %d\n%s", key, resp.StatusCode, body)
		}

		aws := e.awsRunner(t, b)
		ls := aws.run(t, "s3", "ls", "s3://"+b+"/from file api/")
		if !strings.Contains(ls.stdout, " 3145735 report ü+1.bin\n") {
			t.Errorf("aws s3 ls does not list the file API upload (3145735 bytes, report ü+1.bin):\n%s", ls.stdout)
		}
		out := filepath.Join(work, "report.out")
		get := xapi.run(t, "get", b, key, out)
		if fileSHA(t, out) != shaHex(data) {
			t.Errorf("boto3 get_object of a file API upload: sha256 %s, want %s (%s)", fileSHA(t, out), shaHex(data), get.stdout)
		}
		if etag := strings.Fields(get.stdout)[0]; etag != `"`+md5Hex(data)+`"` {
			t.Errorf("boto3 ETag of a file API upload %s, want the MD5 %q", etag, md5Hex(data))
		}
	})

	t.Run("s3-to-file-api", func(t *testing.T) {
		for _, c := range []struct {
			op, key string
			size    int
		}{
			{"put", "from s3/put ✓.json", 200<<10 + 1},
			{"upload", "from s3/multipart.bin", 12<<20 + 5}, // 3 parts of 5 MiB
		} {
			src := filepath.Join(work, filepath.Base(c.key))
			writeRandom(t, src, c.size, uint64(c.size))
			data, _ := os.ReadFile(src)
			args := []string{c.op, b, c.key, src}
			if c.op == "put" {
				args = append(args, "application/x-from-boto3")
			}
			xapi.run(t, args...)
			resp := e.user.Do(t, "GET", testenv.FileURL(b, c.key), nil)
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("file API GET %s: status %d, err %v\n%s", c.key, resp.StatusCode, err, trim(got))
				continue
			}
			if !bytes.Equal(got, data) {
				t.Errorf("file API GET %s (%s by boto3): %d bytes sha256 %s, want %d bytes %s", c.key, c.op, len(got), shaHex(got), len(data), shaHex(data))
			}
			// docs/api.md: downloads carry X-Checksum-Sha256 and
			// Repr-Digest. A multipart object has no whole-object SHA-256
			// (docs/s3.md: parts are concatenated, not rehashed), so the
			// headers may be absent, but a digest that is sent must be
			// the right one.
			if h, sent := resp.Header["X-Checksum-Sha256"]; sent && (len(h) != 1 || h[0] != shaHex(data)) {
				var list struct {
					Files []map[string]any `json:"files"`
				}
				e.user.JSON(t, "GET", "/api/v1/buckets/"+b+"/files?prefix="+url.QueryEscape(c.key), nil, &list)
				t.Errorf("file API GET %s (%s by boto3): X-Checksum-Sha256 %q, Repr-Digest %q: a wrong digest (want %s or no header); file API listing: %v",
					c.key, c.op, resp.Header.Values("X-Checksum-Sha256"), resp.Header.Values("Repr-Digest"), shaHex(data), list.Files)
			}
			if c.op == "put" {
				if ct := resp.Header.Get("Content-Type"); ct != "application/x-from-boto3" {
					t.Errorf("file API GET %s: Content-Type %q, want application/x-from-boto3", c.key, ct)
				}
			}
		}
	})
}

package e2e

import (
	"bytes"
	"crypto/rand"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestFsck runs coffer fsck against the binary's stores while it serves
// (both shapes: beside the embedded server holding its data folder, or
// on the nodes' PostgreSQL and S3 store): a good object passes, exit 0.
// In the embedded shape a blob file damaged on disk (a flipped byte) is
// then never served whole (the GET's transfer breaks before its end),
// and coffer fsck names it and exits 1.
func TestFsck(t *testing.T) {
	srv := testenv.Start(t, "--inline-max", "0")
	c := srv.NewUser(t)
	data := make([]byte, 300<<10)
	rand.Read(data)
	path := "/api/v1/buckets/" + c.Bucket + "/files/photo.raw"
	if resp := c.Do(t, "PUT", path, bytes.NewReader(data)); resp.StatusCode != 201 {
		t.Fatalf("PUT: %d", resp.StatusCode)
	}
	fsck := func() (int, string) {
		out, err := srv.Command("fsck", "--data", srv.Data).CombinedOutput()
		code := 0
		if err != nil {
			code = -1
			if ee, ok := err.(interface{ ExitCode() int }); ok {
				code = ee.ExitCode()
			}
		}
		return code, string(out)
	}
	if code, out := fsck(); code != 0 || !strings.Contains(out, "checked 1 objects") {
		t.Fatalf("coffer fsck of a good store while the server runs: exit %d\n%s", code, out)
	}
	if testenv.ScaleOut() {
		return // the blob is in MinIO: damaging it is the embedded shape's part
	}
	var files []string
	filepath.WalkDir(filepath.Join(srv.Data, "blobs", "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 1 {
		t.Fatalf("blob files: %v, want one", files)
	}
	bad := bytes.Clone(data)
	bad[len(bad)/3] ^= 1
	if err := os.WriteFile(files[0], bad, 0o600); err != nil {
		t.Fatal(err)
	}
	resp := c.Do(t, "GET", path, nil)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || err == nil || len(got) >= len(data) {
		t.Errorf("GET of a damaged blob: %d, %d of %d bytes, err %v; want a broken transfer", resp.StatusCode, len(got), len(data), err)
	}
	if code, out := fsck(); code != 1 || !strings.Contains(out, "corrupt: "+c.Bucket+"/photo.raw") {
		t.Errorf("coffer fsck of a damaged blob: exit %d\n%s", code, out)
	}
}

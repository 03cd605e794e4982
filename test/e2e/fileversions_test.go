package e2e

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// versionJSON is a version of GET /versions/{key}.
type versionJSON struct {
	VersionID    string `json:"version_id"`
	Size         int64  `json:"size"`
	ETag         string `json:"etag"`
	IsLatest     bool   `json:"is_latest"`
	DeleteMarker bool   `json:"delete_marker"`
}

// fileVersions returns every version of bucket/key through the file API,
// a page of limit at a time.
func fileVersions(t *testing.T, c *testenv.Client, bucket, key, limit string) []versionJSON {
	t.Helper()
	var all []versionJSON
	cursor := ""
	for range 20 {
		var page struct {
			Versions   []versionJSON `json:"versions"`
			NextCursor string        `json:"next_cursor"`
		}
		path := "/api/v1/buckets/" + bucket + "/versions/" + testenv.EscapeKey(key) + "?limit=" + limit
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		if st := c.JSON(t, "GET", path, nil, &page); st != 200 {
			t.Fatalf("versions of %s: %d", key, st)
		}
		all = append(all, page.Versions...)
		if cursor = page.NextCursor; cursor == "" {
			return all
		}
	}
	t.Fatal("the versions do not end")
	return nil
}

// body GETs path with c and returns the status and body.
func body(t *testing.T, c *testenv.Client, path string, hdr ...string) (int, []byte) {
	t.Helper()
	resp := c.Do(t, "GET", path, nil, hdr...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestFileVersions: the file API's versions through the binary, on both
// shapes: the bucket setting, a key's versions, a version's download
// (with a range), restore, the removal of a version, the deleted files
// and undelete; another user sees none of it.
func TestFileVersions(t *testing.T) {
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	other := srv.NewUser(t)
	b := c.Bucket
	var bk struct{ Versioning string }
	if st := c.JSON(t, "PATCH", "/api/v1/buckets/"+b, map[string]any{"versioning": "Enabled"}, &bk); st != 200 || bk.Versioning != "Enabled" {
		t.Fatalf("enable versioning: %d %q", st, bk.Versioning)
	}
	if st := c.JSON(t, "GET", "/api/v1/buckets/"+b, nil, &bk); st != 200 || bk.Versioning != "Enabled" {
		t.Fatalf("GET bucket: %d %q", st, bk.Versioning)
	}
	first, second := randBytes(t, 200_000), randBytes(t, 100_000)
	for _, d := range [][]byte{first, second} {
		if st, _, p := put(t, c, b, "docs/v.bin", d); st != 201 {
			t.Fatalf("put: %d %+v", st, p)
		}
	}
	vs := fileVersions(t, c, b, "docs/v.bin", "1")
	if len(vs) != 2 || !vs[0].IsLatest || vs[0].Size != int64(len(second)) || vs[1].IsLatest || vs[1].Size != int64(len(first)) {
		t.Fatalf("versions %+v", vs)
	}
	v1 := vs[1].VersionID
	url := testenv.FileURL(b, "docs/v.bin") + "?version_id=" + v1
	if st, got := body(t, c, url); st != 200 || !bytes.Equal(got, first) {
		t.Fatalf("version 1: %d, %d bytes", st, len(got))
	}
	if st, got := body(t, c, url, "Range", "bytes=100-199"); st != 206 || !bytes.Equal(got, first[100:200]) {
		t.Fatalf("a range of version 1: %d", st)
	}
	if st, _ := body(t, c, url, "If-None-Match", `"`+vs[1].ETag+`"`); st != http.StatusNotModified {
		t.Fatalf("If-None-Match of version 1: %d", st)
	}
	// Another user: neither the versions nor a version's bytes.
	for _, path := range []string{url, "/api/v1/buckets/" + b + "/versions/docs/v.bin", "/api/v1/buckets/" + b + "/trash"} {
		if st, got := body(t, other, path); st != 403 && st != 404 || bytes.Contains(got, first[:64]) {
			t.Errorf("another user's GET %s: %d", path, st)
		}
	}
	if st := other.JSON(t, "POST", "/api/v1/buckets/"+other.Bucket+"/restore", map[string]any{"key": "docs/v.bin", "version_id": v1}, nil); st != 404 {
		t.Errorf("another user's version restored into their bucket: %d", st)
	}
	if st := other.JSON(t, "DELETE", url, nil, nil); st != 403 {
		t.Errorf("another user's DELETE of a version: %d", st)
	}

	// Restore the first: a third version, the latest, with its bytes.
	var restored fileJSON
	if st := c.JSON(t, "POST", "/api/v1/buckets/"+b+"/restore", map[string]any{"key": "docs/v.bin", "version_id": v1}, &restored); st != 201 {
		t.Fatalf("restore: %d", st)
	}
	if _, got := get(t, c, b, "docs/v.bin"); !bytes.Equal(got, first) {
		t.Fatal("the restored version is not the latest")
	}
	if vs := fileVersions(t, c, b, "docs/v.bin", "100"); len(vs) != 3 || vs[2].VersionID != v1 || !vs[0].IsLatest {
		t.Fatalf("versions after the restore: %+v", vs)
	}
	// Remove the second version for good.
	if st := c.JSON(t, "DELETE", testenv.FileURL(b, "docs/v.bin")+"?version_id="+vs[0].VersionID, nil, nil); st != 204 {
		t.Fatalf("DELETE of the second version: %d", st)
	}
	// Delete the file: it is in the trash, and comes back.
	if st := c.JSON(t, "DELETE", testenv.FileURL(b, "docs/v.bin"), nil, nil); st != 204 {
		t.Fatalf("DELETE: %d", st)
	}
	if resp, _ := get(t, c, b, "docs/v.bin"); resp.StatusCode != 404 {
		t.Fatalf("GET of a deleted file: %d", resp.StatusCode)
	}
	var trash struct {
		Files []struct{ Key string } `json:"files"`
	}
	if st := c.JSON(t, "GET", "/api/v1/buckets/"+b+"/trash", nil, &trash); st != 200 || len(trash.Files) != 1 || trash.Files[0].Key != "docs/v.bin" {
		t.Fatalf("trash: %d %+v", st, trash.Files)
	}
	if st := c.JSON(t, "POST", "/api/v1/buckets/"+b+"/undelete", map[string]any{"key": "docs/v.bin"}, nil); st != 200 {
		t.Fatalf("undelete: %d", st)
	}
	if _, got := get(t, c, b, "docs/v.bin"); !bytes.Equal(got, first) {
		t.Fatal("undeleted: not the restored content")
	}
	if st := c.JSON(t, "GET", "/api/v1/buckets/"+b+"/trash", nil, &trash); st != 200 || len(trash.Files) != 0 {
		t.Fatalf("trash after the undelete: %d %+v", st, trash.Files)
	}

	// Suspended: a restore writes the null version, as any write there.
	if st := c.JSON(t, "PATCH", "/api/v1/buckets/"+b, map[string]any{"versioning": "Suspended"}, &bk); st != 200 || bk.Versioning != "Suspended" {
		t.Fatalf("suspend versioning: %d %q", st, bk.Versioning)
	}
	if st, _, _ := put(t, c, b, "docs/v.bin", second); st != 201 {
		t.Fatal(st)
	}
	var r struct {
		VersionID string `json:"version_id"`
	}
	if st := c.JSON(t, "POST", "/api/v1/buckets/"+b+"/restore", map[string]any{"key": "docs/v.bin", "version_id": v1}, &r); st != 201 || r.VersionID != "null" {
		t.Fatalf("restore in a suspended bucket: %d %q, want the null version", st, r.VersionID)
	}
	vs = fileVersions(t, c, b, "docs/v.bin", "100")
	if len(vs) != 3 || vs[0].VersionID != "null" || !vs[0].IsLatest || vs[0].Size != int64(len(first)) {
		t.Fatalf("versions after a restore in a suspended bucket: %+v (the null version replaced, the others kept)", vs)
	}
	if _, got := get(t, c, b, "docs/v.bin"); !bytes.Equal(got, first) {
		t.Fatal("the restore in a suspended bucket is not the latest")
	}
}

// TestShareLinkFollowsLatest: a share link names a key, not a version:
// after an overwrite it serves the new latest version, and after a
// delete (a delete marker in a versioned bucket) it serves nothing.
func TestShareLinkFollowsLatest(t *testing.T) {
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	if st := c.JSON(t, "PATCH", "/api/v1/buckets/"+c.Bucket, map[string]any{"versioning": "Enabled"}, nil); st != 200 {
		t.Fatalf("enable versioning: %d", st)
	}
	if st, _, _ := put(t, c, c.Bucket, "shared.txt", []byte("old")); st != 201 {
		t.Fatal(st)
	}
	var sh struct {
		URL string `json:"url"`
	}
	if st := c.JSON(t, "POST", "/api/v1/shares", map[string]any{"bucket": c.Bucket, "key": "shared.txt"}, &sh); st != 201 {
		t.Fatalf("create share: %d", st)
	}
	anon := testenv.NewClient(srv.URL)
	if st, got := body(t, anon, sh.URL); st != 200 || string(got) != "old" {
		t.Fatalf("the link: %d %q", st, got)
	}
	if st, _, _ := put(t, c, c.Bucket, "shared.txt", []byte("new")); st != 201 {
		t.Fatal(st)
	}
	if st, got := body(t, anon, sh.URL); st != 200 || string(got) != "new" {
		t.Fatalf("the link after an overwrite: %d %q, want the new version", st, got)
	}
	if st := c.JSON(t, "DELETE", testenv.FileURL(c.Bucket, "shared.txt"), nil, nil); st != 204 {
		t.Fatal(st)
	}
	if st, got := body(t, anon, sh.URL); st != 404 || bytes.Contains(got, []byte("new")) || bytes.Contains(got, []byte("old")) {
		t.Fatalf("the link after a delete: %d %q, want 404", st, got)
	}
}

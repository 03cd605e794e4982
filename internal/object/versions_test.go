package object

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// versionsOf lists every version of bucket, as key@size(flags).
func versionsOf(t *testing.T, f *fixture, bucket string) []string {
	t.Helper()
	p, err := f.svc.ListVersions(t.Context(), f.alice, bucket, meta.VersionListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range p.Versions {
		s := v.Key
		if v.DeleteMarker {
			s += "(marker)"
		}
		if v.IsLatest {
			s += "(latest)"
		}
		out = append(out, s)
	}
	return out
}

// readVersion reads version id of alice-bucket/key.
func readVersion(t *testing.T, f *fixture, key, id string) (string, error) {
	t.Helper()
	r, err := f.svc.GetVersion(t.Context(), f.alice, "alice-bucket", key, id)
	if err != nil {
		return "", err
	}
	rc, err := r.Open(t.Context(), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b), nil
}

func TestVersionedService(t *testing.T) {
	f := newFixture(t, 0)
	ctx := t.Context()
	if _, err := f.svc.SetBucketVersioning(ctx, f.bob, "alice-bucket", meta.VersioningEnabled); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("another user enables versioning: %v", err)
	}
	if _, err := f.svc.SetBucketVersioning(ctx, f.alice, "alice-bucket", meta.Unversioned); !errcode.Is(err, errcode.InvalidArgument) {
		t.Errorf("back to unversioned: %v", err)
	}
	// Written before versioning: reported without a version.
	o0, err := f.put(t, f.alice, "alice-bucket", "k", "zero")
	if err != nil || o0.VersionID != "" {
		t.Fatalf("a write in an unversioned bucket: version %q, %v", o0.VersionID, err)
	}
	if _, err := f.svc.SetBucketVersioning(ctx, f.alice, "alice-bucket", meta.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	o1, err := f.put(t, f.alice, "alice-bucket", "k", "one")
	if err != nil || !meta.ValidVersionID(o1.VersionID) || o1.VersionID == meta.NullVersion {
		t.Fatalf("a write in an enabled bucket: version %q, %v", o1.VersionID, err)
	}
	for id, want := range map[string]string{meta.NullVersion: "zero", o1.VersionID: "one", "": "one"} {
		if got, err := readVersion(t, f, "k", id); err != nil || got != want {
			t.Errorf("version %q: %q, %v; want %q", id, got, err, want)
		}
	}
	if _, err := readVersion(t, f, "k", "0123456789abcdef0123456789abcdef"); errcode.As(err).Detail["resource"] != "version" {
		t.Errorf("an unknown version: %v", err)
	}
	if _, err := readVersion(t, f, "k", "v1"); !errcode.Is(err, errcode.InvalidArgument) {
		t.Errorf("a malformed version: %v", err)
	}
	// Another user names a version: denied before anything is read.
	if _, err := f.svc.GetVersion(ctx, f.bob, "alice-bucket", "k", o1.VersionID); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob reads alice's version: %v", err)
	}
	if _, err := f.svc.DeleteVersion(ctx, f.bob, "alice-bucket", "k", o1.VersionID, meta.Cond{}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob deletes alice's version: %v", err)
	}

	m, err := f.svc.Delete(ctx, f.alice, "alice-bucket", "k", meta.Cond{})
	if err != nil || !m.DeleteMarker || !meta.ValidVersionID(m.VersionID) {
		t.Fatalf("Delete in an enabled bucket: %+v, %v", m, err)
	}
	_, err = f.svc.Get(ctx, f.alice, "alice-bucket", "k")
	if e := errcode.As(err); e == nil || e.Code != errcode.NotFound || e.Detail["delete_marker"] != true || e.Detail["version_id"] != m.VersionID {
		t.Errorf("Get of a deleted key: %v", err)
	}
	if _, err := readVersion(t, f, "k", m.VersionID); !errcode.Is(err, errcode.MethodNotAllowed) {
		t.Errorf("reading a delete marker: %v", err)
	}
	if _, err := f.svc.DeleteVersion(ctx, f.alice, "alice-bucket", "k", m.VersionID, meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, f.alice, "alice-bucket", "k"); got != "one" {
		t.Errorf("after the marker's deletion: %q", got)
	}
	// Suspended: writes are the null version, replacing it.
	if _, err := f.svc.SetBucketVersioning(ctx, f.alice, "alice-bucket", meta.VersioningSuspended); err != nil {
		t.Fatal(err)
	}
	if o, err := f.put(t, f.alice, "alice-bucket", "k", "two"); err != nil || o.VersionID != meta.NullVersion {
		t.Errorf("a write in a suspended bucket: %q, %v", o.VersionID, err)
	}
	if got, _ := readVersion(t, f, "k", meta.NullVersion); got != "two" {
		t.Errorf("the null version after a suspended write: %q", got)
	}
	if got := strings.Join(versionsOf(t, f, "alice-bucket"), " "); got != "k(latest) k" {
		t.Errorf("versions: %s", got)
	}
	// The replaced null version's blob is reclaimed; the kept one's not.
	if _, err := f.svc.CollectGarbage(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := readVersion(t, f, "k", o1.VersionID); err != nil || got != "one" {
		t.Errorf("a kept version after garbage collection: %q, %v", got, err)
	}
	if got, want := f.blobCount(t), 2; got != want {
		t.Errorf("blobs = %d, want %d (the two versions')", got, want)
	}
}

// TestMoveVersioned: a move out of or into a versioned bucket is a copy
// and a delete: the source keeps its version behind a delete marker.
func TestMoveVersioned(t *testing.T) {
	f := newFixture(t, 0)
	ctx := t.Context()
	if _, err := f.put(t, f.alice, "alice-bucket", "a", "data"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.SetBucketVersioning(ctx, f.alice, "alice-bucket", meta.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	o, err := f.svc.Move(ctx, f.alice, "alice-bucket", "a", "alice-bucket", "b", meta.Cond{})
	if err != nil || o.Key != "b" || !meta.ValidVersionID(o.VersionID) {
		t.Fatalf("Move in a versioned bucket: %+v, %v", o, err)
	}
	if got := f.read(t, f.alice, "alice-bucket", "b"); got != "data" {
		t.Errorf("moved: %q", got)
	}
	if got := strings.Join(versionsOf(t, f, "alice-bucket"), " "); got != "a(marker)(latest) a b(latest)" {
		t.Errorf("versions after the move: %s", got)
	}
	if got, err := readVersion(t, f, "a", meta.NullVersion); err != nil || got != "data" {
		t.Errorf("the source's version after the move: %q, %v", got, err)
	}
	// A condition on the destination holds as for a rename.
	if _, err := f.svc.Move(ctx, f.alice, "alice-bucket", "b", "alice-bucket", "c", meta.Cond{IfMatch: "0123"}); !errcode.Is(err, errcode.PreconditionFailed) {
		t.Errorf("Move with a failing condition: %v", err)
	}
	if got := f.read(t, f.alice, "alice-bucket", "b"); got != "data" {
		t.Errorf("after a refused move: %q", got)
	}
}

// TestQuotaFailFastVersioned: the quota check before the body is read
// credits the version a write replaces, and only that (none in an
// enabled bucket), as the commit does.
func TestQuotaFailFastVersioned(t *testing.T) {
	f := newFixture(t, 10)
	f.svc = New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace = time.Nanosecond }), nil) // inline
	ctx := t.Context()
	if _, err := f.put(t, f.alice, "alice-bucket", "k", "123456"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.put(t, f.alice, "alice-bucket", "k", "abcdef"); err != nil {
		t.Fatalf("an overwrite of 6 bytes with a quota of 10: %v", err)
	}
	if _, err := f.svc.SetBucketVersioning(ctx, f.alice, "alice-bucket", meta.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	body := &countingReader{r: strings.NewReader("ABCDEF")}
	_, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "k", Body: body, Size: 6})
	if !errcode.Is(err, errcode.QuotaExceeded) || body.n != 0 {
		t.Errorf("a second version of 6 bytes with a quota of 10: %v after %d bytes read", err, body.n)
	}
	if _, err := f.svc.SetBucketVersioning(ctx, f.alice, "alice-bucket", meta.VersioningSuspended); err != nil {
		t.Fatal(err)
	}
	if _, err := f.put(t, f.alice, "alice-bucket", "k", "ghijkl"); err != nil {
		t.Errorf("a suspended write replacing the null version of 6 bytes: %v", err)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestEncryptJobVersions: the encrypt job encrypts every version where it
// is, the noncurrent ones too, and adds none.
func TestEncryptJobVersions(t *testing.T) {
	f, keys := encFixture(t)
	ctx := t.Context()
	plain := New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, keys }), nil)
	if _, err := plain.SetBucketVersioning(ctx, f.alice, "alice-bucket", meta.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, data := range []string{"first version", "second version"} {
		o, err := plain.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "k", Body: bytes.NewReader([]byte(data)), Size: int64(len(data))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.VersionID)
	}
	if _, err := plain.Delete(ctx, f.alice, "alice-bucket", "k", meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.StartEncrypt(ctx, "alice-bucket"); err != nil {
		t.Fatal(err)
	}
	j := runJobs(t, plain, meta.EncryptJobName("alice-bucket"), fastJobs("a"))
	if j.Done != 2 || j.Failed != 0 {
		t.Errorf("job: %+v, want 2 done (the versions; not the marker)", j)
	}
	p, err := plain.ListVersions(ctx, f.alice, "alice-bucket", meta.VersionListOptions{})
	if err != nil || len(p.Versions) != 3 {
		t.Fatalf("versions after the job: %+v, %v; want the marker and the two versions", p.Versions, err)
	}
	for i, id := range ids {
		o, err := f.meta.GetObjectVersion(ctx, "alice-bucket", "k", id)
		if err != nil || EncryptionOf(o).Mode == 0 || o.IsLatest {
			t.Errorf("version %d: %+v, %v; want it encrypted, noncurrent", i, o, err)
		}
	}
}

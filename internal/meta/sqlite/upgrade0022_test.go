package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// TestUpgradeTo0022 opens a database that migrations 0001 to 0021 made,
// with versions in it (versioned and null ones, a delete marker, a locked
// and tagged version, a null version under a newer one, a bucket never
// versioned), and checks that 0022 (the primary key ordered by seq, no
// objects_latest) keeps every version as it was: each reads the same by
// its ID, the listing and the latest versions are the same, the bucket
// statistics too, and writes and deletes then keep "latest = first".
func TestUpgradeTo0022(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	ms := mustMigrations(t)
	db, err := sql.Open("sqlite", dsn(path, "foreign_keys(ON)", "journal_mode(WAL)"))
	if err != nil {
		t.Fatal(err)
	}
	qs := []string{"CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)"}
	for _, m := range ms {
		if m.Version > 21 {
			continue
		}
		qs = append(qs, m.SQL, fmt.Sprintf("INSERT INTO schema_migrations (version, applied_at) VALUES (%d, 0)", m.Version))
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	id := func(d time.Duration) string { return meta.NewVersionID(t0.Add(d), "") }
	const migratedSeq = "7fffffffffffffff0000000000000000" // 0017's null versions
	until := t0.Add(1000 * 24 * time.Hour)
	aMarker, aLocked, aNull, aOld, bNew := id(4*time.Second), id(3*time.Second), id(2*time.Second), id(time.Second), id(5*time.Second)
	type ver struct {
		bucket, key, id, seq string
		latest, marker       bool
		size                 int64
		tags                 string
		mode                 string
		until                int64
		hold                 bool
	}
	vers := []ver{
		{bucket: "v", key: "a", id: aMarker, seq: aMarker, latest: true, marker: true},
		{bucket: "v", key: "a", id: aLocked, seq: aLocked, size: 7, tags: `[{"Key":"k","Value":"v"}]`, mode: "GOVERNANCE", until: until.UnixNano(), hold: true},
		{bucket: "v", key: "a", id: meta.NullVersion, seq: aNull, size: 5},
		{bucket: "v", key: "a", id: aOld, seq: aOld, size: 3, mode: "COMPLIANCE", until: until.UnixNano()},
		{bucket: "v", key: "b", id: bNew, seq: bNew, latest: true, size: 11},
		{bucket: "v", key: "b", id: meta.NullVersion, seq: migratedSeq, size: 13},
		{bucket: "p", key: "c", id: meta.NullVersion, seq: migratedSeq, latest: true, size: 17},
	}
	qs = append(qs,
		"INSERT INTO users (id, email, password_hash, usage_bytes, created_at) VALUES ('alice', 'alice@example.com', 'x', 56, 1)",
		"INSERT INTO buckets (name, owner_id, visibility, created_at, versioning, object_lock) VALUES ('v', 'alice', 'private', 1, 'Enabled', 1)",
		"INSERT INTO buckets (name, owner_id, visibility, created_at) VALUES ('p', 'alice', 'private', 1)")
	db.SetMaxOpenConns(1)
	for _, q := range qs {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			t.Fatalf("%.200s: %v", q, err)
		}
	}
	for i, v := range vers {
		var tags any
		if v.tags != "" {
			tags = v.tags
		}
		blob := ""
		if !v.marker {
			blob = fmt.Sprintf("blob-%d", i)
		}
		if _, err := db.Exec(`INSERT INTO objects (bucket, key, version_id, seq, is_latest, delete_marker, size, etag, sha256, content_type,
				blob_key, mod_time, tags, lock_mode, lock_until, legal_hold) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'sha', 'text/plain', ?, ?, ?, ?, ?, ?)`,
			v.bucket, v.key, v.id, v.seq, v.latest, v.marker, v.size, fmt.Sprintf("etag-%d", i), blob, t0.Add(time.Duration(i)).UnixNano(),
			tags, v.mode, v.until, v.hold); err != nil {
			db.Close()
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, path, Options{})
	if got, want := len(migrationRows(t, s)), len(ms); got != want {
		t.Errorf("%d migrations recorded, want %d", got, want)
	}
	var n int
	if err := s.readers.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'objects_latest'").Scan(&n); err != nil || n != 0 {
		t.Errorf("objects_latest after 0022: %d, %v", n, err)
	}
	for _, idx := range []string{"objects_blob_key", "objects_sse_kek", "objects_deleted", "objects_count_insert", "objects_count_delete", "objects_count_update"} {
		if err := s.readers.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = ?", idx).Scan(&n); err != nil || n != 1 {
			t.Errorf("%s after 0022: %d, %v", idx, n, err)
		}
	}

	// Every version reads as it was written.
	for i, v := range vers {
		got, err := s.GetObjectVersion(ctx, v.bucket, v.key, v.id)
		if err != nil {
			t.Errorf("GetObjectVersion %s/%s %s: %v", v.bucket, v.key, v.id, err)
			continue
		}
		want := fmt.Sprintf("id=%s latest=%v marker=%v size=%d etag=etag-%d mode=%s until=%d hold=%v tags=%d", v.id, v.latest, v.marker, v.size, i, v.mode, v.until, v.hold, len(v.tags))
		var gotUntil int64
		if !got.Retention.Until.IsZero() {
			gotUntil = got.Retention.Until.UnixNano()
		}
		gotTags := 0
		if len(got.Tags) > 0 {
			gotTags = len(v.tags) // the one tag set there is
			if got.Tags[0] != (meta.Tag{Key: "k", Value: "v"}) {
				gotTags = -1
			}
		}
		if s := fmt.Sprintf("id=%s latest=%v marker=%v size=%d etag=%s mode=%s until=%d hold=%v tags=%d", got.VersionID, got.IsLatest, got.DeleteMarker, got.Size, got.ETag,
			got.Retention.Mode, gotUntil, got.LegalHold, gotTags); s != want {
			t.Errorf("version %d after 0022:\n\t%s\nwant\n\t%s", i, s, want)
		}
	}
	// The listing: each key's versions newest first, the same as 0021's.
	page, err := s.ListObjectVersions(ctx, "v", meta.VersionListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, o := range page.Versions {
		got = append(got, fmt.Sprintf("%s %s %v", o.Key, o.VersionID, o.IsLatest))
	}
	for _, v := range vers[:6] {
		want = append(want, fmt.Sprintf("%s %s %v", v.key, v.id, v.latest))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("versions after 0022:\n\t%v\nwant\n\t%v", got, want)
	}
	// The latest versions.
	if _, err := s.GetObject(ctx, "v", "a"); errcode.As(err) == nil || errcode.As(err).Detail["version_id"] != aMarker {
		t.Errorf("GetObject v/a (a delete marker on top) = %v", err)
	}
	for _, c := range []struct{ bucket, key, id string }{{"v", "b", bNew}, {"p", "c", meta.NullVersion}} {
		if o, err := s.GetObject(ctx, c.bucket, c.key); err != nil || o.VersionID != c.id {
			t.Errorf("GetObject %s/%s = %q, %v; want %q", c.bucket, c.key, o.VersionID, err, c.id)
		}
	}
	for _, c := range []struct {
		bucket       string
		objects, len int64
	}{{"v", 5, 39}, {"p", 1, 17}} {
		if b, err := s.GetBucket(ctx, c.bucket); err != nil || b.Objects != c.objects || b.Bytes != c.len {
			t.Errorf("bucket %s after 0022: %d objects, %d bytes (%v); want %d, %d", c.bucket, b.Objects, b.Bytes, err, c.objects, c.len)
		}
	}

	// Writes after it: a new version goes first and is the latest; removing
	// the marker brings back the locked version; an overwrite of the
	// never-versioned key keeps one row.
	put := func(bucket, key string) meta.Object {
		t.Helper()
		r, err := s.PutObjects(ctx, []meta.Put{{Object: meta.Object{Bucket: bucket, Key: key, Size: 1, ETag: "new", BlobKey: "blob-new-" + bucket + key, ModTime: time.Now()}}})
		if err != nil {
			t.Fatal(err)
		}
		return r[0].Object
	}
	nb := put("v", "b")
	if o, err := s.GetObject(ctx, "v", "b"); err != nil || o.VersionID != nb.VersionID || nb.VersionID == bNew {
		t.Errorf("GetObject v/b after a put = %q, %v; want %q", o.VersionID, err, nb.VersionID)
	}
	if old, err := s.GetObjectVersion(ctx, "v", "b", bNew); err != nil || old.IsLatest {
		t.Errorf("the former latest of v/b: latest %v, %v", old.IsLatest, err)
	}
	if _, err := s.DeleteVersion(ctx, "v", "a", aMarker, meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	if o, err := s.GetObject(ctx, "v", "a"); err != nil || o.VersionID != aLocked || !o.IsLatest {
		t.Errorf("GetObject v/a without its marker = %q, %v; want %q", o.VersionID, err, aLocked)
	}
	put("p", "c")
	if err := s.readers.QueryRow("SELECT count(*) FROM objects WHERE bucket = 'p'").Scan(&n); err != nil || n != 1 {
		t.Errorf("rows of bucket p after an overwrite: %d, %v", n, err)
	}
}

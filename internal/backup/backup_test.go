package backup

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/memblob"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
)

// fixture is a real SQLite store with n objects, each with a blob in an
// in-memory store.
func fixture(t *testing.T, n int) (*sqlite.Store, blob.Store) {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "meta.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	u := meta.User{ID: "alice", Email: "alice@example.com", PasswordHash: "$argon2id$v=19$m=65536,t=1,p=4$c2FsdA$x", CreatedAt: time.Now()}
	if err := st.CreateUser(ctx, u, meta.Bucket{Name: "alice", OwnerID: "alice", Visibility: meta.Private, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	blobs := memblob.New()
	for i := range n {
		key := fmt.Sprintf("o/%04d", i)
		data := bytes.Repeat([]byte{byte(i)}, 100+i)
		if _, err := blobs.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
		o := meta.Object{Bucket: "alice", Key: fmt.Sprintf("k%d", i), Size: int64(len(data)), ETag: fmt.Sprintf("%032x", i),
			SHA256: fmt.Sprintf("%064x", i), ContentType: "application/octet-stream", BlobKey: key, ModTime: time.Now()}
		if _, err := st.PutObjects(ctx, []meta.Put{{Object: o}}); err != nil {
			t.Fatal(err)
		}
	}
	return st, blobs
}

// janitor is object.CollectGarbage's reclamation with no grace: every
// blob it may claim at now is deleted.
func janitor(ctx context.Context, t *testing.T, st *sqlite.Store, blobs blob.Store, now time.Time) int {
	t.Helper()
	gs, err := st.ClaimGarbage(ctx, now.Add(time.Hour), now, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		if err := blobs.Delete(ctx, g.BlobKey); err != nil {
			t.Fatal(err)
		}
	}
	return len(gs)
}

// TestLeaseHoldsDeletedBlobs: objects deleted after the snapshot was read,
// with the janitor reclaiming at once, leave their blobs for the backup
// (which copies every blob of the snapshot); after the backup, the janitor
// takes them. Without the lease the backup would find them gone.
func TestLeaseHoldsDeletedBlobs(t *testing.T) {
	ctx := t.Context()
	st, blobs := fixture(t, 20)
	dst := memblob.New()
	src := Source{Meta: st, Snap: st, Blobs: blobs, TmpDir: t.TempDir()}
	reclaimed := -1
	o := Options{Parallel: 1, afterSnapshot: func() {
		for i := range 10 {
			if _, err := st.DeleteObject(ctx, "alice", fmt.Sprintf("k%d", i), meta.Cond{}); err != nil {
				t.Fatal(err)
			}
		}
		reclaimed = janitor(ctx, t, st, blobs, time.Now())
	}}
	m, err := Run(ctx, src, dst, o)
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	if reclaimed != 0 {
		t.Errorf("the janitor reclaimed %d blobs during the backup, want none (held by the lease)", reclaimed)
	}
	if m.Copied != 20 || len(m.Blobs) != 20 || len(m.Missing) != 0 {
		t.Errorf("backup copied %d (manifest %d blobs, %d missing), want all 20", m.Copied, len(m.Blobs), len(m.Missing))
	}
	if n := janitor(ctx, t, st, blobs, time.Now()); n != 10 {
		t.Errorf("after the backup the janitor reclaimed %d blobs, want the 10 deleted", n)
	}
	if last, err := st.LastBackup(ctx); err != nil || !last.Equal(m.FinishedAt) {
		t.Errorf("LastBackup = %v, %v; want %v", last, err, m.FinishedAt)
	}

	// Incremental: nothing new, everything skipped, and the new
	// manifest still lists the 10 live blobs with their checksums.
	m2, err := Run(ctx, src, dst, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m2.Copied != 0 || m2.Skipped != 10 || len(m2.Blobs) != 10 {
		t.Errorf("second backup: copied %d, skipped %d, %d blobs; want 0, 10, 10", m2.Copied, m2.Skipped, len(m2.Blobs))
	}
	bad, _, err := Verify(ctx, dst, []Manifest{m, m2}, 2, nil)
	if err != nil || len(bad) != 0 {
		t.Errorf("Verify = %v, %v", bad, err)
	}

	// Restore checks each blob as it copies: a corrupted one fails it.
	k := BlobsPrefix + m2.Blobs[0].Key
	r, _ := dst.Get(ctx, k, 0, -1)
	b, _ := io.ReadAll(r)
	r.Close()
	b[0] ^= 1
	dst.Put(ctx, k, bytes.NewReader(b), int64(len(b)))
	into := memblob.New()
	if _, err := RestoreBlobs(ctx, dst, into, m2, 1, nil); err == nil {
		t.Error("RestoreBlobs restored a corrupted blob")
	}
	if _, err := into.Stat(ctx, m2.Blobs[0].Key); err == nil {
		t.Error("RestoreBlobs left the corrupted blob's copy behind")
	}
}

// TestLapsedLeaseFails: a backup whose lease lapsed (renewed too late)
// fails and writes no manifest.
func TestLapsedLeaseFails(t *testing.T) {
	ctx := t.Context()
	st, blobs := fixture(t, 3)
	dst := memblob.New()
	src := Source{Meta: st, Snap: st, Blobs: blobs, TmpDir: t.TempDir()}
	clock := time.Now()
	o := Options{now: func() time.Time { return clock }, afterSnapshot: func() { clock = clock.Add(time.Hour) }}
	if _, err := Run(ctx, src, dst, o); err == nil {
		t.Fatal("a backup whose lease lapsed succeeded")
	}
	if ms, err := List(ctx, dst); err != nil || len(ms) != 0 {
		t.Errorf("List after the failed backup = %v, %v; want none", ms, err)
	}
}

// TestHeartbeatKeepsLease: a backup that takes longer than its lease's
// TTL keeps the lease by renewing it, and the janitor takes nothing it
// holds meanwhile. The lease is judged by a clock of the test's, moved
// by half a TTL after each renewal at the current time: no timing
// decides the outcome.
func TestHeartbeatKeepsLease(t *testing.T) {
	ctx := t.Context()
	st, blobs := fixture(t, 4)
	dst := memblob.New()
	src := Source{Meta: st, Snap: st, Blobs: blobs, TmpDir: t.TempDir()}
	const ttl = 30 * time.Millisecond
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	renewals := make(chan time.Time, 1000)
	reclaimed := 0
	o := Options{LeaseTTL: ttl, now: now, renewed: func(at time.Time) { renewals <- at }, afterSnapshot: func() {
		if _, err := st.DeleteObject(ctx, "alice", "k0", meta.Cond{}); err != nil {
			t.Fatal(err)
		}
		for range 8 { // 4 TTLs in all
			for at := <-renewals; !at.Equal(now()); at = <-renewals { // one renewed at the current time
			}
			mu.Lock()
			clock = clock.Add(ttl / 2)
			mu.Unlock()
			reclaimed += janitor(ctx, t, st, blobs, now())
		}
	}}
	m, err := Run(ctx, src, dst, o)
	if err != nil {
		t.Fatalf("a backup longer than its lease's TTL: %v", err)
	}
	if reclaimed != 0 || m.Copied != 4 {
		t.Errorf("reclaimed %d during the backup (want 0), copied %d (want 4)", reclaimed, m.Copied)
	}
}

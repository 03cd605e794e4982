package replicate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superfly/ltx"
	_ "modernc.org/sqlite"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/diskblob"
)

// openDB makes a WAL database at path with a table t, as Coffer's store
// opens meta.db (WAL, synchronous=FULL).
func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, blob TEXT)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

type fixture struct {
	dir   string
	db    *sql.DB
	local *diskblob.Store
	rep   *Replicator
	blobs blob.Store // local through rep.Wrap
	dest  string
}

// start opens a data folder (meta.db, blobs) and replicates it to a
// folder through wrap (nil: the folder as it is), with passes only when
// the test asks (Sync).
func start(t *testing.T, wrap func(blob.Store) blob.Store) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir()}
	f.dest = filepath.Join(f.dir, "replica")
	f.db = openDB(t, filepath.Join(f.dir, "meta.db"))
	var err error
	if f.local, err = diskblob.Open(filepath.Join(f.dir, "blobs")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.local.Close() })
	o := Options{URL: f.dest, Window: time.Hour, Interval: time.Hour, DB: filepath.Join(f.dir, "meta.db"), Blobs: f.local, Log: quiet()}
	if wrap != nil {
		o.wrapDest = wrap
	}
	if f.rep, err = Start(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Bounded: a test that failed with a destination held back must
		// not hang in its clean-up (Close's last pass waits for it).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f.rep.Close(ctx)
	})
	f.blobs = f.rep.Wrap(f.local)
	return f
}

// put writes a blob through the replicated store and a row naming it.
func (f *fixture) put(t *testing.T, key string) {
	t.Helper()
	if _, err := f.blobs.Put(t.Context(), key, strings.NewReader("bytes of "+key), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Exec("INSERT INTO t VALUES (?, ?)", key, key); err != nil {
		t.Fatal(err)
	}
}

func ltxFiles(t *testing.T, st blob.Store) []string {
	t.Helper()
	var keys []string
	if err := st.List(t.Context(), metaPrefix, func(i blob.Info) error { keys = append(keys, i.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	return keys
}

// maxTXID is the highest transaction the LTX files keys name.
func maxTXID(t *testing.T, keys []string) ltx.TXID {
	t.Helper()
	var hi ltx.TXID
	for _, k := range keys {
		_, h, err := ltx.ParseFilename(path.Base(k))
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		hi = max(hi, h)
	}
	return hi
}

// gate is a destination whose blob Puts wait until open is closed.
type gate struct {
	blob.Store
	open  chan struct{}
	waits atomic.Int64
}

func (g *gate) Put(ctx context.Context, key string, r io.Reader, size int64) (blob.Info, error) {
	if strings.HasPrefix(key, blobPrefix) {
		g.waits.Add(1)
		select {
		case <-g.open:
		case <-ctx.Done():
			return blob.Info{}, ctx.Err()
		}
	}
	return g.Store.Put(ctx, key, r, size)
}

// TestBarrier: metadata naming a blob is not written to the replica (nor
// counted as replicated in the lag) before the blob is there.
func TestBarrier(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	f := start(t, func(b blob.Store) blob.Store { g.Store = b; return g })
	if err := f.rep.Sync(t.Context()); err != nil { // the start: nothing to copy
		t.Fatal(err)
	}
	before := ltxFiles(t, g.Store)
	lag0 := f.rep.Lag()
	f.put(t, "a/1")
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	err := f.rep.Sync(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a pass with the blob held back: %v, want the deadline", err)
	}
	// No LTX file holds the transaction naming a/1: litestream's own
	// compactions and retention may add and remove files of the earlier
	// transactions meanwhile (on their clock), so the test compares the
	// highest transaction, not the files.
	if after := ltxFiles(t, g.Store); maxTXID(t, after) > maxTXID(t, before) {
		t.Fatalf("LTX files written before the blob they name: %v, was %v", after, before)
	}
	if lag := f.rep.Lag(); lag < lag0+300*time.Millisecond {
		t.Errorf("lag %s did not grow while the blob was held back (was %s)", lag, lag0)
	}
	close(g.open)
	if err := f.rep.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Store.Stat(t.Context(), blobPrefix+"a/1"); err != nil {
		t.Fatalf("blob not on the replica after the pass: %v", err)
	}
	if after := ltxFiles(t, g.Store); len(after) <= len(before) {
		t.Fatalf("no new LTX file after the pass: %v", after)
	}
	if lag := f.rep.Lag(); lag > time.Minute {
		t.Errorf("lag %s after a pass", lag)
	}
}

// TestLagAccounting: Lag counts from the start of the last whole pass.
func TestLagAccounting(t *testing.T) {
	f := start(t, nil)
	t0 := time.Now()
	f.put(t, "x")
	if err := f.rep.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	asOf := time.Unix(0, f.rep.asOf.Load())
	if asOf.Before(t0) || asOf.After(t1) {
		t.Errorf("as of %s, want within the pass [%s, %s]", asOf, t0, t1)
	}
	if lag := f.rep.Lag(); lag < time.Since(t1) || lag > time.Since(t0) {
		t.Errorf("lag %s outside [%s, %s]", lag, time.Since(t1), time.Since(t0))
	}
	if f.rep.Errors() != 0 {
		t.Errorf("errors: %d", f.rep.Errors())
	}
}

// TestPointSelection: restoring at a time between passes gives the state
// of the last pass before it; latest the last pass; before the first, no
// point.
func TestPointSelection(t *testing.T) {
	f := start(t, nil)
	var marks []time.Time
	for i := range 3 {
		f.put(t, fmt.Sprintf("k%d", i))
		if err := f.rep.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // LTX times have millisecond resolution
		marks = append(marks, time.Now())
		time.Sleep(20 * time.Millisecond)
	}
	f.rep.Close(t.Context())
	dest, err := OpenDest(t.Context(), f.dest, true)
	if err != nil {
		t.Fatal(err)
	}
	defer dest.Close()
	if _, err := Point(t.Context(), dest, time.Unix(1, 0)); !errors.Is(err, ErrNoPoint) {
		t.Errorf("a point before the first: %v, want ErrNoPoint", err)
	}
	var prev uint64
	for i, at := range append(marks, time.Time{}) {
		p, err := Point(t.Context(), dest, at)
		if err != nil {
			t.Fatal(err)
		}
		if !at.IsZero() && !p.CreatedAt.Before(at) {
			t.Errorf("point %d: made %s, not before %s", i, p.CreatedAt, at)
		}
		if uint64(p.MaxTXID) < prev {
			t.Errorf("point %d: transaction %d before the previous point's %d", i, p.MaxTXID, prev)
		}
		prev = uint64(p.MaxTXID)
	}
	// Restore at the second mark: k0 and k1, not k2; their blobs.
	out := filepath.Join(t.TempDir(), "restored")
	res, err := Restore(t.Context(), f.dest, out, marks[1], RestoreOptions{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t, filepath.Join(out, "meta.db"))
	var keys []string
	rows, err := db.Query("SELECT k FROM t ORDER BY k")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		rows.Scan(&k)
		keys = append(keys, k)
	}
	rows.Close()
	if strings.Join(keys, ",") != "k0,k1" {
		t.Errorf("restored at the second mark: rows %v, want k0,k1 (point %s)", keys, res.Point)
	}
	if res.Blobs != 3 {
		t.Errorf("restored %d blobs, want 3", res.Blobs)
	}
	local, err := diskblob.Open(filepath.Join(out, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	for _, k := range keys {
		if _, err := local.Stat(t.Context(), k); err != nil {
			t.Errorf("blob %s: %v", k, err)
		}
	}
	// Into a folder that holds something: refused.
	if _, err := Restore(t.Context(), f.dest, out, time.Time{}, RestoreOptions{Log: quiet()}); err == nil {
		t.Error("restore into a non-empty folder succeeded")
	}
}

// TestScanCopiesWhatIsMissing: at start, local blobs the replica lacks (or
// holds at another size) are copied; the others are not.
func TestScanCopiesWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	local, err := diskblob.Open(filepath.Join(dir, "local"))
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	dest, err := diskblob.Open(filepath.Join(dir, "dest"))
	if err != nil {
		t.Fatal(err)
	}
	defer dest.Close()
	for _, k := range []string{"a", "b/1", "b/2", "c"} {
		local.Put(t.Context(), k, strings.NewReader("data "+k), -1)
	}
	dest.Put(t.Context(), blobPrefix+"a", strings.NewReader("data a"), -1)
	dest.Put(t.Context(), blobPrefix+"b/1", strings.NewReader("short"), -1)
	var errs atomic.Uint64
	s := newShipper(local, dest, quiet(), &errs)
	if err := s.scan(t.Context()); err != nil {
		t.Fatal(err)
	}
	var queued []string
	for _, it := range s.queue {
		queued = append(queued, it.key)
	}
	if got := strings.Join(queued, ","); got != "b/1,b/2,c" {
		t.Errorf("queued %s, want b/1,b/2,c", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	s.start(ctx, 2)
	if err := s.wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	cancel()
	s.close()
	if s.copied.Load() != 3 {
		t.Errorf("copied %d, want 3", s.copied.Load())
	}
}

// TestOpenDest: a folder (made 0700), an S3 URL checked as --blob's, and
// nothing else.
func TestOpenDest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "replica")
	d, err := OpenDest(t.Context(), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("replica folder: %v %v", fi, err)
	}
	if _, err := OpenDest(t.Context(), filepath.Join(t.TempDir(), "missing"), true); err == nil {
		t.Error("a missing folder opened for restore")
	}
	for _, u := range []string{"", "ftp://host/x", "s3://", "s3://bucket?endpoint=%zz"} {
		if _, err := OpenDest(t.Context(), u, false); err == nil {
			t.Errorf("%q opened", u)
		}
	}
	if got := bare("s3://b/p?endpoint=http://x&creds=/secret"); got != "s3://b/p" {
		t.Errorf("bare: %s", got)
	}
}

// TestWatermark: the barrier opens only when every number below it
// finished, whatever the order they finish in.
func TestWatermark(t *testing.T) {
	var errs atomic.Uint64
	s := newShipper(nil, nil, quiet(), &errs)
	a := s.reserve()
	s.enqueue("x")
	s.enqueue("y")
	m := s.mark()
	items := append([]item(nil), s.queue...)
	s.enqueue("z") // after the mark: does not hold it
	if ok, _ := s.doneBelow(m); ok {
		t.Fatal("open with everything busy")
	}
	s.done(items[1])
	s.finish(a)
	if ok, _ := s.doneBelow(m); ok {
		t.Fatal("open with x busy")
	}
	if s.waitKey(t.Context(), "x", time.Millisecond) {
		t.Fatal("x not busy")
	}
	s.done(items[0])
	if ok, _ := s.doneBelow(m); !ok {
		t.Fatal("closed with everything below the mark finished")
	}
	if ok, _ := s.doneBelow(s.mark()); ok {
		t.Fatal("open with z busy")
	}
}

// TestUnreachableDestination: an S3 destination that does not answer does
// not stop the start; passes fail, counted, until it answers.
func TestUnreachableDestination(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testtesttest")
	dir := t.TempDir()
	openDB(t, filepath.Join(dir, "meta.db"))
	local, err := diskblob.Open(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	r, err := Start(t.Context(), Options{URL: "s3://bucket?endpoint=http://127.0.0.1:1&region=us-east-1", Window: time.Hour, Interval: time.Hour,
		DB: filepath.Join(dir, "meta.db"), Blobs: local, Log: quiet()})
	if err != nil {
		t.Fatalf("start with the destination down: %v", err)
	}
	defer r.Close(context.Background())
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := r.Sync(ctx); err == nil {
		t.Fatal("a pass succeeded with the destination down")
	}
	if _, err := r.Wrap(local).Put(t.Context(), "k", strings.NewReader("x"), 1); err != nil {
		t.Fatalf("a write waited on the destination: %v", err)
	}
	for r.Errors() == 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if r.Errors() == 0 {
		t.Error("no error counted")
	}
}

// TestDeleteKeepsUncopied: the janitor's delete of a blob still queued
// for the replica fails once the window is out (the blob stays, its
// garbage entry stays queued), and goes through once the copy is done.
func TestDeleteKeepsUncopied(t *testing.T) {
	local, err := diskblob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var errs atomic.Uint64
	s := newShipper(local, nil, quiet(), &errs)
	w := &store{Store: local, s: s, window: 10 * time.Millisecond}
	if _, err := w.Put(t.Context(), "o/ab/x", strings.NewReader("bytes"), 5); err != nil {
		t.Fatal(err)
	}
	item := s.queue[0]
	if err := w.Delete(t.Context(), "o/ab/x"); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("delete of an uncopied blob: %v, want ErrNotReplicated", err)
	}
	if _, err := local.Stat(t.Context(), "o/ab/x"); err != nil {
		t.Fatalf("the uncopied blob is gone: %v", err)
	}
	if errs.Load() != 1 {
		t.Errorf("errors counted: %d, want 1", errs.Load())
	}
	s.done(item)
	if err := w.Delete(t.Context(), "o/ab/x"); err != nil {
		t.Fatalf("delete after the copy: %v", err)
	}
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
	"github.com/coffer-storage/coffer/internal/meta/metatest"
)

func TestConformance(t *testing.T) {
	metatest.Run(t, func(t *testing.T) (meta.Stores, func() error) {
		s, err := Open(t.Context(), filepath.Join(t.TempDir(), "meta.db"), Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s.Stores(), s.Close
	})
}

// openAt opens the store at path, closing it when the test ends.
func openAt(t testing.TB, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// setup opens a fresh store with user alice (default bucket "alice").
func setup(t testing.TB, opts Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "meta.db")
	s := openAt(t, path, opts)
	u := meta.User{ID: "alice", Email: "alice@example.com", PasswordHash: "x"}
	if err := s.CreateUser(context.Background(), u, meta.Bucket{Name: "alice"}); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	return s, path
}

func object(key string, size int64) meta.Object {
	return meta.Object{Bucket: "alice", Key: key, Size: size, ETag: "etag-" + key, BlobKey: "blob-" + key, ModTime: time.Now()}
}

func putOne(ctx context.Context, s meta.Objects, o meta.Object, cond meta.Cond) error {
	_, err := s.PutObjects(ctx, []meta.Put{{Object: o, Cond: cond}})
	return err
}

// hold makes the writer run an operation that blocks until release is
// called, so that the operations queued meanwhile land in one batch.
func hold(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, rel := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.write(context.Background(), func(context.Context, *conn) error {
			close(started)
			<-rel
			return nil
		})
	}()
	<-started
	return func() {
		close(rel)
		if err := <-done; err != nil {
			t.Errorf("holding operation: %v", err)
		}
	}
}

// waitQueued waits until n operations wait for the writer.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.queue) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d operations queued, want %d", len(s.queue), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestReopenKeepsDataAndMigrations(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUser(ctx, meta.User{ID: "alice", Email: "alice@example.com"}, meta.Bucket{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	want := object("k", 42)
	want.Metadata = map[string]string{"a": "b"}
	if err := putOne(ctx, s, want, meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	before := migrationRows(t, s)
	if got, want := len(before), len(mustMigrations(t)); got != want || got == 0 {
		t.Fatalf("%d migrations recorded, want %d", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openAt(t, path, Options{})
	got, err := s.GetObject(ctx, "alice", "k")
	if err != nil {
		t.Fatalf("GetObject after reopen: %v", err)
	}
	if got.Size != want.Size || got.BlobKey != want.BlobKey || got.Metadata["a"] != "b" || !got.ModTime.Equal(want.ModTime) {
		t.Errorf("after reopen: %+v, want %+v", got, want)
	}
	u, err := s.GetUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := u.UsageBytes, int64(42); got != want {
		t.Errorf("usage after reopen = %d, want %d", got, want)
	}
	if after := migrationRows(t, s); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("schema_migrations after reopen = %v, want unchanged %v", after, before)
	}
}

func mustMigrations(t *testing.T) []metasql.Migration {
	t.Helper()
	ms, err := metasql.Migrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// migrationRows returns schema_migrations as "version@applied_at".
func migrationRows(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.readers.Query("SELECT version, applied_at FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v, at int64
		if err := rows.Scan(&v, &at); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d@%d", v, at))
	}
	return out
}

func TestPathTakenLiterally(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "we?ird #dir%20")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, filepath.Join(dir, "meta.db"), Options{})
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "meta.db")); err != nil {
		t.Errorf("the database is not where asked: %v", err)
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.write(context.Background(), func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES (9999, 0)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(context.Background(), path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open of a database migrated by a newer binary succeeded")
	}
}

func TestGroupCommitConcurrentPuts(t *testing.T) {
	ctx := context.Background()
	s, path := setup(t, Options{})
	const n = 200
	b0, o0 := s.batches.Load(), s.ops.Load()
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = putOne(ctx, s, object(fmt.Sprintf("k%03d", i), int64(i)), meta.Cond{})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	batches, ops := s.batches.Load()-b0, s.ops.Load()-o0
	t.Logf("%d puts in %d commits (%.1f per commit)", ops, batches, float64(ops)/float64(batches))
	if ops != n {
		t.Errorf("the writer ran %d operations, want %d", ops, n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openAt(t, path, Options{})
	var sum int64
	for i := range n {
		o, err := s.GetObject(ctx, "alice", fmt.Sprintf("k%03d", i))
		if err != nil {
			t.Fatalf("after reopen, object %d: %v", i, err)
		}
		sum += o.Size
	}
	u, err := s.GetUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := u.UsageBytes, sum; got != want {
		t.Errorf("usage after reopen = %d, want %d", got, want)
	}
}

func TestBatchIsolatesFailures(t *testing.T) {
	ctx := context.Background()
	s, _ := setup(t, Options{})
	if _, err := s.PutObjects(ctx, []meta.Put{{Object: object("existing", 10)}, {Object: object("victim", 7)}}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"t1", "t2"} {
		if err := s.CreateRefreshToken(ctx, meta.RefreshToken{Hash: h, UserID: "alice", Family: "f", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RotateRefreshToken(ctx, "t1", meta.RefreshToken{Hash: "t3", ExpiresAt: time.Now().Add(time.Hour)}, time.Now()); err != nil {
		t.Fatal(err)
	}

	release := hold(t, s)
	b0, o0 := s.batches.Load(), s.ops.Load()
	type result struct {
		name string
		err  error
	}
	ops := []struct {
		name string
		want errcode.Code // Unknown means success
		run  func() error
	}{
		{"good put 1", errcode.Unknown, func() error { return putOne(ctx, s, object("good1", 1), meta.Cond{}) }},
		{"failed precondition", errcode.PreconditionFailed, func() error {
			// Its first put must be rolled back with it.
			_, err := s.PutObjects(ctx, []meta.Put{
				{Object: object("partial", 5)},
				{Object: object("existing", 1), Cond: meta.Cond{IfNoneMatch: true}},
			})
			return err
		}},
		{"good put 2", errcode.Unknown, func() error { return putOne(ctx, s, object("good2", 2), meta.Cond{}) }},
		{"missing bucket", errcode.NotFound, func() error {
			o := object("x", 1)
			o.Bucket = "nope"
			return putOne(ctx, s, o, meta.Cond{})
		}},
		{"token reuse", errcode.Unauthenticated, func() error {
			_, err := s.RotateRefreshToken(ctx, "t1", meta.RefreshToken{Hash: "t4", ExpiresAt: time.Now().Add(time.Hour)}, time.Now())
			return err
		}},
		{"panic", errcode.Internal, func() error {
			return s.write(ctx, func(ctx context.Context, c *conn) error {
				if _, err := c.ExecContext(ctx, "UPDATE users SET quota_bytes = 1 WHERE id = 'alice'"); err != nil {
					return err
				}
				panic("boom")
			})
		}},
		{"good delete", errcode.Unknown, func() error {
			_, err := s.DeleteObject(ctx, "alice", "victim", meta.Cond{})
			return err
		}},
	}
	results := make(chan result, len(ops))
	for _, op := range ops {
		go func() { results <- result{op.name, op.run()} }()
	}
	waitQueued(t, s, len(ops))
	release()
	got := map[string]error{}
	for range ops {
		r := <-results
		got[r.name] = r.err
	}
	if b, o := s.batches.Load()-b0, s.ops.Load()-o0; b != 1 || o != int64(len(ops)) {
		t.Fatalf("the operations ran in %d batches with %d ops, want 1 batch of %d", b, o, len(ops))
	}
	for _, op := range ops {
		err := got[op.name]
		switch {
		case op.want == errcode.Unknown && err != nil:
			t.Errorf("%s: %v, want success", op.name, err)
		case op.want != errcode.Unknown && errcode.Of(err) != op.want:
			t.Errorf("%s: err = %v (code %v), want code %v", op.name, err, errcode.Of(err), op.want)
		}
	}

	for _, k := range []string{"good1", "good2", "existing"} {
		if _, err := s.GetObject(ctx, "alice", k); err != nil {
			t.Errorf("GetObject %s: %v", k, err)
		}
	}
	for _, k := range []string{"partial", "victim"} {
		if _, err := s.GetObject(ctx, "alice", k); !errcode.Is(err, errcode.NotFound) {
			t.Errorf("GetObject %s: err = %v, want not found", k, err)
		}
	}
	u, err := s.GetUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if u.UsageBytes != 13 || u.QuotaBytes != 0 {
		t.Errorf("usage %d, quota %d; want 13 and 0 (the panicking op rolled back)", u.UsageBytes, u.QuotaBytes)
	}
	// The reuse's revocation committed: t3, the newest of the family, is dead.
	if _, err := s.RotateRefreshToken(ctx, "t3", meta.RefreshToken{Hash: "t5", ExpiresAt: time.Now().Add(time.Hour)}, time.Now()); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("rotating after the reuse: err = %v, want unauthenticated", err)
	}
}

func TestCommitFailureFailsTheBatch(t *testing.T) {
	ctx := context.Background()
	s, _ := setup(t, Options{})
	release := hold(t, s)
	errs := make(chan error, 2)
	go func() { errs <- putOne(ctx, s, object("innocent", 1), meta.Cond{}) }()
	waitQueued(t, s, 1)
	go func() {
		// A deferred foreign-key violation passes the statement and fails
		// the COMMIT.
		errs <- s.write(ctx, func(ctx context.Context, c *conn) error {
			if _, err := c.ExecContext(ctx, "PRAGMA defer_foreign_keys = ON"); err != nil {
				return err
			}
			_, err := c.ExecContext(ctx, "INSERT INTO buckets (name, owner_id, visibility, created_at) VALUES ('b', 'ghost', 'private', 0)")
			return err
		})
	}()
	waitQueued(t, s, 2)
	release()
	for range 2 {
		if err := <-errs; !errcode.Is(err, errcode.Unavailable) {
			t.Errorf("err = %v (code %v), want unavailable", err, errcode.Of(err))
		}
	}
	if _, err := s.GetObject(ctx, "alice", "innocent"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("GetObject of an op whose batch failed: err = %v, want not found", err)
	}
	// The writer recovers.
	if err := putOne(ctx, s, object("after", 1), meta.Cond{}); err != nil {
		t.Fatalf("put after a failed commit: %v", err)
	}
	if _, err := s.GetBucket(ctx, "b"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("GetBucket b: err = %v, want not found", err)
	}
}

func TestCanceledWhileQueued(t *testing.T) {
	s, _ := setup(t, Options{})
	release := hold(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Bool
	errc := make(chan error, 1)
	go func() {
		errc <- s.write(ctx, func(context.Context, *conn) error {
			ran.Store(true)
			return nil
		})
	}()
	waitQueued(t, s, 1)
	cancel()
	// The caller gets its answer without waiting for the writer.
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled queued write did not return while the writer was busy")
	}
	release()
	// Flush the writer, then check the abandoned op never ran.
	if err := putOne(context.Background(), s, object("k", 1), meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	if ran.Load() {
		t.Error("an operation abandoned while queued ran")
	}
}

func TestBusyIsUnavailable(t *testing.T) {
	ctx := context.Background()
	s, path := setup(t, Options{BusyTimeout: 50 * time.Millisecond})

	// Another process holds the write lock.
	other, err := sql.Open("sqlite", dsn(path, "busy_timeout(0)"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	c, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	err = putOne(ctx, s, object("k", 1), meta.Cond{})
	if _, rerr := c.ExecContext(ctx, "ROLLBACK"); rerr != nil {
		t.Fatal(rerr)
	}
	if !errcode.Is(err, errcode.Unavailable) {
		t.Fatalf("put while another process writes: err = %v (code %v), want unavailable", err, errcode.Of(err))
	}
	if got, want := errcode.As(err).RetryAfter, time.Second; got != want {
		t.Errorf("RetryAfter = %v, want %v", got, want)
	}
	if err := putOne(ctx, s, object("k", 1), meta.Cond{}); err != nil {
		t.Errorf("put once the lock is free: %v", err)
	}
}

func TestClosedStore(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Ping(context.Background()); !errcode.Is(err, errcode.Unavailable) {
		t.Errorf("Ping after Close: err = %v, want unavailable", err)
	}
	if err := s.SetQuota(context.Background(), "x", 1); !errcode.Is(err, errcode.Unavailable) {
		t.Errorf("write after Close: err = %v, want unavailable", err)
	}
}

func TestPragmas(t *testing.T) {
	s, _ := setup(t, Options{})
	// The writer: durable (WAL, synchronous=FULL) and with foreign keys.
	want := map[string]string{"journal_mode": "wal", "synchronous": "2", "foreign_keys": "1", "query_only": "0"}
	got := map[string]string{}
	err := s.write(context.Background(), func(ctx context.Context, c *conn) error {
		for p := range want {
			var v string
			if err := c.QueryRowContext(ctx, "PRAGMA "+p).Scan(&v); err != nil {
				return err
			}
			got[p] = v
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("writer pragmas = %v, want %v", got, want)
	}
	// The readers cannot write.
	var q int
	if err := s.readers.QueryRow("PRAGMA query_only").Scan(&q); err != nil || q != 1 {
		t.Errorf("reader query_only = %d (%v), want 1", q, err)
	}
	if _, err := s.readers.Exec("UPDATE users SET quota_bytes = 1"); err == nil {
		t.Error("a reader connection wrote")
	}
}

func TestCanceledWhileRunningCommits(t *testing.T) {
	s, _ := setup(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	running, rel := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- s.write(ctx, func(ctx context.Context, c *conn) error {
			if _, err := c.ExecContext(ctx, "UPDATE users SET quota_bytes = 77 WHERE id = 'alice'"); err != nil {
				return err
			}
			close(running)
			<-rel
			return nil
		})
	}()
	<-running
	cancel()
	close(rel)
	if err := <-errc; err != nil {
		t.Fatalf("an op cancelled while running, in a batch that committed: err = %v, want nil", err)
	}
	u, err := s.GetUser(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if u.QuotaBytes != 77 {
		t.Errorf("quota = %d, want 77: the op reported committed did not commit", u.QuotaBytes)
	}
}

func TestCloseDrainsQueue(t *testing.T) {
	ctx := context.Background()
	s, path := setup(t, Options{MaxBatch: 8})
	release := hold(t, s)
	const n = 64
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = putOne(ctx, s, object(fmt.Sprintf("k%02d", i), 1), meta.Cond{}) })
	}
	waitQueued(t, s, n/2)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	time.Sleep(10 * time.Millisecond) // let Close begin
	release()
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()

	s = openAt(t, path, Options{})
	stored := 0
	for i, err := range errs {
		_, gerr := s.GetObject(ctx, "alice", fmt.Sprintf("k%02d", i))
		switch {
		case err == nil && gerr != nil:
			t.Errorf("put %d succeeded before Close but is not stored: %v", i, gerr)
		case err != nil && !errcode.Is(err, errcode.Unavailable):
			t.Errorf("put %d: err = %v, want nil or unavailable", i, err)
		case err != nil && gerr == nil:
			t.Errorf("put %d failed (%v) but is stored", i, err)
		case err == nil:
			stored++
		}
	}
	if stored < n/2 {
		t.Errorf("%d puts stored, want at least the %d queued before Close", stored, n/2)
	}
}

// BenchmarkPutObjectsParallel measures 1-object puts from many goroutines:
// the throughput group commit buys (one fsync per batch, not per put).
// MaxBatch=1 is the baseline without it: one transaction per put.
func BenchmarkPutObjectsParallel(b *testing.B) {
	for _, maxBatch := range []int{256, 1} {
		b.Run(fmt.Sprintf("MaxBatch=%d", maxBatch), func(b *testing.B) {
			s, _ := setup(b, Options{MaxBatch: maxBatch})
			ctx := context.Background()
			var n atomic.Int64
			b0, o0 := s.batches.Load(), s.ops.Load()
			b.SetParallelism(32) // 32 × GOMAXPROCS concurrent writers
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					if err := putOne(ctx, s, object(fmt.Sprintf("k%09d", i), 1024), meta.Cond{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			if batches := s.batches.Load() - b0; batches > 0 {
				b.ReportMetric(float64(s.ops.Load()-o0)/float64(batches), "puts/commit")
			}
		})
	}
}

// TestUpgradeFrom0001 opens a database that only the first migration made,
// with data in it: the objects written before multipart support read back
// as single-blob objects without a checksum, and the new tables work.
func TestUpgradeFrom0001(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	ms := mustMigrations(t)
	if ms[0].Version != 1 {
		t.Fatalf("first migration is %s", ms[0].Name)
	}
	db, err := sql.Open("sqlite", dsn(path, "foreign_keys(ON)", "journal_mode(WAL)"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)",
		ms[0].SQL,
		"INSERT INTO schema_migrations (version, applied_at) VALUES (1, 0)",
		"INSERT INTO users (id, email, password_hash, usage_bytes, created_at) VALUES ('alice', 'alice@example.com', 'x', 5, 1)",
		"INSERT INTO buckets (name, owner_id, visibility, created_at) VALUES ('alice', 'alice', 'private', 1)",
		`INSERT INTO objects (bucket, key, size, etag, sha256, content_type, metadata, blob_key, mod_time)
			VALUES ('alice', 'old', 5, 'etag', 'sha', 'text/plain', '{"a":"b"}', 'blob-old', 1000)`,
	} {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, path, Options{})
	got, err := s.GetObject(ctx, "alice", "old")
	if err != nil {
		t.Fatal(err)
	}
	// 0017 made it its key's null version, the latest.
	want := meta.Object{Bucket: "alice", Key: "old", VersionID: meta.NullVersion, IsLatest: true, Size: 5, ETag: "etag", SHA256: "sha",
		ContentType: "text/plain", Metadata: map[string]string{"a": "b"}, BlobKey: "blob-old", ModTime: time.Unix(0, 1000).UTC()}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) || got.Parts != nil {
		t.Errorf("an object of schema 1 after the upgrade:\n\t%+v\nwant\n\t%+v", got, want)
	}
	// 0014 counted the objects that were there.
	if b, err := s.GetBucket(ctx, "alice"); err != nil || b.Objects != 1 || b.Bytes != 5 {
		t.Errorf("bucket stats after the upgrade = %d objects, %d bytes (%v); want 1, 5", b.Objects, b.Bytes, err)
	}
	if refs, err := s.ReferencedBlobs(ctx, []string{"blob-old"}); err != nil || !refs["blob-old"] {
		t.Errorf("ReferencedBlobs after the upgrade = %v, %v", refs, err)
	}
	if got, want := len(migrationRows(t, s)), len(ms); got != want {
		t.Errorf("%d migrations recorded, want %d", got, want)
	}

	// The new tables work on the upgraded database.
	if err := s.CreateUpload(ctx, meta.Upload{ID: "u", Bucket: "alice", Key: "old"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutPart(ctx, meta.Part{UploadID: "u", Number: 1, Size: 3, ETag: "e1", BlobKey: "blob-p1"}); err != nil {
		t.Fatal(err)
	}
	o, err := s.CompleteUpload(ctx, "u", meta.Object{ETag: "m-1"}, []meta.CompletePart{{Number: 1, ETag: "e1"}}, 0, meta.Cond{IfMatch: "etag"})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Parts) != 1 || o.Size != 3 {
		t.Errorf("CompleteUpload = %+v", o)
	}
	u, err := s.GetUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if u.UsageBytes != 3 {
		t.Errorf("usage = %d, want 3", u.UsageBytes)
	}
	if err := s.CreateAccessKey(ctx, meta.AccessKey{ID: "AK", UserID: "alice"}); err != nil {
		t.Fatal(err)
	}
}

// TestReadersNeverDeadlock: with every reader connection held by a read
// transaction (listings), statements that are not yet prepared must not
// wait for a free connection. Regression test for a stall under load.
func TestReadersNeverDeadlock(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "meta.db"), Options{ReadConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	now := time.Now()
	if err := s.CreateUser(ctx, meta.User{ID: "u", Email: "u@x", CreatedAt: now}, meta.Bucket{Name: "b", OwnerID: "u", Visibility: meta.Private, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := s.PutObjects(ctx, []meta.Put{{Object: meta.Object{Bucket: "b", Key: fmt.Sprintf("d%d/k", i), Size: 0, ModTime: now}}}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 64)
	for i := range 64 {
		go func() {
			_, err := s.ListObjects(ctx, "b", meta.ListOptions{Delimiter: "/", Limit: 1 + i%7, Prefix: fmt.Sprintf("d%d", i%3)})
			if err == nil {
				_, _, err = s.ListUploads(ctx, "b", meta.ListUploadsOptions{Prefix: "x"})
			}
			done <- err
		}()
	}
	for range 64 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("readers deadlocked")
		}
	}
}

// TestObserve: Options.Observe sees every metadata operation with its
// name, whether it failed or not (the server's
// coffer_meta_op_duration_seconds).
func TestObserve(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	s := openAt(t, filepath.Join(t.TempDir(), "meta.db"), Options{Observe: func(op string, d time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		if d < 0 {
			t.Errorf("%s took %v", op, d)
		}
		seen[op]++
	}})
	if _, err := s.GetUser(context.Background(), "nobody"); err == nil {
		t.Fatal("GetUser of no one: no error")
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["get user"] != 1 {
		t.Fatalf("observed %v, want get user once", seen)
	}
	t.Logf("observed %v", seen)
}

package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/postgres"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// addAlice creates user alice (default bucket "alice") with quota.
func addAlice(t testing.TB, s meta.Accounts, quota int64) {
	t.Helper()
	u := meta.User{ID: "alice", Email: "alice@example.com", PasswordHash: "x", QuotaBytes: quota}
	if err := s.CreateUser(context.Background(), u, meta.Bucket{Name: "alice"}); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
}

func object(key string, size int64) meta.Object {
	return meta.Object{Bucket: "alice", Key: key, Size: size, ETag: "etag", BlobKey: fmt.Sprintf("blob/%x/%d", key, rand.Int64()), ModTime: time.Now()}
}

func TestMigrationsIdempotent(t *testing.T) {
	u := testbackend.SharedPostgres(t).CreateDatabase(t)
	s := open(t, u, postgres.Options{})
	addAlice(t, s, 0)
	if _, err := s.PutObjects(t.Context(), []meta.Put{{Object: object("k", 1)}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, u, postgres.Options{})
	if _, err := s.GetObject(t.Context(), "alice", "k"); err != nil {
		t.Fatalf("GetObject after reopening: %v", err)
	}
}

func TestConcurrentOpensOfAFreshDatabase(t *testing.T) {
	u := testbackend.SharedPostgres(t).CreateDatabase(t)
	var wg sync.WaitGroup
	stores := make([]*postgres.Store, 4)
	errs := make([]error, 4)
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = postgres.Open(t.Context(), u, postgres.Options{}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	addAlice(t, stores[0], 0)
	if _, err := stores[3].GetUser(t.Context(), "alice"); err != nil {
		t.Fatalf("GetUser through another store: %v", err)
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	u := testbackend.SharedPostgres(t).CreateDatabase(t)
	open(t, u, postgres.Options{}).Close()
	exec(t, u, "INSERT INTO schema_migrations (version, applied_at) VALUES (9999, 0)")
	s, err := postgres.Open(t.Context(), u, postgres.Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open of a database with a newer schema succeeded")
	}
	if errcode.Of(err) != errcode.Internal {
		t.Errorf("Open: %v (code %v), want Internal", err, errcode.Of(err))
	}
}

// wantUnavailable fails unless err is Unavailable with a Retry-After.
func wantUnavailable(t *testing.T, err error, what string) {
	t.Helper()
	e := errcode.As(err)
	if e == nil || e.Code != errcode.Unavailable {
		t.Fatalf("%s: err = %v (code %v), want Unavailable", what, err, errcode.Of(err))
	}
	if e.RetryAfter <= 0 {
		t.Errorf("%s: %v has no Retry-After", what, err)
	}
}

func TestPoolExhausted(t *testing.T) {
	db := testbackend.SharedPostgres(t).CreateDatabase(t)
	s := open(t, freshSchema(t, db), postgres.Options{MaxConns: 2, AcquireTimeout: 200 * time.Millisecond})
	addAlice(t, s, 0)
	var held []*pgxpool.Conn
	for range 2 {
		c, err := s.AcquireRaw(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	start := time.Now()
	_, err := s.GetUser(t.Context(), "alice")
	wantUnavailable(t, err, "GetUser with the pool exhausted")
	_, err = s.PutObjects(t.Context(), []meta.Put{{Object: object("k", 1)}})
	wantUnavailable(t, err, "PutObjects with the pool exhausted")
	if d := time.Since(start); d < 400*time.Millisecond || d > 2*time.Second {
		t.Errorf("two calls failed after %v, want about 2 × 200ms", d)
	}
	if st := s.Stats(); st.AcquiredConns != 2 || st.MaxConns != 2 || st.CanceledAcquireCount < 2 {
		t.Errorf("Stats = %+v, want 2 of 2 acquired and at least 2 canceled acquires", st)
	}
	// A caller's own cancellation stays a context error.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = s.GetUser(ctx, "alice")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GetUser with a short context: %v, want context.DeadlineExceeded", err)
	}
	for _, c := range held {
		c.Release()
	}
	if _, err := s.GetUser(t.Context(), "alice"); err != nil {
		t.Fatalf("GetUser once connections are free: %v", err)
	}
}

func TestStatementTimeoutAndCancel(t *testing.T) {
	db := testbackend.SharedPostgres(t).CreateDatabase(t)
	s := open(t, freshSchema(t, db), postgres.Options{StatementTimeout: 100 * time.Millisecond})
	err := s.ExecRaw(t.Context(), "SELECT pg_sleep(2)")
	if errcode.Of(err) != errcode.Unavailable {
		t.Errorf("a statement past statement_timeout: %v (code %v), want Unavailable", err, errcode.Of(err))
	}
	s2 := open(t, freshSchema(t, db), postgres.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s2.ExecRaw(ctx, "SELECT pg_sleep(5)")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a statement past the context's deadline: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the cancelled statement returned after %v", d)
	}
	if err := s2.Ping(t.Context()); err != nil {
		t.Errorf("Ping after a cancelled statement: %v", err)
	}
}

func TestServerRestart(t *testing.T) {
	pg := testbackend.StartPostgres(t)
	s := open(t, pg.CreateDatabase(t), postgres.Options{AcquireTimeout: time.Second})
	ctx := t.Context()
	addAlice(t, s, 0)

	pg.Stop()
	for name, call := range map[string]func() error{
		"Ping":    func() error { return s.Ping(ctx) },
		"GetUser": func() error { _, err := s.GetUser(ctx, "alice"); return err },
		"PutObjects": func() error {
			_, err := s.PutObjects(ctx, []meta.Put{{Object: object("k", 1)}})
			return err
		},
		"ListObjects": func() error { _, err := s.ListObjects(ctx, "alice", meta.ListOptions{}); return err },
	} {
		start := time.Now()
		err := call()
		wantUnavailable(t, err, name+" with the server down")
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s with the server down took %v", name, d)
		}
	}

	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.PutObjects(ctx, []meta.Put{{Object: object("k", 1)}})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PutObjects still failing after the restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for range 20 { // every pooled connection works again
		if _, err := s.GetObject(ctx, "alice", "k"); err != nil {
			t.Fatalf("GetObject after the restart: %v", err)
		}
	}
}

// TestTwoNodes runs concurrent writes through two stores on one database,
// as two Coffer nodes would.
func TestTwoNodes(t *testing.T) {
	u := freshSchema(t, testbackend.SharedPostgres(t).CreateDatabase(t))
	nodes := []*postgres.Store{open(t, u, postgres.Options{}), open(t, u, postgres.Options{})}
	ctx := t.Context()
	const quota = 150
	addAlice(t, nodes[0], quota)

	t.Run("PutObjects", func(t *testing.T) {
		var wg sync.WaitGroup
		var okPuts, overQuota atomic.Int64
		var mu sync.Mutex
		var written []string // blob keys of the puts that succeeded
		for i := range 50 {
			wg.Go(func() {
				o := object(fmt.Sprintf("k%d", i%10), int64(1+rand.IntN(40)))
				_, err := nodes[i%2].PutObjects(ctx, []meta.Put{{Object: o}})
				switch {
				case err == nil:
					okPuts.Add(1)
					mu.Lock()
					written = append(written, o.BlobKey)
					mu.Unlock()
				case errcode.Of(err) == errcode.QuotaExceeded:
					overQuota.Add(1)
				default:
					t.Errorf("PutObjects: %v", err)
				}
			})
		}
		wg.Wait()
		page, err := nodes[1].ListObjects(ctx, "alice", meta.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		live := map[string]bool{}
		for _, o := range page.Objects {
			sum += o.Size
			live[o.BlobKey] = true
		}
		usr, err := nodes[0].GetUser(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if usr.UsageBytes != sum || sum > quota {
			t.Errorf("usage = %d, objects hold %d bytes (quota %d)", usr.UsageBytes, sum, quota)
		}
		// Every replaced blob is queued exactly once; no live one is.
		gs, err := nodes[1].ListGarbage(ctx, time.Now().Add(time.Hour), 1000)
		if err != nil {
			t.Fatal(err)
		}
		queued := map[string]int{}
		for _, g := range gs {
			queued[g.BlobKey]++
		}
		for _, b := range written {
			if want := map[bool]int{true: 0, false: 1}[live[b]]; queued[b] != want {
				t.Errorf("blob %s queued %d times, want %d", b, queued[b], want)
			}
		}
		if len(gs) != len(written)-len(live) {
			t.Errorf("%d blobs queued, want %d", len(gs), len(written)-len(live))
		}
		t.Logf("%d puts succeeded, %d over quota; usage %d", okPuts.Load(), overQuota.Load(), sum)
	})

	t.Run("RotateRefreshToken", func(t *testing.T) {
		tok := meta.RefreshToken{Hash: "h0", UserID: "alice", Family: "f", ExpiresAt: time.Now().Add(time.Hour)}
		if err := nodes[0].CreateRefreshToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var wins, lost atomic.Int64
		for i := range 10 {
			wg.Go(func() {
				next := meta.RefreshToken{Hash: fmt.Sprintf("h%d", i+1), ExpiresAt: time.Now().Add(time.Hour)}
				_, err := nodes[i%2].RotateRefreshToken(ctx, "h0", next, time.Now())
				switch {
				case err == nil:
					wins.Add(1)
				case errcode.Of(err) == errcode.Unauthenticated:
					lost.Add(1)
				default:
					t.Errorf("RotateRefreshToken: %v", err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 || lost.Load() != 9 {
			t.Errorf("%d rotations won and %d lost, want 1 and 9", wins.Load(), lost.Load())
		}
	})
}

// TestRawByteKeys lists keys that PostgreSQL text could not hold or would
// order by collation: NUL bytes, invalid UTF-8, runs of 0xff.
func TestRawByteKeys(t *testing.T) {
	s := open(t, freshSchema(t, testbackend.SharedPostgres(t).CreateDatabase(t)), postgres.Options{})
	ctx := t.Context()
	addAlice(t, s, 0)
	keys := []string{"a", "a\x00b", "a\x00", "B", "\xff", "\xff\xff", "\xff\xffz", "\xff\xff\xff", "\xfe\xff", "é"}
	var puts []meta.Put
	for _, k := range keys {
		puts = append(puts, meta.Put{Object: object(k, 1)})
	}
	if _, err := s.PutObjects(ctx, puts); err != nil {
		t.Fatal(err)
	}
	list := func(opts meta.ListOptions) []string {
		t.Helper()
		p, err := s.ListObjects(ctx, "alice", opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range p.Objects {
			out = append(out, o.Key)
		}
		for _, cp := range p.CommonPrefixes {
			out = append(out, "p:"+cp)
		}
		return out
	}
	for _, tc := range []struct {
		opts meta.ListOptions
		want []string
	}{
		{meta.ListOptions{}, []string{"B", "a", "a\x00", "a\x00b", "é", "\xfe\xff", "\xff", "\xff\xff", "\xff\xffz", "\xff\xff\xff"}},
		{meta.ListOptions{Prefix: "\xff\xff"}, []string{"\xff\xff", "\xff\xffz", "\xff\xff\xff"}},
		{meta.ListOptions{Prefix: "a\x00"}, []string{"a\x00", "a\x00b"}},
		{meta.ListOptions{Delimiter: "\x00"}, []string{"B", "a", "é", "\xfe\xff", "\xff", "\xff\xff", "\xff\xffz", "\xff\xff\xff", "p:a\x00"}},
		{meta.ListOptions{StartAfter: "\xff\xff"}, []string{"\xff\xffz", "\xff\xff\xff"}},
	} {
		if got := list(tc.opts); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
			t.Errorf("ListObjects %#v = %q, want %q", tc.opts, got, tc.want)
		}
	}
	if _, err := s.GetObject(ctx, "alice", "a\x00b"); err != nil {
		t.Errorf("GetObject of a key with a NUL: %v", err)
	}
	// A text column cannot hold invalid UTF-8: InvalidArgument, not a 500.
	o := object("ct", 1)
	o.ContentType = "text/\xff"
	_, err := s.PutObjects(ctx, []meta.Put{{Object: o}})
	if errcode.Of(err) != errcode.InvalidArgument {
		t.Errorf("PutObjects with an invalid UTF-8 Content-Type: %v (code %v), want InvalidArgument", err, errcode.Of(err))
	}
	ref, err := s.ReferencedBlobs(ctx, []string{"\xff", "x\x00", puts[0].Object.BlobKey})
	if err != nil || len(ref) != 1 || !ref[puts[0].Object.BlobKey] {
		t.Errorf("ReferencedBlobs = %v, %v", ref, err)
	}
}

func BenchmarkPutObject(b *testing.B) {
	s := open(b, freshSchema(b, testbackend.SharedPostgres(b).CreateDatabase(b)), postgres.Options{})
	addAlice(b, s, 0)
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			o := object(fmt.Sprintf("k%d", n.Add(1)%1000), 10)
			if _, err := s.PutObjects(context.Background(), []meta.Put{{Object: o}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkGetObject(b *testing.B) {
	s := open(b, freshSchema(b, testbackend.SharedPostgres(b).CreateDatabase(b)), postgres.Options{})
	addAlice(b, s, 0)
	if _, err := s.PutObjects(context.Background(), []meta.Put{{Object: object("k", 10)}}); err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.GetObject(context.Background(), "alice", "k"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestMigrationIgnoresStatementTimeout: the statement timeout is for
// requests; a node starting while another holds the migration lock (or a
// migration slower than the timeout) waits, bounded by its context, and
// does not fail to start. The lock is held here for 3× the timeout.
func TestMigrationIgnoresStatementTimeout(t *testing.T) {
	db := testbackend.SharedPostgres(t).CreateDatabase(t)
	u := freshSchema(t, db)
	c, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	const migrationLock = 0x636f66666572 // migrate.go
	if _, err := c.Exec(t.Context(), "SELECT pg_advisory_lock($1)", int64(migrationLock)); err != nil {
		t.Fatal(err)
	}
	unlocked := make(chan struct{})
	go func() { // the connection is this goroutine's until it closes unlocked
		defer close(unlocked)
		time.Sleep(300 * time.Millisecond)
		_, _ = c.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", int64(migrationLock))
	}()
	defer func() { <-unlocked }() // before c.Close (deferred earlier, runs later)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, u, postgres.Options{StatementTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open while another node migrates, with a 100ms statement timeout: %v", err)
	}
	s.Close()
}

// TestBucketStatsBackfill: migration 0014 counts the objects a bucket
// already holds (the database is taken back to before 0014 with objects in
// it, then opened again).
func TestBucketStatsBackfill(t *testing.T) {
	u := testbackend.SharedPostgres(t).CreateDatabase(t)
	s := open(t, u, postgres.Options{})
	addAlice(t, s, 0)
	if _, err := s.PutObjects(t.Context(), []meta.Put{{Object: object("a", 3)}, {Object: object("b", 4)}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	c, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"DROP TRIGGER objects_count_insert ON objects", "DROP TRIGGER objects_count_delete ON objects",
		"DROP TRIGGER objects_count_update ON objects", "DROP FUNCTION objects_count()",
		"ALTER TABLE buckets DROP COLUMN object_count", "ALTER TABLE buckets DROP COLUMN byte_count",
		"ALTER TABLE shares DROP COLUMN is_grant", "DELETE FROM schema_migrations WHERE version = 14",
	} {
		if _, err := c.Exec(t.Context(), q); err != nil {
			c.Close(context.Background())
			t.Fatalf("%s: %v", q, err)
		}
	}
	c.Close(context.Background())
	s = open(t, u, postgres.Options{})
	b, err := s.GetBucket(t.Context(), "alice")
	if err != nil || b.Objects != 2 || b.Bytes != 7 {
		t.Errorf("bucket stats after 0014 = %d objects, %d bytes (%v); want 2, 7", b.Objects, b.Bytes, err)
	}
}

package postgres_test

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/postgres"
	"github.com/coffer-storage/coffer/internal/metacache"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// node is one process of a scale-out test: its store, metadata cache and
// a hook on its listener.
type node struct {
	s     *postgres.Store
	cache *metacache.Store
	m     meta.Stores
	// hold, when set, runs on the listener's goroutine before a change
	// is handled (it may block: the node then notices nothing).
	mu   sync.Mutex
	hold func(meta.Change)
}

// nodes opens n listening stores on db, each with a metadata cache whose
// bus has the lease, and waits until each listens.
func nodes(t *testing.T, db string, n int, lease time.Duration) []*node {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var out []*node
	for range n {
		nd := &node{s: open(t, db, postgres.Options{AcquireTimeout: time.Second})}
		bus := metacache.NewBus()
		bus.SetLease(lease)
		bus.SetCommitWithin(testCommitWithin)
		bus.SetListening(false)
		nd.cache = metacache.NewStore(nd.s.Stores(), bus, metacache.StoreOptions{
			Buckets: metacache.Options{TTL: time.Hour}, Objects: metacache.Options{TTL: time.Hour},
		})
		nd.m = nd.cache.Stores()
		h := bus.Handler(nil)
		changed := h.Changed
		h.Changed = func(c meta.Change) {
			nd.mu.Lock()
			hold := nd.hold
			nd.mu.Unlock()
			if hold != nil {
				hold(c)
			}
			changed(c)
		}
		wg.Go(func() { nd.s.ListenChanges(ctx, h) })
		eventually(t, "listening", bus.Listening)
		out = append(out, nd)
	}
	return out
}

// get returns the BlobKey of bob/k on nd ("" when there is none).
func (nd *node) get(t *testing.T) string {
	t.Helper()
	o, err := nd.m.Objects.GetObject(t.Context(), "bob", "k")
	if errcode.Is(err, errcode.NotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return o.BlobKey
}

func (nd *node) put(t *testing.T, v string) {
	t.Helper()
	if _, err := nd.m.Objects.PutObjects(t.Context(), []meta.Put{{Object: meta.Object{Bucket: "bob", Key: "k", BlobKey: v, ModTime: time.Now()}}}); err != nil {
		t.Fatal(err)
	}
}

// cachedOn waits until nd serves v from its cache (a node keeps nothing
// for a while after it listened).
func (nd *node) cachedOn(t *testing.T, v string) {
	t.Helper()
	eventually(t, "serving "+v+" from the cache", func() bool {
		nd.get(t)
		hits := nd.cache.Objects().Stats().Hits
		return nd.get(t) == v && nd.cache.Objects().Stats().Hits == hits+1
	})
}

// TestNoReadInversionDuringInvalidation: node A deletes bob/k, which node
// C has cached. The delete commits; C is slow to handle its notification
// (held by a hook). Meanwhile B reads bob/k and gets "not found", and then
// C is asked: it must not serve the deleted record, or the history is not
// linearizable (a read that began after another read returned the
// deletion saw the object). Before the entries went into flux before the
// commit, C served v1 from its cache until the notification reached it.
func TestNoReadInversionDuringInvalidation(t *testing.T) {
	db := testbackend.SharedPostgres(t).CreateDatabase(t)
	ns := nodes(t, db, 3, metacache.DefaultLease)
	a, b, c := ns[0], ns[1], ns[2]
	ctx := t.Context()
	if err := a.m.Accounts.CreateUser(ctx, meta.User{ID: "bob", Email: "bob@example.com", PasswordHash: "x"}, meta.Bucket{Name: "bob", OwnerID: "bob"}); err != nil {
		t.Fatal(err)
	}
	a.put(t, "v1")
	c.cachedOn(t, "v1")
	b.cachedOn(t, "v1")

	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	want := meta.Change{Topic: meta.TopicObject, Key: meta.ObjectChangeKey("bob", "k")}
	c.mu.Lock()
	c.hold = func(got meta.Change) {
		if got == want {
			c.mu.Lock()
			c.hold = nil
			c.mu.Unlock()
			close(held)
			<-release
		}
	}
	c.mu.Unlock()
	deleted := make(chan error, 1)
	go func() {
		_, err := a.m.Objects.DeleteObject(ctx, "bob", "k", meta.Cond{})
		deleted <- err
	}()
	// The delete may return before C receives its notification (a write
	// in flux does not wait after its commit) or after (it used to).
	select {
	case <-held: // the delete committed; C has not handled it
	case <-time.After(30 * time.Second):
		t.Fatal("C never received the delete's notification")
	}
	if got := b.get(t); got != "" {
		t.Fatalf("B read %q after the delete committed", got)
	}
	if got := c.get(t); got != "" {
		t.Errorf("C served %q after B's read had returned the deletion", got)
	}
	once.Do(func() { close(release) })
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
}

// TestTerminatedListenerStillWaitedFor: node C's listening connection is
// terminated on the server (pg_terminate_backend: a cut, or a reconnect)
// while C is held from noticing (a hook blocks its listener), so C still
// trusts its cache within its lease. A's write of a key C has cached must
// not be answered before C handled it or C's lease ran out: C then serves
// the new value. PostgreSQL no longer lists C's listener, so a writer
// that counted only the listeners pg_stat_activity shows answered at
// once, and C served the old value (TestMetaCacheAcrossNodes in
// test/scaleout saw it in CI).
func TestTerminatedListenerStillWaitedFor(t *testing.T) {
	db := testbackend.SharedPostgres(t).CreateDatabase(t)
	// A lease long enough that C's stays valid while the test acts.
	ns := nodes(t, db, 2, 2*time.Second)
	a, c := ns[0], ns[1]
	ctx := t.Context()
	if err := a.m.Accounts.CreateUser(ctx, meta.User{ID: "bob", Email: "bob@example.com", PasswordHash: "x"}, meta.Bucket{Name: "bob", OwnerID: "bob"}); err != nil {
		t.Fatal(err)
	}
	a.put(t, "v1")
	c.cachedOn(t, "v1")

	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	hold := meta.Change{Topic: "test", Key: "hold"}
	c.mu.Lock()
	c.hold = func(got meta.Change) {
		if got == hold {
			close(held)
			<-release
		}
	}
	c.mu.Unlock()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SELECT pg_notify($1, $2)", postgres.ChangesChannel, hold.Topic+":"+hold.Key); err != nil {
		t.Fatal(err)
	}
	<-held
	var ended bool
	if err := conn.QueryRow(ctx, "SELECT pg_terminate_backend($1)", int64(c.s.ListenerPID())).Scan(&ended); err != nil || !ended {
		t.Fatalf("terminating C's listener: %v %v", ended, err)
	}
	eventually(t, "C's listener gone from the server", func() bool {
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", int64(c.s.ListenerPID())).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	a.put(t, "v2")
	if got := c.get(t); got != "v2" {
		t.Errorf("when A's write returned, C served %q, want v2", got)
	}
	once.Do(func() { close(release) })
}

// TestCutWriterFreesItsLocks: node A is cut off from PostgreSQL (a proxy
// stops forwarding, closing nothing) in the middle of a transaction that
// locked a user's row, as a write does for the quota. Node B's write of
// the same row must go through once the server gave A's transaction up,
// within B's statement timeout (30 s): before, the server kept A's
// transaction for idle_in_transaction_session_timeout = 60 s (and, its
// TCP keepalives off, the connection for hours), and B's write failed.
func TestCutWriterFreesItsLocks(t *testing.T) {
	db := testbackend.SharedPostgres(t).CreateDatabase(t)
	proxy := newFreezeProxy(t, db)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = proxy.ln.Addr().String()
	a, b := open(t, u.String(), postgres.Options{}), open(t, db, postgres.Options{})
	ctx := t.Context()
	if err := b.CreateUser(ctx, meta.User{ID: "bob", Email: "bob@example.com", PasswordHash: "x"}, meta.Bucket{Name: "bob", OwnerID: "bob"}); err != nil {
		t.Fatal(err)
	}
	c, err := a.AcquireRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if _, err := c.Exec(ctx, "BEGIN; SELECT 1 FROM users WHERE id = 'bob' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	proxy.freeze()
	yes := true
	if _, err := b.UpdateUser(ctx, "bob", meta.UserUpdate{Disabled: &yes}); err != nil {
		t.Fatalf("B's write while A's cut transaction held the row: %v", err)
	}
}

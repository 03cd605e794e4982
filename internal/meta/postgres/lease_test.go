package postgres_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/postgres"
	"github.com/coffer-storage/coffer/internal/metacache"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// TestSilentListenerCut: node C's listening connection is cut silently (a
// proxy stops forwarding without closing anything, as a partition or a
// paused peer would; the server keeps C's connection and counts it).
// C has cached a record, and node A overwrites it. When A's write
// returns, C serves the new record at once: no heartbeat came back to C
// since the cut, so its lease ran out and it reads through, and A waited
// for C (the bus's SyncBound) since C never acknowledged. Before, C
// trusted its cache for the TTL (an hour here, 10 s by default) and
// served the old record, and A waited 250 ms. Once the cut heals, C
// listens and caches again, and its old connection is gone from the
// server.
func TestSilentListenerCut(t *testing.T) {
	db := testbackend.SharedPostgres(t).CreateDatabase(t)
	proxy := newFreezeProxy(t, db)
	a, c := open(t, db, postgres.Options{}), open(t, db, postgres.Options{AcquireTimeout: time.Second})
	c.SetListenDial(proxy.dial)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	caches := map[*postgres.Store]*metacache.Store{}
	for _, s := range []*postgres.Store{a, c} {
		bus := metacache.NewBus()
		bus.SetCommitWithin(testCommitWithin)
		bus.SetListening(false)
		caches[s] = metacache.NewStore(s.Stores(), bus, metacache.StoreOptions{
			Buckets: metacache.Options{TTL: time.Hour}, Objects: metacache.Options{TTL: time.Hour},
		})
		wg.Go(func() { s.ListenChanges(ctx, bus.Handler(nil)) })
		eventually(t, "listening", bus.Listening)
	}
	if proxy.accepted.Load() == 0 {
		t.Fatal("C's listening connection did not go through the proxy")
	}
	ma, mc, cacheC := caches[a].Stores(), caches[c].Stores(), caches[c].Objects()
	if err := ma.Accounts.CreateUser(ctx, meta.User{ID: "bob", Email: "bob@example.com", PasswordHash: "x"}, meta.Bucket{Name: "bob", OwnerID: "bob"}); err != nil {
		t.Fatal(err)
	}
	put := func(v string) {
		t.Helper()
		if _, err := ma.Objects.PutObjects(ctx, []meta.Put{{Object: meta.Object{Bucket: "bob", Key: "k", BlobKey: v, ModTime: time.Now()}}}); err != nil {
			t.Fatal(err)
		}
	}
	get := func() string {
		t.Helper()
		o, err := mc.Objects.GetObject(ctx, "bob", "k")
		if err != nil {
			t.Fatal(err)
		}
		return o.BlobKey
	}
	put("v1")
	// C keeps nothing for the bus's FluxBound after it listened.
	eventually(t, "C serving v1 from its cache before the cut", func() bool {
		get()
		hits := cacheC.Stats().Hits
		return get() == "v1" && cacheC.Stats().Hits == hits+1
	})

	proxy.freeze()
	put("v2")
	if got := get(); got != "v2" {
		t.Errorf("when A's write returned, C served %q, want v2", got)
	}
	if hits := cacheC.Stats().Hits; get() != "v2" || cacheC.Stats().Hits != hits {
		t.Error("C served from its cache while its listening connection was cut")
	}

	proxy.thaw()
	listeners := func() bool {
		var n int64
		conn, err := pgx.Connect(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
			postgres.ListenerApplicationName).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 2
	}
	eventually(t, "C caching again", func() bool {
		hits := cacheC.Stats().Hits
		get()
		return get() == "v2" && cacheC.Stats().Hits > hits
	})
	eventually(t, "C's cut connection dropped on the server", listeners)
}

// TestAccountChangeWhileNotListening: node A's own listening connection
// is down (here: it never listens), so it cannot collect the other nodes'
// acknowledgements, when it disables a user; node C listens but is held
// while it handles that change. When A's Disable returns, C has either
// handled it or stopped trusting its caches (its lease ran out, since the
// held listener processes no heartbeat either): A waited the whole bound.
// Before, an account change from a node that did not listen did not wait
// at all, and C's caches still held the user enabled.
func TestAccountChangeWhileNotListening(t *testing.T) {
	db := testbackend.SharedPostgres(t).CreateDatabase(t)
	a, c := open(t, db, postgres.Options{}), open(t, db, postgres.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }); cancel(); wg.Wait() })
	busA, busC := metacache.NewBus(), metacache.NewBus()
	busA.SetListening(false)
	busC.SetListening(false)
	var handled atomic.Bool
	h := busC.Handler(nil)
	changed := h.Changed
	h.Changed = func(ch meta.Change) {
		if ch == (meta.Change{Topic: meta.TopicUser, Key: "alice"}) {
			<-release
			handled.Store(true)
		}
		changed(ch)
	}
	wg.Go(func() { c.ListenChanges(ctx, h) })
	eventually(t, "C listening", busC.Listening)
	if err := a.CreateUser(ctx, meta.User{ID: "alice", Email: "alice@example.com", PasswordHash: "x"}, meta.Bucket{Name: "alice", OwnerID: "alice"}); err != nil {
		t.Fatal(err)
	}
	svc := auth.NewService(auth.StoresOf(a.Stores()), nil, auth.Config{Bus: busA, Params: auth.Params{Memory: 8 * 1024, Time: 1}})
	if _, err := svc.Users.Disable(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if !handled.Load() && busC.Listening() {
		t.Error("A's Disable returned while C had not handled it and still trusted its caches")
	}
}

// testCommitWithin is the CommitWithin of the tests' buses: a bus keeps
// nothing for about that and a lease after its listener connected.
const testCommitWithin = 500 * time.Millisecond

// eventually waits (at most 30 s) until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within 30s", what)
		}
	}
}

// freezeProxy forwards TCP connections to a PostgreSQL server until it is
// frozen: then it drops whatever either side sends, and closes nothing
// (not even when one side closes), as a partition or a paused peer would.
// New connections made while it is frozen hang the same way.
type freezeProxy struct {
	target   string
	ln       net.Listener
	frozen   atomic.Bool
	accepted atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
}

func newFreezeProxy(t *testing.T, dbURL string) *freezeProxy {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{target: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), ln: ln}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	go p.serve()
	return p
}

func (p *freezeProxy) freeze() { p.frozen.Store(true) }
func (p *freezeProxy) thaw()   { p.frozen.Store(false) }

// dial is a pgconn.DialFunc reaching the server through the proxy.
func (p *freezeProxy) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", p.ln.Addr().String())
}

func (p *freezeProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		go p.pipe(server, client)
		go p.pipe(client, server)
	}
}

func (p *freezeProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil && !p.frozen.Load() {
				src.Close()
				return
			}
		}
		if err != nil {
			if !p.frozen.Load() || errors.Is(err, net.ErrClosed) {
				dst.Close()
			}
			return
		}
	}
}

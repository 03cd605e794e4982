package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta"
)

var _ meta.ChangeListener = (*Store)(nil)

// ChangesChannel is the channel every change is announced on (NOTIFY),
// with the payload Topic + ":" + Key.
const ChangesChannel = "coffer_changes"

// BarrierTopic is the topic of the barriers ExpectChange announces on
// ChangesChannel (the key a random nonce): no change, a point in the
// order of commits that every listener acknowledges.
const BarrierTopic = "sync"

// AcksChannel is the channel on which each listener acknowledges that it
// handled a barrier (and so every change committed before it), with the
// payload ListenerID + " " + the barrier's payload.
const AcksChannel = "coffer_change_acks"

// FluxTopic and FluxOverTopic are the topics of BeginFlux's
// announcements on ChangesChannel: FluxTopic + ":" + id + " " + the
// change's payload, one per change, then a barrier (BarrierTopic + ":" +
// id); FluxOverTopic + ":" + id once the write is done.
const (
	FluxTopic     = "flux"
	FluxOverTopic = "fluxover"
)

// BeatsChannel is the channel of every listener's heartbeats, with the
// payload ListenerID + " " + a sequence number: each listener learns
// from it which others were alive lately, and a barrier waits for the
// acknowledgement of every listener seen within the lease, not only of
// those PostgreSQL still lists (a connection just terminated is no longer
// listed, but its node may not have noticed yet and still trusts its
// caches).
const BeatsChannel = "coffer_beats"

// ListenerApplicationName is the application_name of the connection that
// listens for changes, set once it listens (until then it is this name
// + "-starting"): ExpectChange counts these connections to know how
// many acknowledgements to wait for (and tests terminate them to simulate
// a network cut).
const ListenerApplicationName = "coffer-listen"

// listenerStartingName is the listening connection's application_name
// until its LISTEN is in force: a connection named ListenerApplicationName
// receives every announcement committed from then on (see BeginFlux).
const listenerStartingName = "coffer-listen-starting"

// acks tracks this store's listening state and the barriers it waits for.
type acks struct {
	id        string // this listener's identity in acknowledgements
	listening atomic.Bool
	pid       atomic.Uint32 // the server process of the listening connection
	// trust is how long after a heartbeat was received its listener may
	// still trust its caches (the lease and a margin; 0: unknown).
	trust   atomic.Int64
	mu      sync.Mutex
	waiters map[string]*ackWaiter // by barrier payload
	seen    map[string]time.Time  // each listener's last heartbeat received
}

type ackWaiter struct {
	from map[string]bool // listeners that acknowledged
	want int             // how many must at least (0: not known yet)
	done chan struct{}
}

// check closes w.done once w has all it needs (mu held): want
// acknowledgements, this listener's own among them (so every heartbeat
// committed before the barrier has been received here), and the
// acknowledgement of every listener whose heartbeat was received within
// the trust interval (it may still trust its caches).
func (a *acks) check(w *ackWaiter) {
	if w.want == 0 || len(w.from) < w.want || !w.from[a.id] {
		return
	}
	now, trust := time.Now(), time.Duration(a.trust.Load())
	for id, at := range a.seen {
		if now.Sub(at) >= trust {
			delete(a.seen, id)
		} else if !w.from[id] {
			return
		}
	}
	select {
	case <-w.done:
	default:
		close(w.done)
	}
}

// notify queues the announcement of a change in the transaction: it is
// delivered to listeners when the transaction commits, and never if it
// does not. PostgreSQL folds identical announcements of one transaction.
// A transaction that fails only in a client-side check of a result is
// committed all the same (its COMMIT went in the same batch): announce
// only what certainly changed, or use notifyQuery.
func (t *txn) notify(topic, key string) {
	t.exec("SELECT pg_notify($1, $2)", ChangesChannel, topic+":"+key)
}

// notifySQL is the SQL expression announcing topic:key (key an SQL
// expression), for statements that announce what they changed.
func notifySQL(topic, key string) string {
	return "pg_notify('" + ChangesChannel + "', '" + topic + ":' || " + key + ")"
}

// parseChange splits a notification payload; ok is false for a payload
// that is not Topic + ":" + Key with a non-empty topic.
func parseChange(payload string) (meta.Change, bool) {
	topic, key, ok := strings.Cut(payload, ":")
	if !ok || topic == "" {
		return meta.Change{}, false
	}
	return meta.Change{Topic: topic, Key: key}, true
}

// ListenChanges implements meta.ChangeListener on a dedicated connection
// (outside the pool, application_name coffer-listen) that LISTENs on
// ChangesChannel. After the LISTEN succeeds, first at the start and then
// after every reconnection, it calls h.Reset then h.Listening(true):
// announcements made while no connection listened are lost, so caches
// must drop what they hold. When the connection fails it calls
// h.Listening(false) then h.Reset at once, before reconnecting.
// Failed connections are retried with a back-off from 50 ms to 2 s.
func (s *Store) ListenChanges(ctx context.Context, h meta.ChangeHandler) error {
	backoff := 50 * time.Millisecond
	for {
		err := s.listenOnce(ctx, h, func() { backoff = 50 * time.Millisecond })
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if h.Error != nil && err != nil {
			h.Error(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// listenOnce opens a listening connection and delivers its notifications
// until it fails or ctx is done.
//
// Every h.AliveEvery (listenPingEvery when 0) it sends a heartbeat on the
// listening connection itself: a notification on this listener's own
// channel, which comes back on the same connection after every
// notification committed before it. When it is back, every change
// committed before the heartbeat was sent has been handled, and h.Alive
// says so with the time it was sent. A heartbeat not back within
// beatLost fails the connection (it is reopened).
func (s *Store) listenOnce(ctx context.Context, h meta.ChangeHandler, listening func()) error {
	cfg := s.connConfig.Copy()
	cfg.RuntimeParams["application_name"] = listenerStartingName
	// The server drops a listener it can no longer reach within seconds,
	// not the hours of the system's TCP defaults: until it does, writers
	// count it and wait their whole bound for its acknowledgements.
	cfg.RuntimeParams["tcp_keepalives_idle"] = "5"
	cfg.RuntimeParams["tcp_keepalives_interval"] = "1"
	cfg.RuntimeParams["tcp_keepalives_count"] = "5"
	cfg.RuntimeParams["tcp_user_timeout"] = "10000"
	// A heartbeat needs no durability: its commit need not wait for a
	// WAL flush.
	cfg.RuntimeParams["synchronous_commit"] = "off"
	cfg.DialFunc = s.listenDial
	if cfg.DialFunc == nil {
		d := &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: time.Second, Count: 5}}
		cfg.DialFunc = d.DialContext
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.AcquireTimeout)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	every := h.AliveEvery
	if every <= 0 {
		every = listenPingEvery
	}
	lost := max(6*every, beatLostMin)
	// The lease a handler derives from every (metacache: every = L/3),
	// and a quarter of it for two clocks' rates.
	s.acks.trust.Store(int64(15 * every / 4))
	start := time.Now()
	if _, err := conn.Exec(ctx, "LISTEN "+ChangesChannel+"; LISTEN "+AcksChannel+"; LISTEN "+BeatsChannel); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "SELECT set_config('application_name', $1, false)", ListenerApplicationName); err != nil {
		return err
	}
	listening()
	s.dropPreviousListener(ctx, conn.PgConn().PID())
	if h.Reset != nil {
		h.Reset()
	}
	if h.Alive != nil {
		// The caches were flushed after the LISTEN: nothing in them
		// predates a change committed since start.
		h.Alive(start)
	}
	if h.Listening != nil {
		h.Listening(true)
	}
	s.acks.listening.Store(true)
	defer func() {
		// Announcements may be lost from now on until the next LISTEN:
		// caches stop keeping what they load, and drop what they hold.
		s.acks.listening.Store(false)
		if h.Listening != nil {
			h.Listening(false)
		}
		if h.Reset != nil {
			h.Reset()
		}
	}()
	var (
		beat      string    // the heartbeat on its way back ("": none)
		beatStart time.Time // when it was sent
		beats     uint64
		next      = time.Now() // the first at once: it ends the Reset's hold
	)
	for {
		wctx, cancel := context.WithDeadline(ctx, next)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil || wctx.Err() == nil || conn.IsClosed() {
				return err
			}
			// Time for a heartbeat. A connection cut without a reset (a
			// partition, a paused peer) shows no error: only a heartbeat
			// that does not come back tells.
			if beat != "" {
				if time.Since(beatStart) > lost {
					return fmt.Errorf("listening connection: no heartbeat back within %v", lost)
				}
			} else {
				beats++
				beat, beatStart = strconv.FormatUint(beats, 10), time.Now()
				ectx, cancel := context.WithTimeout(ctx, lost)
				_, err := conn.Exec(ectx, "SELECT pg_notify($1, $2)", BeatsChannel, s.acks.id+" "+beat)
				cancel()
				if err != nil {
					return err
				}
			}
			next = time.Now().Add(every)
			continue
		}
		switch n.Channel {
		case BeatsChannel:
			from, seq, _ := strings.Cut(n.Payload, " ")
			switch {
			case from != s.acks.id:
				s.acks.mu.Lock()
				if s.acks.seen == nil {
					s.acks.seen = map[string]time.Time{}
				}
				s.acks.seen[from] = time.Now()
				s.acks.mu.Unlock()
			case seq == beat:
				beat = ""
				if h.Alive != nil {
					h.Alive(beatStart)
				}
			}
		case ChangesChannel:
			c, ok := parseChange(n.Payload)
			switch {
			case !ok:
			case c.Topic == BarrierTopic:
				// Every change committed before the barrier was
				// handled above (ExpectChange, BeginFlux).
				s.ack(ctx, n.Payload)
			case c.Topic == FluxTopic:
				id, payload, _ := strings.Cut(c.Key, " ")
				if fc, ok := parseChange(payload); ok && h.Flux != nil {
					h.Flux(id, []meta.Change{fc})
				}
			case c.Topic == FluxOverTopic:
				if h.FluxOver != nil {
					h.FluxOver(c.Key)
				}
			case h.Changed != nil:
				h.Changed(c)
			}
		case AcksChannel:
			if from, payload, ok := strings.Cut(n.Payload, " "); ok {
				s.acked(from, payload)
			}
		}
	}
}

// dropPreviousListener ends this store's previous listening connection
// on the server (pid, best effort), once a new one listens: a connection
// cut silently lives on there until the server's keepalives give up, and
// writers would count it and wait for it.
func (s *Store) dropPreviousListener(ctx context.Context, pid uint32) {
	prev := s.acks.pid.Swap(pid)
	if prev == 0 || prev == pid {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, s.opts.AcquireTimeout)
	defer cancel()
	_ = s.read(dctx, "drop previous listener", func(c *pgx.Conn) error {
		_, err := c.Exec(dctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND application_name = $2 AND datname = current_database()",
			int64(prev), ListenerApplicationName)
		return err
	})
}

// ack tells the process that announced a barrier that this one handled
// every change committed before it (on a pool connection: the listening
// one is busy waiting). Best effort.
func (s *Store) ack(ctx context.Context, payload string) {
	actx, cancel := context.WithTimeout(ctx, s.opts.AcquireTimeout)
	defer cancel()
	_ = s.read(actx, "acknowledge change", func(c *pgx.Conn) error {
		_, err := c.Exec(actx, "SELECT pg_notify($1, $2) FROM "+asyncCommit, AcksChannel, s.acks.id+" "+payload)
		return err
	})
}

// acked records listener from's acknowledgement of payload.
func (s *Store) acked(from, payload string) {
	s.acks.mu.Lock()
	defer s.acks.mu.Unlock()
	if w := s.acks.waiters[payload]; w != nil {
		w.from[from] = true
		s.acks.check(w)
	}
}

// ExpectChange implements meta.ChangeListener with a barrier. An
// acknowledgement of the change itself (its payload Topic:Key) cannot
// tell two writes of one entry apart: when two nodes change it at
// overlapping times, a listener's acknowledgement of the one change would
// count as its acknowledgement of the other, which it may not have
// handled yet. So wait, after the write committed, announces a barrier of
// its own (BarrierTopic + ":" + a random nonce) on ChangesChannel, and
// waits for every listener's acknowledgement of that nonce: PostgreSQL
// delivers the notifications of different transactions to each listener
// in the order the transactions committed, and a listener handles them
// one at a time in that order, so a listener that acknowledges the
// barrier has handled every change committed before it, the write's
// included. The same statement counts the listening connections
// (pg_stat_activity, application_name coffer-listen, this database) to
// know how many acknowledgements to expect. Only barriers are
// acknowledged: one round trip per listener and write, however many
// changes it made.
func (s *Store) ExpectChange(cs ...meta.Change) (wait func(ctx context.Context, max time.Duration), cancel func()) {
	if !s.acks.listening.Load() || len(cs) == 0 {
		return func(context.Context, time.Duration) {}, func() {}
	}
	return s.barrier, func() {}
}

// barrier announces a barrier and waits (at most max) until every
// listening connection acknowledged it (see ExpectChange).
func (s *Store) barrier(ctx context.Context, max time.Duration) {
	_, _, _ = s.announce(ctx, newListenerID(), nil, max)
}

// BeginFlux implements meta.ChangeListener. In one statement (one
// transaction), it announces FluxTopic + ":" + id + " " + payload for
// each change, then the barrier BarrierTopic + ":" + id, lists the
// listening connections and reads the server's clock (at); then it waits
// until the barrier is acknowledged as ExpectChange's (and by every
// listener whose heartbeat this one received within the lease, see
// BeatsChannel), or max passed after the statement returned. A store not
// listening itself announces all the same and waits the whole max: it
// cannot collect the acknowledgements.
//
// The write's transaction (wctx) checks on the server, in the statement
// before its COMMIT, that its clock is before at + within and that every
// connection named ListenerApplicationName was listed at the
// announcement: a listener named so has its LISTEN in force, so one that
// is not listed may have missed the announcement (it started listening
// since). Either fails the write (Unavailable, retryable) instead.
func (s *Store) BeginFlux(ctx context.Context, cs []meta.Change, max, within time.Duration) (wctx context.Context, over func(), err error) {
	if len(cs) == 0 {
		return ctx, func() {}, nil
	}
	id := newListenerID()
	payloads := make([]string, 0, len(cs))
	for _, c := range cs {
		payloads = append(payloads, FluxTopic+":"+id+" "+c.Topic+":"+c.Key)
	}
	at, pids, err := s.announce(ctx, id, payloads, max)
	over = func() {
		// After the write's commit, so delivered after its announcements;
		// before the write answers (one statement, no flush, no wait for
		// acknowledgements), so that the client's next read finds the
		// entry cacheable again on most nodes.
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.AcquireTimeout)
		defer cancel()
		_ = s.read(octx, "end flux", func(c *pgx.Conn) error {
			_, err := c.Exec(octx, "SELECT pg_notify($1, $2) FROM "+asyncCommit, ChangesChannel, FluxOverTopic+":"+id)
			return err
		})
	}
	if err != nil {
		return ctx, over, classify(ctx, err, "announce the change to the other nodes")
	}
	return context.WithValue(ctx, fenceKey{}, fence{by: at.Add(within), pids: pids}), over, nil
}

// fence is what a write in flux checks before its COMMIT (BeginFlux).
type fence struct {
	by   time.Time
	pids []int32
}

type fenceKey struct{}

// fenceSQL fails (division by zero, 22012) when the write may not commit.
const fenceSQL = "SELECT 1 / ((clock_timestamp() < $1) AND NOT EXISTS (SELECT 1 FROM pg_stat_activity" +
	" WHERE application_name = $2 AND datname = current_database() AND pid <> ALL($3::int4[])))::int"

// announce announces payloads then the barrier of id on ChangesChannel
// in one transaction, and waits until the barrier is acknowledged by
// every listener that must, at most max after the announcement returned
// (the whole max when this store is not listening). It returns the
// server's clock at the announcement (zero if it failed).
func (s *Store) announce(ctx context.Context, id string, payloads []string, bound time.Duration) (time.Time, []int32, error) {
	payload := BarrierTopic + ":" + id
	w := &ackWaiter{from: map[string]bool{}, done: make(chan struct{})}
	s.acks.mu.Lock()
	if s.acks.waiters == nil {
		s.acks.waiters = map[string]*ackWaiter{}
	}
	s.acks.waiters[payload] = w
	s.acks.mu.Unlock()
	defer func() {
		s.acks.mu.Lock()
		defer s.acks.mu.Unlock()
		delete(s.acks.waiters, payload)
	}()
	listening := s.acks.listening.Load()
	// The notifications in FROM run once each, in the array's order,
	// whatever the count; they are delivered when the statement's
	// transaction commits, which need not wait for a WAL flush
	// (asyncCommit).
	var (
		pids []int32
		at   time.Time
	)
	err := s.read(ctx, "announce barrier", func(c *pgx.Conn) error {
		return c.QueryRow(ctx,
			"SELECT ARRAY(SELECT pid FROM pg_stat_activity WHERE application_name = $3 AND datname = current_database()), clock_timestamp()"+
				" FROM (SELECT count(pg_notify($1, p)) FROM unnest($2::text[]) WITH ORDINALITY AS u(p, i)) AS x, "+asyncCommit,
			ChangesChannel, append(payloads, payload), ListenerApplicationName).Scan(&pids, &at)
	})
	n := len(pids)
	if err != nil || (n == 0 && listening) || ctx.Err() != nil {
		return at, pids, err
	}
	ctx, stop := context.WithTimeout(ctx, bound)
	defer stop()
	if listening {
		s.acks.mu.Lock()
		w.want = max(n, 1)
		s.acks.check(w)
		s.acks.mu.Unlock()
	}
	select {
	case <-w.done:
	case <-ctx.Done():
	}
	return at, pids, nil
}

// asyncCommit, in the FROM list of a statement run on its own, makes its
// transaction commit without waiting for the WAL flush: for barriers,
// acknowledgements and heartbeats, which need no durability (the
// notification is delivered at the commit all the same).
const asyncCommit = "set_config('synchronous_commit', 'off', true)"

// listenPingEvery is how often the listening connection sends a
// heartbeat when the handler asks for none (no Alive).
const listenPingEvery = 30 * time.Second

// beatLostMin is the least time a heartbeat may take to come back before
// the listening connection is given up (6 × the heartbeat interval when
// that is longer): the lease (meta.ChangeHandler.Alive) protects the
// caches meanwhile, so this only needs to tell a dead connection from a
// slow server without reopening (and flushing) needlessly.
const beatLostMin = 2 * time.Second

// newListenerID returns a random identity for this store's listener.
func newListenerID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

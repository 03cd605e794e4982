package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var _ meta.ChangeListener = (*Store)(nil)

// ChangesChannel is the channel every change is announced on (NOTIFY),
// with the payload Topic + ":" + Key.
const ChangesChannel = "coffer_changes"

// AcksChannel is the channel on which each listener acknowledges that it
// handled a change, with the payload ListenerID + " " + the change's
// payload.
const AcksChannel = "coffer_change_acks"

// ListenerApplicationName is the application_name of the connection that
// listens for changes: ExpectChange counts these connections to know how
// many acknowledgements to wait for (and tests terminate them to simulate
// a network cut).
const ListenerApplicationName = "coffer-listen"

// acks tracks this store's listening state and the changes it waits for.
type acks struct {
	id        string // this listener's identity in acknowledgements
	listening atomic.Bool
	mu        sync.Mutex
	waiters   map[string][]*ackWaiter // by change payload
}

type ackWaiter struct {
	from map[string]bool // listeners that acknowledged
	want int             // how many must (0: not known yet)
	done chan struct{}
}

func (w *ackWaiter) check() {
	if w.want > 0 && len(w.from) >= w.want {
		select {
		case <-w.done:
		default:
			close(w.done)
		}
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
func (s *Store) listenOnce(ctx context.Context, h meta.ChangeHandler, listening func()) error {
	cfg := s.connConfig.Copy()
	cfg.RuntimeParams["application_name"] = ListenerApplicationName
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
	if _, err := conn.Exec(ctx, "LISTEN "+ChangesChannel+"; LISTEN "+AcksChannel); err != nil {
		return err
	}
	listening()
	if h.Reset != nil {
		h.Reset()
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
	for {
		// Wake up now and then to ping: a connection cut without a reset
		// (a dead peer, a dropped route) would otherwise wait forever.
		wctx, cancel := context.WithTimeout(ctx, listenPingEvery)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil || wctx.Err() == nil || conn.IsClosed() {
				return err
			}
			pctx, cancel := context.WithTimeout(ctx, s.opts.AcquireTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		switch n.Channel {
		case ChangesChannel:
			if c, ok := parseChange(n.Payload); ok && h.Changed != nil {
				h.Changed(c)
			}
			s.ack(ctx, n.Payload)
		case AcksChannel:
			if from, payload, ok := strings.Cut(n.Payload, " "); ok {
				s.acked(from, payload)
			}
		}
	}
}

// ack tells the process that made a change that this one handled it (on a
// pool connection: the listening one is busy waiting). Best effort.
func (s *Store) ack(ctx context.Context, payload string) {
	actx, cancel := context.WithTimeout(ctx, s.opts.AcquireTimeout)
	defer cancel()
	_ = s.read(actx, "acknowledge change", func(c *pgx.Conn) error {
		_, err := c.Exec(actx, "SELECT pg_notify($1, $2)", AcksChannel, s.acks.id+" "+payload)
		return err
	})
}

// acked records listener from's acknowledgement of payload.
func (s *Store) acked(from, payload string) {
	s.acks.mu.Lock()
	defer s.acks.mu.Unlock()
	for _, w := range s.acks.waiters[payload] {
		w.from[from] = true
		w.check()
	}
}

// ExpectChange implements meta.ChangeListener: the waiter collects the
// acknowledgements of c from the listeners, and wait counts the listening
// connections (pg_stat_activity, application_name coffer-listen, this
// database) to know how many to expect.
func (s *Store) ExpectChange(cs ...meta.Change) (wait func(ctx context.Context, max time.Duration), cancel func()) {
	if !s.acks.listening.Load() || len(cs) == 0 {
		return func(context.Context, time.Duration) {}, func() {}
	}
	type pending struct {
		payload string
		w       *ackWaiter
	}
	ps := make([]pending, 0, len(cs))
	s.acks.mu.Lock()
	if s.acks.waiters == nil {
		s.acks.waiters = map[string][]*ackWaiter{}
	}
	for _, c := range cs {
		p := pending{c.Topic + ":" + c.Key, &ackWaiter{from: map[string]bool{}, done: make(chan struct{})}}
		s.acks.waiters[p.payload] = append(s.acks.waiters[p.payload], p.w)
		ps = append(ps, p)
	}
	s.acks.mu.Unlock()
	var once sync.Once
	cancel = func() {
		once.Do(func() {
			s.acks.mu.Lock()
			defer s.acks.mu.Unlock()
			for _, p := range ps {
				ws := slices.DeleteFunc(s.acks.waiters[p.payload], func(x *ackWaiter) bool { return x == p.w })
				if len(ws) == 0 {
					delete(s.acks.waiters, p.payload)
				} else {
					s.acks.waiters[p.payload] = ws
				}
			}
		})
	}
	wait = func(ctx context.Context, max time.Duration) {
		defer cancel()
		ctx, stop := context.WithTimeout(ctx, max)
		defer stop()
		n, err := metasql.Get(ctx, driver{s}, "count listeners", metasql.ScanInt64, nil,
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()", ListenerApplicationName)
		if err != nil || n == 0 {
			return
		}
		s.acks.mu.Lock()
		for _, p := range ps {
			p.w.want = int(n)
			p.w.check()
		}
		s.acks.mu.Unlock()
		for _, p := range ps {
			select {
			case <-p.w.done:
			case <-ctx.Done():
				return
			}
		}
	}
	return wait, cancel
}

// listenPingEvery is how long the listening connection may stay silent
// before it is pinged.
const listenPingEvery = 30 * time.Second

// newListenerID returns a random identity for this store's listener.
func newListenerID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta"
)

var _ meta.ChangeListener = (*Store)(nil)

// ChangesChannel is the channel every change is announced on (NOTIFY),
// with the payload Topic + ":" + Key.
const ChangesChannel = "coffer_changes"

// ListenerApplicationName is the application_name of the connection that
// listens for changes (tests terminate it to simulate a network cut).
const ListenerApplicationName = "coffer-listen"

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
// after every reconnection, it calls h.Reset: announcements made while
// no connection listened are lost, so caches must drop what they hold.
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
	if _, err := conn.Exec(ctx, "LISTEN "+ChangesChannel); err != nil {
		return err
	}
	listening()
	if h.Reset != nil {
		h.Reset()
	}
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
		if c, ok := parseChange(n.Payload); ok && h.Changed != nil {
			h.Changed(c)
		}
	}
}

// listenPingEvery is how long the listening connection may stay silent
// before it is pinged.
const listenPingEvery = 30 * time.Second

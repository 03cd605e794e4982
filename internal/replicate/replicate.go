// Package replicate is continuous replication of the embedded shape
// (coffer serve --replicate-to URL) and its point-in-time restore (coffer
// restore --from URL --at TIME).
//
// meta.db's changes stream to the destination through litestream (as a
// library: its DB, Replica and Store, over ltxClient, a ReplicaClient on
// the blob.Store the destination URL opens); every blob the data folder
// writes is copied once to <dest>/blobs/<key> (shipper). The two meet at
// one rule: an LTX file is written to the destination only once every blob
// the data folder held before the file was made has reached it (the
// barrier in ltxClient.WriteLTXFile), so no metadata point on the replica
// names a blob the replica lacks. Lag is accounted from the start of the
// last pass that made and wrote the LTX files of everything committed
// before it (Lag). Nothing is ever deleted from blobs/ on the destination.
//
// The server's writes never wait on the destination: Put only queues a
// key, and litestream reads the WAL on its own connection (its sync holds
// SQLite's write lock for the moment it copies new WAL frames to a local
// file, never across a network call).
package replicate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/litestream"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// DefaultWindow is --replicate-window's default: at most this much of
// acknowledged writes may be lost with the data folder.
const DefaultWindow = 10 * time.Second

// Options configure Start.
type Options struct {
	// URL is the destination: a folder, or an s3:// URL as --blob.
	URL string
	// Window is the most of acknowledged writes that may be lost (the
	// lag above which the replica is reported behind).
	Window time.Duration
	// DB is meta.db's path; Blobs the data folder's blob store.
	DB    string
	Blobs blob.Store
	Log   *slog.Logger
	// Interval is the time between passes (0: Window/10, within 100 ms
	// and 1 s).
	Interval time.Duration
	// Copiers is the number of blobs copied at once (0: 4).
	Copiers int

	wrapDest func(blob.Store) blob.Store // tests: a decorator of the destination
}

// Replicator replicates one data folder while the server runs.
type Replicator struct {
	o        Options
	dest     *Dest
	ship     *shipper
	db       *litestream.DB
	replica  *litestream.Replica
	lstore   *litestream.Store
	errs     atomic.Uint64
	asOf     atomic.Int64 // unix nanoseconds: everything committed before is on the replica
	passes   atomic.Uint64
	behind   atomic.Bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	closeMu  sync.Mutex
	closed   bool
	shipCtx  context.Context
	shipStop context.CancelFunc
}

// Start opens the destination and starts replicating. The returned
// Replicator's Wrap must wrap the blob store the object service writes
// to, before any write.
func Start(ctx context.Context, o Options) (_ *Replicator, err error) {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Interval <= 0 {
		o.Interval = min(max(o.Window/10, 100*time.Millisecond), time.Second)
	}
	if o.Copiers <= 0 {
		o.Copiers = 4
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	o.Log = o.Log.With("component", "replicate")
	dest, err := OpenDest(ctx, o.URL, false)
	var later *lazy
	if err != nil && errcode.Is(err, errcode.Unavailable) && strings.HasPrefix(o.URL, "s3://") {
		// The store did not answer: start anyway, and open it in the
		// background (a bad URL or a missing folder still refuses).
		o.Log.Warn("replication: the destination does not answer; the server starts and replication waits for it", "to", bare(o.URL), "error", err)
		later = &lazy{}
		dest, err = &Dest{Store: later, URL: bare(o.URL)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--replicate-to: %w", err)
	}
	if o.wrapDest != nil {
		dest.Store = o.wrapDest(dest.Store)
	}
	r := &Replicator{o: o, dest: dest}
	defer func() {
		if err != nil {
			_ = dest.Close()
		}
	}()
	r.asOf.Store(time.Now().UnixNano())
	r.shipCtx, r.shipStop = context.WithCancel(context.Background())
	if later != nil {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			later.open(r.shipCtx, func(ctx context.Context) (*Dest, error) { return OpenDest(ctx, o.URL, false) }, &r.errs, o.Log)
		}()
	}
	r.ship = newShipper(o.Blobs, dest, o.Log, &r.errs)
	r.ship.start(r.shipCtx, o.Copiers)
	scan := r.ship.reserve()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.ship.finish(scan)
		backoff := time.Second
		for r.shipCtx.Err() == nil {
			err := r.ship.scan(r.shipCtx)
			if err == nil || r.shipCtx.Err() != nil {
				return
			}
			r.errs.Add(1)
			o.Log.Warn("replication: listing blobs to copy failed; retrying", "error", err, "retry_in", backoff.String())
			select {
			case <-time.After(backoff):
			case <-r.shipCtx.Done():
			}
			backoff = min(2*backoff, 30*time.Second)
		}
	}()

	r.db = litestream.NewDB(o.DB)
	r.db.MonitorInterval = 0 // the passes of run sync, so that Lag is exact
	r.db.ShutdownSyncTimeout = o.Window
	client := &ltxClient{st: dest, barrier: r.ship.wait, log: o.Log}
	r.replica = litestream.NewReplicaWithClient(r.db, client)
	r.replica.MonitorEnabled = false
	r.db.Replica = r.replica
	r.lstore = litestream.NewStore([]*litestream.DB{r.db}, litestream.CompactionLevels{
		{Level: 0},
		{Level: 1, Interval: 30 * time.Second},
		{Level: 2, Interval: 5 * time.Minute},
		{Level: 3, Interval: time.Hour},
	})
	r.lstore.Logger = o.Log
	r.db.SetLogger(o.Log)
	client.SetLogger(o.Log)
	if err := r.lstore.Open(ctx); err != nil {
		r.shipStop()
		r.ship.close()
		r.wg.Wait()
		return nil, fmt.Errorf("--replicate-to: starting litestream: %w", err)
	}
	var rctx context.Context
	rctx, r.cancel = context.WithCancel(context.Background())
	r.wg.Add(1)
	go func() { defer r.wg.Done(); r.run(rctx) }()
	o.Log.Info("replicating the data folder", "to", dest.URL, "window", o.Window.String(), "interval", o.Interval.String())
	return r, nil
}

// run makes a pass every interval, backing off after failures.
func (r *Replicator) run(ctx context.Context) {
	t := time.NewTicker(r.o.Interval)
	defer t.Stop()
	backoff := time.Duration(0)
	var lastLog time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.pass(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			r.errs.Add(1)
			backoff = min(max(2*backoff, r.o.Interval), 30*time.Second)
			if time.Since(lastLog) > 10*time.Second {
				lastLog = time.Now()
				r.o.Log.Error("replication: sync failed; retrying", "error", err, "lag", r.Lag().Round(time.Millisecond).String(), "retry_in", backoff.String())
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		lag := r.Lag()
		if lag > r.o.Window && !r.behind.Swap(true) {
			r.o.Log.Warn("replication is behind its window", "lag", lag.Round(time.Millisecond).String(), "window", r.o.Window.String())
		} else if lag <= r.o.Window && r.behind.Swap(false) {
			r.o.Log.Info("replication caught up", "lag", lag.Round(time.Millisecond).String())
		}
	}
}

// pass copies every change committed before it started to the
// destination: litestream reads the new WAL frames into an LTX file, then
// writes it (after the blob barrier). On success, everything committed
// before the pass started is on the replica.
func (r *Replicator) pass(ctx context.Context) error {
	t0 := time.Now()
	if err := r.db.Sync(ctx); err != nil {
		return fmt.Errorf("reading the WAL: %w", err)
	}
	if err := r.replica.Sync(ctx); err != nil {
		return fmt.Errorf("writing to %s: %w", r.dest.URL, err)
	}
	r.asOf.Store(t0.UnixNano())
	r.passes.Add(1)
	return nil
}

// Wrap returns the blob store the object service must write through:
// each new blob is queued for the destination.
func (r *Replicator) Wrap(b blob.Store) blob.Store {
	s := &store{Store: b, s: r.ship, window: r.o.Window}
	if c, ok := b.(blob.Copier); ok {
		return &copierStore{store: s, c: c}
	}
	return s
}

// Lag is now minus the time before which every acknowledged write (its
// metadata and its blobs) is on the replica: coffer_replication_lag_seconds.
func (r *Replicator) Lag() time.Duration { return time.Since(time.Unix(0, r.asOf.Load())) }

// Errors counts failed attempts (a pass, a blob copy, a listing, a blob
// deleted before it was copied): coffer_replication_errors_total.
func (r *Replicator) Errors() uint64 { return r.errs.Load() }

// Stats are counters for metrics and tests.
type Stats struct {
	Passes, BlobsCopied, BlobsVanished uint64
}

// Stats returns the counters so far.
func (r *Replicator) Stats() Stats {
	return Stats{Passes: r.passes.Load(), BlobsCopied: r.ship.copied.Load(), BlobsVanished: r.ship.vanished.Load()}
}

// Sync makes one pass now (tests; a graceful shutdown).
func (r *Replicator) Sync(ctx context.Context) error { return r.pass(ctx) }

// Close makes a last pass (bounded by the window), then stops. Call it
// after the server stopped writing and before meta.db closes.
func (r *Replicator) Close(ctx context.Context) error {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.cancel()
	ctx, cancel := context.WithTimeout(ctx, r.o.Window)
	defer cancel()
	var errs []error
	if err := r.pass(ctx); err != nil {
		errs = append(errs, fmt.Errorf("replication: last sync: %w", err))
	}
	if err := r.lstore.Close(ctx); err != nil && !errors.Is(err, context.Canceled) {
		errs = append(errs, fmt.Errorf("replication: closing litestream: %w", err))
	}
	r.shipStop()
	r.ship.close()
	r.wg.Wait()
	errs = append(errs, r.dest.Close())
	return errors.Join(errs...)
}

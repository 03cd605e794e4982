package audit

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options of a Logger. The zero values of the bounds take the defaults
// written on each field.
type Options struct {
	// File is the audit log's path ("": no file). It is created 0600 and
	// rotated when it would grow past MaxSize, keeping MaxFiles files in
	// all (FILE, FILE.1, ... FILE.<MaxFiles-1>).
	File     string
	MaxSize  int64 // default 100 MiB
	MaxFiles int   // default 10
	// NoSync leaves the file unsynced (tests only). Otherwise what is
	// written is fsynced at most SyncEvery after it was written (default
	// 100ms): one fsync for every batch written in that time, not one a
	// batch (a busy node writes a few events a batch).
	NoSync    bool
	SyncEvery time.Duration
	// Poll is how often a busy writer takes the queued events (default
	// 20ms): the queue must hold what comes in that time.
	Poll time.Duration

	// Webhook is a URL that receives the events as JSON arrays ("": none).
	Webhook string
	Hook    WebhookOptions

	// Queue bounds the events waiting for the writer (default 8192): an
	// event that finds it full is dropped and counted.
	Queue int
	// Ring is how many recent events Recent can return (default 1000).
	Ring int
	// Origin reads a request's ID, client address and user from its
	// context (the server's; nil: none).
	Origin func(context.Context) Origin
	Log    *slog.Logger
	// Now is the clock (tests; default time.Now).
	Now func() time.Time
}

// Logger queues events for its sinks and keeps the recent ones.
type Logger struct {
	opts   Options
	queue  chan Event
	file   *rotator
	hook   *webhook
	log    *slog.Logger
	done   chan struct{}
	stop   chan struct{} // closed by Close, after the queue: the writer takes the rest now
	closed atomic.Bool
	// closeMu orders Log's sends before Close's close of queue.
	closeMu sync.RWMutex

	counts  [4]atomic.Uint64 // by Outcome, in Outcomes' order
	dropped atomic.Uint64
	lastLog atomic.Int64 // unix nanoseconds of the last drop warning

	ringMu sync.Mutex
	ring   []Event
	next   int
	full   bool
}

// New starts a Logger; nil, nil when there is no sink (the audit log off).
func New(o Options) (*Logger, error) {
	if o.File == "" && o.Webhook == "" {
		return nil, nil
	}
	if o.MaxSize <= 0 {
		o.MaxSize = 100 << 20
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = 10
	}
	if o.Queue <= 0 {
		o.Queue = 8192
	}
	if o.Ring <= 0 {
		o.Ring = 1000
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SyncEvery <= 0 {
		o.SyncEvery = 100 * time.Millisecond
	}
	if o.Poll <= 0 {
		o.Poll = 20 * time.Millisecond
	}
	l := &Logger{opts: o, queue: make(chan Event, o.Queue), log: o.Log, done: make(chan struct{}), stop: make(chan struct{}), ring: make([]Event, o.Ring)}
	if o.File != "" {
		r, err := openRotator(o.File, o.MaxSize, o.MaxFiles, !o.NoSync)
		if err != nil {
			return nil, err
		}
		l.file = r
	}
	if o.Webhook != "" {
		h, err := newWebhook(o.Webhook, o.Hook, l.drop)
		if err != nil {
			if l.file != nil {
				l.file.Close()
			}
			return nil, err
		}
		l.hook = h
	}
	go l.run()
	return l, nil
}

// Log records e: it fills the time, and the client address, request ID
// and (when e.Actor is unset) the actor from ctx, counts it and queues it
// for the sinks without waiting. A full queue drops it (counted and
// logged). Safe on a nil Logger (the audit log off).
func (l *Logger) Log(ctx context.Context, e Event) {
	if l == nil {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if e.Time.IsZero() {
		e.Time = l.opts.Now().UTC()
	}
	if e.Outcome == "" {
		e.Outcome = Success
	}
	var o Origin
	if l.opts.Origin != nil {
		o = l.opts.Origin(ctx)
	}
	if e.RequestID == "" {
		e.RequestID = o.RequestID
	}
	if e.Client == "" && o.Client.IsValid() {
		e.Client = o.Client.String()
	}
	if e.Actor.Type == "" {
		if a, ok := ctx.Value(ctxKey{}).(Actor); ok {
			e.Actor = a
		} else {
			e.Actor = originActor(o)
		}
	}
	l.count(e.Outcome)
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed.Load() {
		l.drop(1, "audit log closed")
		return
	}
	select {
	case l.queue <- e:
	default:
		l.drop(1, "audit queue full")
	}
}

// originActor is the actor a request's origin names.
func originActor(o Origin) Actor {
	switch {
	case o.KeyID != "":
		return Key(o.KeyID, o.UserID)
	case o.UserID != "" && o.Admin:
		return Actor{Type: ActorAdmin, ID: o.UserID}
	case o.UserID != "":
		return User(o.UserID)
	case o.RequestID != "":
		return Anonymous("")
	}
	return System()
}

func (l *Logger) count(o Outcome) {
	for i, x := range Outcomes {
		if x == o {
			l.counts[i].Add(1)
			return
		}
	}
	l.counts[1].Add(1) // an unknown outcome counts as a failure
}

// drop counts n lost events and logs why, at most once a second.
func (l *Logger) drop(n int, why string) {
	total := l.dropped.Add(uint64(n))
	now := time.Now().UnixNano()
	last := l.lastLog.Load()
	if now-last >= int64(time.Second) && l.lastLog.CompareAndSwap(last, now) {
		l.log.Warn("audit events dropped", "count", n, "dropped_total", total, "reason", why)
	}
}

// Stats returns the events logged by outcome (in Outcomes' order) and
// the events dropped (a full queue, a failed write, a webhook that gave
// up).
func (l *Logger) Stats() (events [4]uint64, dropped uint64) {
	if l == nil {
		return events, 0
	}
	for i := range l.counts {
		events[i] = l.counts[i].Load()
	}
	return events, l.dropped.Load()
}

// run is the writer. It never wakes for each event (the wake-up of a
// goroutine per event cost more server CPU than writing it): it waits for
// the first event after a quiet spell, then takes what was queued every
// Options.Poll (20ms) until a poll finds nothing; each take is encoded
// and buffered for the file, handed to the webhook and kept in the ring.
// The file gets its lines (one write, one fsync) every SyncEvery while
// events come, and at Close.
func (l *Logger) run() {
	defer close(l.done)
	batch := make([]Event, 0, 256)
	var line []byte
	dirty := false
	var synced time.Time
	syncFile := func() {
		if err := l.file.flush(); err != nil {
			l.drop(0, "write: "+err.Error())
		}
		if err := l.file.sync(); err != nil {
			l.drop(0, "sync: "+err.Error())
		}
		dirty, synced = false, time.Now()
	}
	// take moves the queued events to the sinks; closed once the queue is
	// closed and empty.
	take := func() (n int, closed bool) {
		for {
			batch = batch[:0]
		fill:
			for len(batch) < cap(batch) {
				select {
				case e, ok := <-l.queue:
					if !ok {
						closed = true
						break fill
					}
					batch = append(batch, e)
				default:
					break fill
				}
			}
			l.deliver(batch, &line)
			n += len(batch)
			if len(batch) > 0 && l.file != nil {
				dirty = true
			}
			if closed || len(batch) < cap(batch) {
				return n, closed
			}
		}
	}
	poll := time.NewTimer(time.Hour)
	poll.Stop()
	for {
		// Quiet: block until an event comes.
		e, ok := <-l.queue
		if !ok {
			break
		}
		batch = append(batch[:0], e)
		l.deliver(batch, &line)
		dirty = dirty || l.file != nil
		closed := false
		for !closed {
			poll.Reset(l.opts.Poll)
			select {
			case <-poll.C:
			case <-l.stop:
				poll.Stop()
			}
			var n int
			n, closed = take()
			if dirty && time.Since(synced) >= l.opts.SyncEvery {
				syncFile()
			}
			if n == 0 && !dirty {
				break // quiet again
			}
		}
		if closed {
			break
		}
	}
	if dirty {
		syncFile()
	}
}

// deliver writes batch to the file's buffer, hands it to the webhook and
// keeps it in the ring.
func (l *Logger) deliver(batch []Event, line *[]byte) {
	if len(batch) == 0 {
		return
	}
	if l.file != nil {
		for i := range batch {
			*line = append(appendJSON((*line)[:0], &batch[i]), '\n')
			if err := l.file.write(*line); err != nil {
				l.drop(1, "write: "+err.Error())
			}
		}
	}
	if l.hook != nil {
		for i := range batch {
			l.hook.enqueue(batch[i])
		}
	}
	l.remember(batch)
}

func (l *Logger) remember(batch []Event) {
	l.ringMu.Lock()
	defer l.ringMu.Unlock()
	for _, e := range batch {
		l.ring[l.next] = e
		l.next++
		if l.next == len(l.ring) {
			l.next, l.full = 0, true
		}
	}
}

// Filter selects recent events (Recent).
type Filter struct {
	Since  time.Time // events at or after it; zero: any
	Actor  string    // matches the actor's ID, owner or name; "": any
	Action string    // an action, or a prefix ending in "." ("share."); "": any
	Limit  int       // at most this many (newest first); 0: 100
}

// Recent returns the events of the ring that match f, newest first. The
// ring holds the last Options.Ring events this node wrote (not those of
// other nodes or before a restart: the file has them).
func (l *Logger) Recent(f Filter) []Event {
	if l == nil {
		return nil
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	l.ringMu.Lock()
	defer l.ringMu.Unlock()
	n := l.next
	if l.full {
		n = len(l.ring)
	}
	out := []Event{}
	for i := 0; i < n && len(out) < f.Limit; i++ {
		e := l.ring[(l.next-1-i+len(l.ring))%len(l.ring)]
		if f.match(e) {
			out = append(out, e)
		}
	}
	return out
}

func (f Filter) match(e Event) bool {
	if !f.Since.IsZero() && e.Time.Before(f.Since) {
		return false
	}
	if f.Actor != "" && e.Actor.ID != f.Actor && e.Actor.User != f.Actor && e.Actor.Name != f.Actor {
		return false
	}
	if f.Action != "" {
		if strings.HasSuffix(f.Action, ".") {
			return strings.HasPrefix(string(e.Action), f.Action)
		}
		return string(e.Action) == f.Action
	}
	return true
}

// Close stops taking events, writes those queued, lets the webhook post
// what it holds until ctx ends (then counts the rest as dropped), and
// closes the file.
func (l *Logger) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.closeMu.Lock()
	if l.closed.Swap(true) {
		l.closeMu.Unlock()
		return nil
	}
	close(l.queue)
	close(l.stop)
	l.closeMu.Unlock()
	select {
	case <-l.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	var errs []error
	if l.hook != nil {
		errs = append(errs, l.hook.close(ctx))
	}
	if l.file != nil {
		errs = append(errs, l.file.Close())
	}
	return errors.Join(errs...)
}

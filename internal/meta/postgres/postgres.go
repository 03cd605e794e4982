// Package postgres is the scale-out metadata store (every role of meta.Stores): one PostgreSQL database
// (12 or later) that several Coffer nodes share, reached with pgx through a
// connection pool.
//
// # Connections and timeouts
//
// Every method takes a connection from a pgxpool of Options.MaxConns
// connections. When all are busy it waits at most Options.AcquireTimeout,
// then fails with Unavailable and a Retry-After: an overloaded or
// unreachable database never makes a request hang. Opening a connection is
// bounded by the same timeout. Every statement runs under the session's
// statement_timeout (Options.StatementTimeout), after which it fails with
// Unavailable. Connection failures (the server restarting, a network cut,
// "too many connections") are Unavailable with a Retry-After; the pool
// replaces broken connections by itself, so a Store outlives a database
// restart. pgx prepares and caches every statement per connection.
//
// # Transactions
//
// Every method is one transaction, or one statement. A transaction's
// statements are sent in pipelined batches (pgx.Batch): BEGIN goes with the
// first reads, and the writes with COMMIT, so a PutObjects of one object is
// two round trips and a GetObject one. Transactions run in READ COMMITTED
// with explicit row locks:
//
//   - Every method that reads an object or an upload and then writes on
//     the strength of what it read (PutObjects, DeleteObject,
//     DeleteVersion, MoveObject, PutPart, CompleteUpload,
//     CompleteBackendUpload, AbortUpload, DeleteBucket), and every change to what an owner with a quota
//     reserves (Stage, GrowStaging, CreateUpload of a declared size),
//     first locks the users rows of the owners of the buckets it touches
//     (SELECT … FOR UPDATE, in id order, so two transactions never
//     deadlock on them), and reads only after that, in later statements
//     that see everything committed before the lock. Writes of one owner
//     are therefore serialised — which the owner's usage counter, updated
//     in the same transaction, requires anyway — and the usage, quota and
//     reservations read under the lock are exact, and so is a key's
//     latest version (one per key). Staging rows are touched
//     after the users row; renewing and unstaging take no users lock and
//     never wait for one.
//   - RotateRefreshToken locks the token row, so of concurrent rotations
//     exactly one wins.
//   - A deadlock or serialization failure (SQLSTATE 40P01, 40001), or a
//     connection lost before COMMIT was sent, reruns the whole transaction
//     a few times with a small jittered backoff.
//
// ListObjects, ListObjectVersions and ListUploads read in one REPEATABLE READ READ ONLY
// transaction (one snapshot per page); single-query reads run outside any
// transaction, each statement being its own snapshot.
//
// # Schema
//
// Migrations are the numbered files of migrations/ (embedded; the same
// numbering as the SQLite backend), applied at Open, each in its own
// transaction under pg_advisory_xact_lock so that nodes starting together
// apply each exactly once, and recorded in schema_migrations. A database
// migrated by a newer Coffer is refused.
//
// Times are bigint unix nanoseconds UTC. Object and upload keys are bytea,
// so they hold any bytes and compare as raw bytes (memcmp order), and a
// prefix is the range [prefix, meta.PrefixEnd(prefix)) of the primary key
// (bucket, key, seq: every objects row is a version of its key, newest
// first, migrations 0017 and 0022; meta's versions.go).
// Names and identifiers are text COLLATE "C". Text columns cannot hold NUL
// bytes or invalid UTF-8: such a value (a Content-Type, a bucket name) is
// InvalidArgument.
//
// A multipart object's parts live in object_parts under a parts_id (from a
// sequence, never reused) that the objects row names; an inline object's
// bytes live in its objects row (inline_data). GetObject reads the row and
// the parts in one statement. Every column that names a blob is indexed,
// for enqueue's "still referenced?" check, ClaimGarbage and
// ReferencedBlobs; the SQL of those checks is metasql's, shared with the
// SQLite backend.
//
// # Shared with the SQLite backend
//
// The checks and decisions of every operation are package meta's, and the
// operations whose SQL is the same in both backends are metasql.Ops, which
// Store embeds: this package holds how PostgreSQL runs a statement (a pool
// connection, or a pipelined transaction, with pgx.CollectRows as the row
// collector) and the transactions of its own (the metasql.Driver methods,
// among them the read of one version and DeleteVersion, and ListObjects,
// ListUploads, DeleteObject, CompleteUpload, AbortUpload, DeleteBucket,
// DeleteUser, DeleteAccessKey, GrowStaging, ReferencedBlobs).
package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// Options tunes a Store. The zero value is ready to use.
type Options struct {
	// MaxConns is the size of the connection pool. Default 4 × GOMAXPROCS,
	// at least 8. Mind the server's max_connections across all nodes.
	MaxConns int
	// MinConns connections are kept open even when idle. Default 0.
	MinConns int
	// AcquireTimeout bounds the wait for a pool connection (and the opening
	// of a new one); past it a method fails with Unavailable. Default 5s.
	AcquireTimeout time.Duration
	// StatementTimeout is the session's statement_timeout. Default 30s.
	StatementTimeout time.Duration
	// MaxAttempts is how many times a transaction runs when it hits a
	// deadlock, a serialization failure or a connection lost before
	// COMMIT. Default 5.
	MaxAttempts int
	// Trace, if not nil, traces every metadata operation (the server's
	// tracing.MetaHook when tracing is on; metasql.Traced).
	Trace metasql.Trace
	// Observe, if set, times every metadata operation (the server's
	// coffer_meta_op_duration_seconds; metasql.Traced).
	Observe metasql.Observe
}

func (o Options) withDefaults() Options {
	if o.MaxConns <= 0 {
		o.MaxConns = max(8, 4*runtime.GOMAXPROCS(0))
	}
	o.MinConns = min(max(o.MinConns, 0), o.MaxConns)
	if o.AcquireTimeout <= 0 {
		o.AcquireTimeout = 5 * time.Second
	}
	if o.StatementTimeout <= 0 {
		o.StatementTimeout = 30 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	return o
}

// Store is the metadata store (every role of meta.Stores) on a PostgreSQL database. It is safe for concurrent
// use.
type Store struct {
	// Ops are the operations of one statement, each on a pool
	// connection (writes in a transaction of their own).
	metasql.Ops

	opts Options
	pool *pgxpool.Pool
	// connConfig opens the connection that listens for changes.
	connConfig *pgx.ConnConfig
	acks       acks
	// listenDial dials the listening connection (nil: a dialer with
	// tight TCP keepalives; tests put a proxy in between).
	listenDial pgconn.DialFunc
	closed     atomic.Bool
	queries    *queryCounter
}

// queryCounter is a pgx tracer counting the statements sent (each
// statement of a batch, BEGIN and COMMIT included), for metrics.
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}
func (q *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (q *queryCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (q *queryCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	q.n.Add(1)
}
func (q *queryCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// IdleInTransactionTimeout is the pool connections'
// idle_in_transaction_session_timeout (unless the URL sets it): the
// longest a transaction whose client stopped sending (cut off, paused)
// holds its locks.
const IdleInTransactionTimeout = 5 * time.Second

// Open connects to the database at url (a postgres:// URL or a key=value
// connection string), applies pending migrations and returns the store.
// Run-time parameters in url are kept, except statement_timeout, which
// Options sets.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidArgument, err, "postgres: invalid connection string")
	}
	cfg.MaxConns = int32(min(opts.MaxConns, 1<<30))
	cfg.MinConns = int32(min(opts.MinConns, 1<<30))
	if cfg.ConnConfig.ConnectTimeout <= 0 || cfg.ConnConfig.ConnectTimeout > opts.AcquireTimeout {
		cfg.ConnConfig.ConnectTimeout = opts.AcquireTimeout
	}
	rp := cfg.ConnConfig.RuntimeParams
	rp["statement_timeout"] = strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10)
	if _, ok := rp["idle_in_transaction_session_timeout"]; !ok {
		// A transaction is never idle on purpose: its statements are sent
		// back to back, the gaps are the client's work between two round
		// trips (milliseconds). This frees the locks (a user's row, held
		// for its quota) of a node that was cut off or paused
		// mid-transaction within seconds, so other nodes' writes resume.
		rp["idle_in_transaction_session_timeout"] = strconv.FormatInt(IdleInTransactionTimeout.Milliseconds(), 10)
	}
	// The server notices a client that vanished (a partition, a dead
	// host: no RST) within about 10 s rather than the hours of the
	// system's TCP defaults: keepalives while the connection is idle, and
	// tcp_user_timeout while the server's results go unacknowledged.
	for k, v := range map[string]string{
		"tcp_keepalives_idle": "5", "tcp_keepalives_interval": "1", "tcp_keepalives_count": "5", "tcp_user_timeout": "10000",
	} {
		if _, ok := rp[k]; !ok {
			rp[k] = v
		}
	}
	if _, ok := rp["application_name"]; !ok {
		rp["application_name"] = "coffer"
	}
	qc := &queryCounter{}
	cfg.ConnConfig.Tracer = qc
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidArgument, err, "postgres: invalid pool configuration")
	}
	s := &Store{opts: opts, pool: pool, connConfig: cfg.ConnConfig, acks: acks{id: newListenerID()}, queries: qc}
	s.Ops = metasql.NewOps(metasql.Traced(driver{s}, opts.Trace, opts.Observe), dialect)
	if err := s.migrate(ctx, time.Now); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Stats is a snapshot of the connection pool, for metrics.
type Stats struct {
	MaxConns          int32 // the pool's size
	TotalConns        int32 // open connections (acquired, idle or being opened)
	AcquiredConns     int32 // in use by a method
	IdleConns         int32
	ConstructingConns int32 // being opened
	// AcquireCount counts successful acquires; EmptyAcquireCount those of
	// them that had to wait for a connection (the pool was exhausted);
	// CanceledAcquireCount the acquires given up (AcquireTimeout or the
	// caller's context).
	AcquireCount         int64
	EmptyAcquireCount    int64
	CanceledAcquireCount int64
	// EmptyAcquireWaitTime is the total time the EmptyAcquireCount acquires
	// waited.
	EmptyAcquireWaitTime time.Duration
	NewConnsCount        int64 // connections opened so far
	// Queries counts the statements sent to the database (each statement
	// of a transaction's batch, BEGIN and COMMIT included).
	Queries int64
}

// Stats returns the pool's statistics.
func (s *Store) Stats() Stats {
	st := s.pool.Stat()
	return Stats{
		MaxConns:             st.MaxConns(),
		TotalConns:           st.TotalConns(),
		AcquiredConns:        st.AcquiredConns(),
		IdleConns:            st.IdleConns(),
		ConstructingConns:    st.ConstructingConns(),
		AcquireCount:         st.AcquireCount(),
		EmptyAcquireCount:    st.EmptyAcquireCount(),
		CanceledAcquireCount: st.CanceledAcquireCount(),
		EmptyAcquireWaitTime: st.EmptyAcquireWaitTime(),
		NewConnsCount:        st.NewConnsCount(),
		Queries:              s.queries.n.Load(),
	}
}

// Ping checks the database answers (SELECT 1 on a pool connection).
func (s *Store) Ping(ctx context.Context) error {
	_, err := metasql.Get(ctx, driver{s}, "ping", metasql.ScanInt64, nil, "SELECT 1")
	return err
}

// Close closes the pool, waiting for connections in use to be released.
// Methods called afterwards fail with Unavailable. Calling it again returns
// nil.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.pool.Close()
	return nil
}

var errClosed = errcode.New(errcode.Unavailable, "postgres: store is closed")

// retryAfter is the Retry-After suggested when the database is unreachable
// or overloaded.
const retryAfter = time.Second

// acquire takes a pool connection, waiting at most AcquireTimeout.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	actx, cancel := context.WithTimeout(ctx, s.opts.AcquireTimeout)
	defer cancel()
	c, err := s.pool.Acquire(actx)
	if err == nil {
		return c, nil
	}
	if s.closed.Load() {
		return nil, errClosed
	}
	if ctx.Err() != nil {
		return nil, errors.Join(ctx.Err(), err)
	}
	if actx.Err() != nil {
		e := errcode.As(errcode.Retry(errcode.Unavailable, retryAfter,
			"postgres: no database connection within %v (metadata pool exhausted, or the database is unreachable)", s.opts.AcquireTimeout))
		e.Err = err
		return nil, e
	}
	return nil, err
}

// read runs fn on a pool connection outside any transaction, rerunning it
// once on a connection that turned out to be broken.
func (s *Store) read(ctx context.Context, what string, fn func(c *pgx.Conn) error) error {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var c *pgxpool.Conn
		if c, err = s.acquire(ctx); err != nil {
			return classify(ctx, err, "%s", what)
		}
		err = fn(c.Conn())
		c.Release()
		if err == nil || !connLost(ctx, err) {
			break
		}
	}
	return classify(ctx, err, "%s", what)
}

// txn is a transaction in progress. Statements are queued and sent in one
// pipelined batch by flush (the first batch begins the transaction), and
// their callbacks run then, in order. Reads that a decision depends on must
// be flushed before the decision; writes just queue and go with the next
// read or with COMMIT.
type txn struct {
	ctx        context.Context
	conn       *pgx.Conn
	batch      *pgx.Batch
	now        time.Time
	commitSent bool
	// owners holds the users rows locked by lockOwners, with their quota
	// and usage as this transaction has changed them, and their
	// reservations (readReserved).
	owners map[string]*owner
	// released holds the stagings releaseStaged deleted, with their
	// expiry.
	released map[string]time.Time
}

// exec queues a statement.
func (t *txn) exec(sql string, args ...any) { t.batch.Queue(sql, args...) }

// execN queues a statement; fn gets the number of rows it affected.
func (t *txn) execN(fn func(n int64) error, sql string, args ...any) {
	t.batch.Queue(sql, args...).Exec(func(ct pgconn.CommandTag) error { return fn(ct.RowsAffected()) })
}

// flush sends the queued statements and runs their callbacks.
func (t *txn) flush() error {
	if t.batch.Len() == 0 {
		return nil
	}
	b := t.batch
	t.batch = &pgx.Batch{}
	return t.conn.SendBatch(t.ctx, b).Close()
}

// opFunc is the body of a transaction. It queues and flushes statements but
// never begins, commits or rolls back. Returning an error rolls back,
// unless the error is wrapped with keep.
type opFunc func(t *txn) error

// keepError is an operation error whose changes are committed anyway (e.g.
// the family revocation of a reused refresh token).
type keepError struct{ err error }

func (e *keepError) Error() string { return e.err.Error() }
func (e *keepError) Unwrap() error { return e.err }

// keep returns err such that the operation's changes are committed and err
// is returned.
func keep(err error) error { return &keepError{err} }

// errRetry asks write to run the transaction again (a row it locked turned
// out not to be the one it needed).
var errRetry = errors.New("postgres: transaction must be retried")

const (
	beginReadWrite = "begin"
	beginSnapshot  = "begin isolation level repeatable read read only"
)

// write runs fn in a READ COMMITTED transaction; see tx.
func (s *Store) write(ctx context.Context, what string, fn opFunc) error {
	return s.tx(ctx, what, beginReadWrite, fn)
}

// tx runs fn in a transaction begun with begin, rerunning it (up to
// MaxAttempts times in all) after a deadlock, a serialization failure, an
// errRetry, or a connection lost before COMMIT was sent. fn must be
// rerunnable: it resets whatever it fills in.
func (s *Store) tx(ctx context.Context, what, begin string, fn opFunc) error {
	var err error
	for attempt := 1; ; attempt++ {
		var commitSent bool
		commitSent, err = s.tryTx(ctx, begin, fn)
		if err == nil || attempt >= s.opts.MaxAttempts || ctx.Err() != nil || s.closed.Load() {
			break
		}
		switch {
		case errors.Is(err, errRetry), isSQLState(err, "40001", "40P01"):
		case !commitSent && connLost(ctx, err) && attempt < 2:
		default:
			return classify(ctx, err, "%s", what)
		}
		// Jittered backoff: 1–5 ms, doubling.
		d := time.Duration(1+rand.IntN(4)) * time.Millisecond << min(attempt-1, 5)
		select {
		case <-ctx.Done():
			return classify(ctx, ctx.Err(), "%s", what)
		case <-time.After(d):
		}
	}
	if errors.Is(err, errRetry) {
		return errcode.Retry(errcode.Unavailable, retryAfter, "%s: too much contention, try again", what)
	}
	return classify(ctx, err, "%s", what)
}

// tryTx runs fn once in a transaction and reports whether COMMIT was sent.
func (s *Store) tryTx(ctx context.Context, begin string, fn opFunc) (commitSent bool, err error) {
	c, err := s.acquire(ctx)
	if err != nil {
		return false, err
	}
	defer c.Release()
	t := &txn{ctx: ctx, conn: c.Conn(), batch: &pgx.Batch{}, now: time.Now()}
	t.exec(begin)
	defer func() {
		if err != nil && t.conn.PgConn().TxStatus() != 'I' && !t.conn.IsClosed() {
			// A connection whose rollback fails is closed, and the pool
			// drops it.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.AcquireTimeout)
			defer cancel()
			if _, rerr := t.conn.Exec(rctx, "rollback"); rerr != nil {
				_ = t.conn.Close(rctx)
			}
		}
	}()
	ferr := fn(t)
	var k *keepError
	if ferr != nil {
		if !errors.As(ferr, &k) {
			return false, ferr
		}
		ferr = k.err
	}
	if t.batch.Len() == 1 && t.batch.QueuedQueries[0].SQL == begin {
		return false, ferr // no statement to commit
	}
	// The changes the caller's caches must drop are announced in the
	// transaction, so they are delivered exactly when it commits.
	for _, c := range meta.Announced(ctx) {
		t.notify(c.Topic, c.Key)
	}
	// A write announced in flux (BeginFlux) checks its fence on the
	// server right before COMMIT, in the same batch, so that no pause of
	// this process can come between (22012 rolls the transaction back).
	f, fenced := ctx.Value(fenceKey{}).(fence)
	if fenced {
		t.exec(fenceSQL, f.by, ListenerApplicationName, f.pids)
	}
	t.batch.Queue("commit").Exec(func(ct pgconn.CommandTag) error {
		if ct.String() != "COMMIT" {
			return errors.New("postgres: the transaction was rolled back at commit")
		}
		return nil
	})
	t.commitSent = true
	if err := t.flush(); err != nil {
		if fenced && isSQLState(err, "22012") {
			e := errcode.Retry(errcode.Unavailable, retryAfter,
				"the write could not commit in time, or a node started listening meanwhile (its announcement to the other nodes is spent), try again").(*errcode.Error)
			e.Err = meta.ErrFenced
			return true, e
		}
		return true, err
	}
	return true, ferr
}

// ready fails once the store is closed.
func (s *Store) ready() error {
	if s.closed.Load() {
		return errClosed
	}
	return nil
}

// Package sqlite is the embedded metadata store (every role of meta.Stores): one SQLite database file in WAL
// mode, opened with the pure-Go driver modernc.org/sqlite.
//
// # Connections
//
// Reads go through a pool of query-only connections (Options.ReadConns) and
// never wait for writes. Every write goes through ONE writer connection that
// a single goroutine owns. Both sides keep their statements prepared: without
// that, parsing SQL took ~60% of the writer's CPU and 1-object puts ran at
// a third of the speed.
//
// # Group commit
//
// Writes are queued as operations. The writer goroutine takes as many queued
// operations as there are (up to Options.MaxBatch), runs them inside one
// BEGIN IMMEDIATE … COMMIT, each inside its own SAVEPOINT so that a failing
// operation is rolled back alone and gets its own error, COMMITs once — one
// fsync for the whole batch — and only then reports each result. If the
// COMMIT fails, every operation of the batch gets an Unavailable error and
// none of them happened. An operation whose context is done before it starts
// is skipped with the context's error; once it has run in a batch that
// committed it is reported as committed, even if its context ended
// meanwhile. A running operation is never interrupted: interrupting a
// statement would roll back the whole batch.
//
// # Durability
//
// The database runs with journal_mode=WAL and synchronous=FULL, so a write
// that returned nil survives a crash or power loss.
//
// # File modes
//
// The database holds password hashes and inline objects: Open creates it
// with mode 0600 before SQLite opens it (SQLite gives the -wal and -shm
// files the database's mode), and takes group and other access away from
// an existing database and its -wal and -shm files.
//
// # Schema
//
// Migrations are the numbered files of migrations/ (embedded), applied in
// order at Open, each in its own transaction, and recorded in
// schema_migrations. The PostgreSQL backend uses the same numbering. Times
// are stored as INTEGER unix nanoseconds UTC; keys are TEXT in the BINARY
// collation, so they compare as raw bytes.
//
// A multipart object's parts live in object_parts under a parts_id that
// the objects row names (with part_count), never under its key: moving an
// object rewrites one row, and reading a single-blob object stays one
// query. parts_id values are never reused, so a set of parts never changes
// once written; GetObject reads a multipart object's row and parts in two
// queries and falls back to a read transaction only if the parts vanished
// in between. Every column that names a blob (objects, object_parts,
// upload_parts, uploads, staging, garbage) is indexed, for enqueue's
// "still referenced?" check, ClaimGarbage and ReferencedBlobs, whose SQL
// is metasql's, shared with the PostgreSQL backend. The single writer
// makes every reservation (Stage, GrowStaging) and quota check exact.
//
// # Shared with the PostgreSQL backend
//
// The checks and decisions of every operation are package meta's, and the
// operations whose SQL is the same in both backends are metasql.Ops, which
// Store embeds: this package holds how SQLite runs a statement (the writer
// and the reader pool, with one row collector, queryRows) and the
// transactions of its own (the metasql.Driver methods, among them the
// read of one version and DeleteVersion, and ListObjects,
// ListObjectVersions, ListUploads, DeleteObject, CompleteUpload, AbortUpload, DeleteBucket,
// DeleteUser, DeleteAccessKey, GrowStaging, ReferencedBlobs).
//
// Every objects row is a version of its key (migrations 0017 and 0022,
// package meta's versions.go): its primary key is (bucket, key, seq), a
// key's versions newest first, so its latest version is its first row
// (one seek, no index of its own), a version that is not null is a seek
// of its seq (its version ID), and the null version is found among its
// key's rows (the only one in a bucket never versioned).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta/metasql"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Options tunes a Store. The zero value is ready to use.
type Options struct {
	// ReadConns is the size of the reader pool. Default 4.
	ReadConns int
	// MaxBatch is the most write operations committed in one transaction.
	// Default 256.
	MaxBatch int
	// QueueSize is how many write operations may wait for the writer before
	// callers block. Default 4 × MaxBatch.
	QueueSize int
	// Trace, if not nil, traces every metadata operation (the server's
	// tracing.MetaHook when tracing is on; metasql.Traced).
	Trace metasql.Trace
	// Observe, if set, times every metadata operation (the server's
	// coffer_meta_op_duration_seconds; metasql.Traced).
	Observe metasql.Observe
	// BusyTimeout is how long a connection waits for a lock held by another
	// process before it fails with Unavailable. Default 5s.
	BusyTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.ReadConns <= 0 {
		o.ReadConns = 4
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 4 * o.MaxBatch
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	return o
}

// Store is the metadata store (every role of meta.Stores) on a SQLite database file. It is safe for
// concurrent use.
type Store struct {
	// Ops are the operations of one statement: reads on the reader
	// pool, writes on the writer.
	metasql.Ops

	opts    Options
	path    string     // the database file
	readers *sql.DB    // query-only pool
	rstmts  *readStmts // statements prepared on readers
	wdb     *sql.DB    // holds the one writer connection
	wconn   *conn      // the writer connection, used only by the writer goroutine

	mu      sync.RWMutex // guards closing against enqueueing
	closing bool
	closed  atomic.Bool // set once Close has begun; checked by reads
	queue   chan *op
	stopped chan struct{} // closed when the writer goroutine has exited

	// Counters of the writer, for tests and benchmarks.
	batches atomic.Int64 // committed or failed batches that ran at least one op
	ops     atomic.Int64 // ops run in those batches
}

// Open opens (creating if needed) the database at path, applies pending
// migrations and starts the writer.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errcode.New(errcode.InvalidArgument, "sqlite: empty database path")
	}
	if err := prepareFiles(path); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	busy := fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds())

	// secure_delete: the bytes of deleted rows (an inline object
	// overwritten or deleted, or re-written encrypted by coffer encrypt)
	// are zeroed, not left in free pages of meta.db (once checkpointed).
	wdb, err := sql.Open("sqlite", dsn(path, busy, "foreign_keys(ON)", "journal_mode(WAL)", "synchronous(FULL)", "secure_delete(ON)"))
	if err != nil {
		return nil, errcode.Wrap(errcode.Unavailable, err, "sqlite: open %s", path)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	raw, err := wdb.Conn(ctx)
	if err != nil {
		wdb.Close()
		return nil, classify(err, "sqlite: open %s", path)
	}
	if err := checkJournalMode(ctx, raw); err != nil {
		raw.Close()
		wdb.Close()
		return nil, err
	}
	if err := migrate(ctx, raw, time.Now); err != nil {
		raw.Close()
		wdb.Close()
		return nil, err
	}

	readers, err := sql.Open("sqlite", dsn(path, busy, "foreign_keys(ON)", "query_only(1)", "synchronous(FULL)"))
	if err != nil {
		raw.Close()
		wdb.Close()
		return nil, errcode.Wrap(errcode.Unavailable, err, "sqlite: open %s", path)
	}
	readers.SetMaxOpenConns(opts.ReadConns)
	readers.SetMaxIdleConns(opts.ReadConns)
	if err := readers.PingContext(ctx); err != nil {
		readers.Close()
		raw.Close()
		wdb.Close()
		return nil, classify(err, "sqlite: open %s", path)
	}

	s := &Store{
		opts:    opts,
		path:    path,
		readers: readers,
		rstmts:  &readStmts{db: readers},
		wdb:     wdb,
		wconn:   newConn(raw),
		queue:   make(chan *op, opts.QueueSize),
		stopped: make(chan struct{}),
	}
	s.Ops = metasql.NewOps(metasql.Traced(driver{s}, opts.Trace, opts.Observe), dialect)
	for _, q := range txReadQueries() {
		if _, err := s.rstmts.get(ctx, q); err != nil {
			s.Close()
			return nil, classify(err, "sqlite: prepare %q", q)
		}
	}
	go s.loop()
	return s, nil
}

// prepareFiles creates the database file with mode 0600 if it does not
// exist — SQLite would make it 0644 whatever the umask, and gives the -wal
// and -shm files the main file's mode — and takes group and other access
// away from the database files that already exist.
func prepareFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return errcode.Wrap(errcode.Unavailable, err, "sqlite: open %s", path)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return errcode.Wrap(errcode.Unavailable, err, "sqlite: stat %s", p)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			if err := os.Chmod(p, perm&^0o077); err != nil {
				return errcode.Wrap(errcode.Unavailable, err, "sqlite: restrict the mode of %s", p)
			}
		}
	}
	return nil
}

// dsn builds a driver DSN for path with the given pragmas. The path is sent
// as a file: URI so that any character in it is taken literally.
func dsn(path string, pragmas ...string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	q := url.Values{"_pragma": pragmas}
	return "file:" + r.Replace(path) + "?" + q.Encode()
}

// checkJournalMode fails unless the database really is in WAL mode (a
// read-only medium or an in-memory database silently refuses it).
func checkJournalMode(ctx context.Context, c *sql.Conn) error {
	var mode string
	if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return classify(err, "sqlite: read journal mode")
	}
	if !strings.EqualFold(mode, "wal") {
		return errcode.New(errcode.Internal, "sqlite: journal mode is %q, want wal", mode)
	}
	return nil
}

// Ping checks the database answers and the writer is running.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	var one int
	if err := s.readers.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return classify(err, "sqlite: ping")
	}
	return nil
}

// Close stops accepting writes, lets the writer finish every queued
// operation, and closes the database. Calling it again returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		<-s.stopped
		return nil
	}
	s.closing = true
	s.closed.Store(true)
	close(s.queue)
	s.mu.Unlock()
	<-s.stopped

	err := errors.Join(s.wconn.close(), s.wconn.raw.Close(), s.wdb.Close(), s.rstmts.close(), s.readers.Close())
	if err != nil {
		return errcode.Wrap(errcode.Unknown, err, "sqlite: close")
	}
	return nil
}

// read returns the querier of the reader pool.
func (s *Store) read() reader { return reader{stmts: s.rstmts} }

var errClosed = errcode.New(errcode.Unavailable, "sqlite: store is closed")

// ReleaseMemory frees the page caches of every connection (PRAGMA
// shrink_memory): what a burst of queries filled and an idle node does
// not need; the next query reads its pages from the file again (the OS's
// page cache, mostly). A connection in use is not waited for.
func (s *Store) ReleaseMemory(ctx context.Context) error {
	var errs []error
	// The readers: every idle connection of the pool, each held until all
	// are taken, so that no connection is shrunk twice.
	var held []*sql.Conn
	for range s.opts.ReadConns {
		if s.readers.Stats().Idle == 0 {
			break
		}
		c, err := s.readers.Conn(ctx)
		if err != nil {
			errs = append(errs, err)
			break
		}
		held = append(held, c)
		if _, err := c.ExecContext(ctx, "PRAGMA shrink_memory"); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range held {
		c.Close()
	}
	// The writer, in its own goroutine (an empty transaction: no write,
	// no fsync).
	errs = append(errs, s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.raw.ExecContext(ctx, "PRAGMA shrink_memory")
		return err
	}))
	if err := errors.Join(errs...); err != nil {
		return classify(err, "sqlite: shrink memory")
	}
	return nil
}

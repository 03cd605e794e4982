package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/coffer-storage/coffer/internal/errcode"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// opFunc is one write operation. It runs on the writer connection inside a
// transaction and a savepoint of its own; it must not begin, commit or roll
// back. Returning an error rolls back its changes, unless the error is
// wrapped with keep.
type opFunc func(ctx context.Context, c *conn) error

// conn is the dedicated writer *sql.Conn as operations see it. Statements
// are prepared once and reused: parsing SQL is most of the writer's CPU
// time otherwise. Only the writer goroutine uses it.
type conn struct {
	raw   *sql.Conn
	stmts map[string]*sql.Stmt
}

// maxStmts bounds the statement cache; further statements run uncached.
const maxStmts = 128

func newConn(raw *sql.Conn) *conn { return &conn{raw: raw, stmts: map[string]*sql.Stmt{}} }

// stmt returns the prepared statement for query, or nil if the cache is
// full.
func (c *conn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := c.stmts[query]; ok {
		return st, nil
	}
	if len(c.stmts) >= maxStmts {
		return nil, nil
	}
	st, err := c.raw.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = st
	return st, nil
}

// ExecContext runs a statement that returns no rows.
func (c *conn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return c.raw.ExecContext(ctx, query, args...)
	}
	return st.ExecContext(ctx, args...)
}

// QueryContext runs a query.
func (c *conn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return c.raw.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs a query expected to return at most one row.
func (c *conn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := c.stmt(ctx, query)
	if err != nil || st == nil {
		// Uncached; a preparation error surfaces again from Scan.
		return c.raw.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// close releases the prepared statements.
func (c *conn) close() error {
	var errs []error
	for _, st := range c.stmts {
		errs = append(errs, st.Close())
	}
	clear(c.stmts)
	return errors.Join(errs...)
}

// op states.
const (
	opQueued    int32 = iota
	opStarted         // the writer took it; its caller waits for the result
	opAbandoned       // its caller gave up before it started; the writer skips it
)

type op struct {
	ctx   context.Context
	fn    opFunc
	state atomic.Int32
	err   error         // the result, set before done is closed
	done  chan struct{} // closed when err is final
}

// keepError is an operation error whose changes are committed anyway (e.g.
// revoking a token family while reporting the reuse that caused it).
type keepError struct{ err error }

func (e *keepError) Error() string { return e.err.Error() }
func (e *keepError) Unwrap() error { return e.err }

// keep returns err such that the operation's changes are committed and err
// is still reported to its caller.
func keep(err error) error { return &keepError{err} }

// write queues fn for the writer and waits for the outcome: nil means fn ran
// and its transaction committed durably.
func (s *Store) write(ctx context.Context, fn opFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := &op{ctx: ctx, fn: fn, done: make(chan struct{})}
	s.mu.RLock()
	if s.closing {
		s.mu.RUnlock()
		return errClosed
	}
	select {
	case s.queue <- o:
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	s.mu.RUnlock()

	select {
	case <-o.done:
		return o.err
	case <-ctx.Done():
		if o.state.CompareAndSwap(opQueued, opAbandoned) {
			return ctx.Err()
		}
		// It is running: its outcome is whatever the batch's is.
		<-o.done
		return o.err
	}
}

// loop is the writer goroutine. It exits when the queue is closed and
// drained.
func (s *Store) loop() {
	defer close(s.stopped)
	batch := make([]*op, 0, s.opts.MaxBatch)
	for o := range s.queue {
		batch = append(batch, o)
	fill:
		for len(batch) < s.opts.MaxBatch {
			select {
			case o, ok := <-s.queue:
				if !ok {
					break fill
				}
				batch = append(batch, o)
			default:
				break fill
			}
		}
		s.runBatch(batch)
		clear(batch)
		batch = batch[:0]
	}
}

// runBatch runs the ops of batch in one transaction and reports each
// outcome after the COMMIT. An op is started (and can no longer be
// abandoned by its caller) only when its turn comes.
func (s *Store) runBatch(batch []*op) {
	ctx := context.Background()
	var ran []*op // ops that ran in the transaction; their outcome waits for COMMIT
	defer func() {
		for _, o := range ran {
			close(o.done)
		}
	}()
	// fail reports err to ran and to the ops not started yet, from i on.
	fail := func(err error, i int) {
		for _, o := range ran {
			o.err = err
		}
		for _, o := range batch[i:] {
			if o.state.CompareAndSwap(opQueued, opStarted) {
				o.err = err
			}
			close(o.done)
		}
	}

	for i, o := range batch {
		if !o.state.CompareAndSwap(opQueued, opStarted) {
			close(o.done) // abandoned: nobody waits
			continue
		}
		if err := o.ctx.Err(); err != nil {
			o.err = err
			close(o.done)
			continue
		}
		if len(ran) == 0 {
			if _, err := s.wconn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
				o.err = classify(err, "sqlite: begin")
				close(o.done)
				fail(o.err, i+1)
				return
			}
			s.batches.Add(1)
		}
		ran = append(ran, o)
		s.ops.Add(1)
		if err := s.runOne(ctx, o); err != nil {
			// The transaction is in an unknown state: give up the batch.
			s.rollback(ctx)
			fail(unavailable(err, "sqlite: write batch failed"), i+1)
			return
		}
	}
	if len(ran) == 0 {
		return
	}
	if _, err := s.wconn.ExecContext(ctx, "COMMIT"); err != nil {
		s.rollback(ctx)
		fail(unavailable(err, "sqlite: commit failed"), len(batch))
	}
}

// runOne runs o inside a savepoint and sets o.err. It returns an error only
// if the savepoint itself could not be managed.
func (s *Store) runOne(ctx context.Context, o *op) error {
	if _, err := s.wconn.ExecContext(ctx, "SAVEPOINT op"); err != nil {
		return err
	}
	err := call(context.WithoutCancel(o.ctx), s.wconn, o.fn)
	var k *keepError
	if err != nil && !errors.As(err, &k) {
		if _, rerr := s.wconn.ExecContext(ctx, "ROLLBACK TO op"); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	if _, rerr := s.wconn.ExecContext(ctx, "RELEASE op"); rerr != nil {
		return errors.Join(err, rerr)
	}
	if k != nil {
		err = k.err
	}
	o.err = err
	return nil
}

// call runs fn, turning a panic into an Internal error so that one bad
// operation cannot take the writer down.
func call(ctx context.Context, c *conn, fn opFunc) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errcode.Wrap(errcode.Internal, fmt.Errorf("panic: %v", r), "sqlite: write operation panicked")
		}
	}()
	return fn(ctx, c)
}

// rollback ends the open transaction, if any.
func (s *Store) rollback(ctx context.Context) {
	// An error means there was no transaction left to roll back (SQLite
	// already did), which is the state we want.
	_, _ = s.wconn.ExecContext(ctx, "ROLLBACK")
}

// unavailable wraps a failure of the batch machinery: StorageFull when the
// disk is full (SQLITE_FULL, from an operation's statement or the COMMIT
// that appends to the WAL), Unavailable otherwise.
func unavailable(err error, msg string) error {
	var se *sqlite.Error
	if errcode.Is(err, errcode.StorageFull) || (errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL) {
		return errcode.Wrap(errcode.StorageFull, err, "%s: disk full", msg)
	}
	return errcode.Wrap(errcode.Unavailable, err, "%s", msg)
}

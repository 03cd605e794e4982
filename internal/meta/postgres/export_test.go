package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// AcquireRaw takes a connection from the store's pool, bypassing
// AcquireTimeout, for tests that exhaust the pool.
func (s *Store) AcquireRaw(ctx context.Context) (*pgxpool.Conn, error) { return s.pool.Acquire(ctx) }

// ExecRaw runs sql on a pool connection the way the store's reads do, with
// its error classification.
func (s *Store) ExecRaw(ctx context.Context, sql string) error {
	return s.read(ctx, "test statement", func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, sql)
		return err
	})
}

// SetListenDial makes the store dial its listening connection with dial
// (a proxy that can cut it silently). Call it before ListenChanges.
func (s *Store) SetListenDial(dial pgconn.DialFunc) { s.listenDial = dial }

// ListenerPID is the server process of the store's listening connection
// (0 before it first listened).
func (s *Store) ListenerPID() uint32 { return s.acks.pid.Load() }

// RawDecodable is rawDecodable (listrows.go).
func RawDecodable(fields []pgconn.FieldDescription, versions bool) bool {
	return rawDecodable(fields, versions)
}

// ListScanSQL is a listing's range scan (bounded, from inclusive):
// $1 bucket, $2 from, $3 limit, $4 end.
var ListScanSQL = sq.RangeScans[1][1]

// SkipScanSQL is a listing's skip scan (list.go), [inclusive][bounded].
var SkipScanSQL = skipScans

package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// The background jobs of encryption at rest (meta.KMSJobStore); the SQL is
// metasql's. Object keys are bytea here. Of concurrent AcquireKMSJob
// calls, the second waits for the first's row lock and then re-checks the
// lease on the row as updated (READ COMMITTED): it finds it taken.

func byteaKey(k string) any { return key(k) }

// StartKMSJob implements meta.Store.
func (s *Store) StartKMSJob(ctx context.Context, j meta.KMSJob) (meta.KMSJob, error) {
	if err := meta.ValidKMSJob(j); err != nil {
		return meta.KMSJob{}, err
	}
	var out meta.KMSJob
	err := s.write(ctx, "start job", func(t *txn) error {
		t.queryRow(func(r pgx.Row) (err error) {
			out, err = metasql.ScanKMSJob(r)
			return err
		}, metasql.StartKMSJobSQL(dollar), j.Name, j.Kind, j.Bucket, metasql.Millis(time.Now()))
		return nil
	})
	return out, err
}

// GetKMSJob implements meta.Store.
func (s *Store) GetKMSJob(ctx context.Context, name string) (meta.KMSJob, error) {
	var j meta.KMSJob
	err := s.queryRow(ctx, "get job", func(r pgx.Row) (err error) {
		j, err = metasql.ScanKMSJob(r)
		if errors.Is(err, pgx.ErrNoRows) {
			return meta.ErrNoKMSJob(name)
		}
		return err
	}, "SELECT "+metasql.KMSJobCols+" FROM kms_jobs WHERE name = $1", name)
	return j, err
}

// ListKMSJobs implements meta.Store.
func (s *Store) ListKMSJobs(ctx context.Context) ([]meta.KMSJob, error) {
	var out []meta.KMSJob
	err := s.read(ctx, "list jobs", func(c *pgx.Conn) error {
		out = nil
		rows, err := c.Query(ctx, "SELECT "+metasql.KMSJobCols+" FROM kms_jobs ORDER BY name")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			j, err := metasql.ScanKMSJob(rows)
			if err != nil {
				return err
			}
			out = append(out, j)
		}
		return rows.Err()
	})
	return out, err
}

// AcquireKMSJob implements meta.Store.
func (s *Store) AcquireKMSJob(ctx context.Context, owner string, until, now time.Time) (meta.KMSJob, bool, error) {
	var (
		out meta.KMSJob
		ok  bool
	)
	err := s.write(ctx, "acquire job", func(t *txn) error {
		ok = false
		t.queryRow(func(r pgx.Row) (err error) {
			out, err = metasql.ScanKMSJob(r)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			ok = err == nil
			return err
		}, metasql.AcquireKMSJobSQL(dollar), owner, metasql.Millis(until), metasql.Millis(now))
		return nil
	})
	return out, ok, err
}

// SaveKMSJob implements meta.Store.
func (s *Store) SaveKMSJob(ctx context.Context, j meta.KMSJob, owner string, until, now time.Time) error {
	if err := meta.CheckKMSJobSave(j); err != nil {
		return err
	}
	return s.write(ctx, "save job", func(t *txn) error {
		t.execN(mustAffect(meta.ErrJobLeaseLost(j.Name)), metasql.SaveKMSJobSQL(dollar), metasql.SaveKMSJobArgs(j, owner, until, now)...)
		return nil
	})
}

// ListEnvelopes implements meta.Store.
func (s *Store) ListEnvelopes(ctx context.Context, table meta.EnvelopeTable, after *meta.EnvelopeRef, kekNot string, limit int) ([]meta.EnvelopeRow, error) {
	if err := meta.CheckEnvelopeTable(table); err != nil {
		return nil, err
	}
	args := []any{kekNot, meta.PageLimit(limit, 1000, 1000)}
	if after != nil {
		args = append(args, metasql.KeysetArgs(*after, byteaKey)...)
	}
	var out []meta.EnvelopeRow
	err := s.read(ctx, "list envelopes", func(c *pgx.Conn) error {
		out = nil
		rows, err := c.Query(ctx, metasql.ListEnvelopesSQL(table, after != nil, dollar), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := metasql.ScanEnvelopeRow(table, rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

// SwapEnvelope implements meta.Store.
func (s *Store) SwapEnvelope(ctx context.Context, ref meta.EnvelopeRef, old, env []byte, kek string) (bool, error) {
	if err := meta.CheckEnvelopeTable(ref.Table); err != nil {
		return false, err
	}
	var swapped bool
	err := s.write(ctx, "swap envelope", func(t *txn) error {
		args := append([]any{env, kek}, metasql.KeysetArgs(ref, byteaKey)...)
		t.execN(func(n int64) error { swapped = n == 1; return nil }, metasql.SwapEnvelopeSQL(ref.Table, dollar), append(args, old)...)
		return nil
	})
	return swapped, err
}

// KEKUsage implements meta.Store.
func (s *Store) KEKUsage(ctx context.Context) (map[string]int64, error) {
	var out map[string]int64
	err := s.read(ctx, "count keys", func(c *pgx.Conn) error {
		out = map[string]int64{}
		rows, err := c.Query(ctx, metasql.KEKUsageSQL)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var kek string
			var n int64
			if err := rows.Scan(&kek, &n); err != nil {
				return err
			}
			out[kek] += n
		}
		return rows.Err()
	})
	return out, err
}

// ListPlaintextObjects implements meta.Store.
func (s *Store) ListPlaintextObjects(ctx context.Context, bucket string, after *meta.EnvelopeRef, limit int) ([]meta.EnvelopeRef, error) {
	var out []meta.EnvelopeRef
	err := s.read(ctx, "list plaintext objects", func(c *pgx.Conn) error {
		out = nil
		rows, err := c.Query(ctx, metasql.ListPlaintextObjectsSQL(bucket != "", after != nil, dollar),
			metasql.ListPlaintextObjectsArgs(bucket, after, meta.PageLimit(limit, 1000, 1000), byteaKey)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var b string
			var k []byte
			if err := rows.Scan(&b, &k); err != nil {
				return err
			}
			out = append(out, meta.EnvelopeRef{Table: meta.EnvelopeObjects, Bucket: b, Key: string(k)})
		}
		return rows.Err()
	})
	return out, err
}

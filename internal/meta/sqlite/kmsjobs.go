package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// The background jobs of encryption at rest (meta.KMSJobStore); the SQL is
// metasql's. Object keys are TEXT here.

func textKey(k string) any { return k }

// StartKMSJob implements meta.Store.
func (s *Store) StartKMSJob(ctx context.Context, j meta.KMSJob) (meta.KMSJob, error) {
	if err := meta.ValidKMSJob(j); err != nil {
		return meta.KMSJob{}, err
	}
	var out meta.KMSJob
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		var err error
		out, err = metasql.ScanKMSJob(c.QueryRowContext(ctx, metasql.StartKMSJobSQL(q), j.Name, j.Kind, j.Bucket, metasql.Millis(time.Now())))
		return classify(err, "start job %q", j.Name)
	})
	return out, err
}

// GetKMSJob implements meta.Store.
func (s *Store) GetKMSJob(ctx context.Context, name string) (meta.KMSJob, error) {
	if err := s.ready(); err != nil {
		return meta.KMSJob{}, err
	}
	j, err := metasql.ScanKMSJob(s.read().QueryRowContext(ctx, "SELECT "+metasql.KMSJobCols+" FROM kms_jobs WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) {
		return meta.KMSJob{}, meta.ErrNoKMSJob(name)
	}
	return j, classify(err, "get job %q", name)
}

// ListKMSJobs implements meta.Store.
func (s *Store) ListKMSJobs(ctx context.Context) ([]meta.KMSJob, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	rows, err := s.read().QueryContext(ctx, "SELECT "+metasql.KMSJobCols+" FROM kms_jobs ORDER BY name")
	if err != nil {
		return nil, classify(err, "list jobs")
	}
	defer rows.Close()
	var out []meta.KMSJob
	for rows.Next() {
		j, err := metasql.ScanKMSJob(rows)
		if err != nil {
			return nil, classify(err, "list jobs")
		}
		out = append(out, j)
	}
	return out, classify(rows.Err(), "list jobs")
}

// AcquireKMSJob implements meta.Store.
func (s *Store) AcquireKMSJob(ctx context.Context, owner string, until, now time.Time) (meta.KMSJob, bool, error) {
	var (
		out meta.KMSJob
		ok  bool
	)
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		var err error
		out, err = metasql.ScanKMSJob(c.QueryRowContext(ctx, metasql.AcquireKMSJobSQL(q), owner, metasql.Millis(until), metasql.Millis(now)))
		ok = err == nil
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return classify(err, "acquire job")
	})
	return out, ok, err
}

// SaveKMSJob implements meta.Store.
func (s *Store) SaveKMSJob(ctx context.Context, j meta.KMSJob, owner string, until, now time.Time) error {
	if err := meta.CheckKMSJobSave(j); err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, metasql.SaveKMSJobSQL(q), metasql.SaveKMSJobArgs(j, owner, until, now)...)
		if err != nil {
			return classify(err, "save job %q", j.Name)
		}
		return mustAffect(res, meta.ErrJobLeaseLost(j.Name))
	})
}

// ListEnvelopes implements meta.Store.
func (s *Store) ListEnvelopes(ctx context.Context, table meta.EnvelopeTable, after *meta.EnvelopeRef, kekNot string, limit int) ([]meta.EnvelopeRow, error) {
	if err := meta.CheckEnvelopeTable(table); err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	args := []any{kekNot, meta.PageLimit(limit, 1000, 1000)}
	if after != nil {
		args = append(args, metasql.KeysetArgs(*after, textKey)...)
	}
	rows, err := s.read().QueryContext(ctx, metasql.ListEnvelopesSQL(table, after != nil, q), args...)
	if err != nil {
		return nil, classify(err, "list envelopes")
	}
	defer rows.Close()
	var out []meta.EnvelopeRow
	for rows.Next() {
		r, err := metasql.ScanEnvelopeRow(table, rows)
		if err != nil {
			return nil, classify(err, "list envelopes")
		}
		out = append(out, r)
	}
	return out, classify(rows.Err(), "list envelopes")
}

// SwapEnvelope implements meta.Store.
func (s *Store) SwapEnvelope(ctx context.Context, ref meta.EnvelopeRef, old, env []byte, kek string) (bool, error) {
	if err := meta.CheckEnvelopeTable(ref.Table); err != nil {
		return false, err
	}
	var swapped bool
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		args := append([]any{env, kek}, metasql.KeysetArgs(ref, textKey)...)
		res, err := c.ExecContext(ctx, metasql.SwapEnvelopeSQL(ref.Table, q), append(args, old)...)
		if err != nil {
			return classify(err, "swap envelope")
		}
		n, err := res.RowsAffected()
		swapped = n == 1
		return classify(err, "swap envelope")
	})
	return swapped, err
}

// KEKUsage implements meta.Store.
func (s *Store) KEKUsage(ctx context.Context) (map[string]int64, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	rows, err := s.read().QueryContext(ctx, metasql.KEKUsageSQL)
	if err != nil {
		return nil, classify(err, "count keys")
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var kek string
		var n int64
		if err := rows.Scan(&kek, &n); err != nil {
			return nil, classify(err, "count keys")
		}
		out[kek] += n
	}
	return out, classify(rows.Err(), "count keys")
}

// ListPlaintextObjects implements meta.Store.
func (s *Store) ListPlaintextObjects(ctx context.Context, bucket string, after *meta.EnvelopeRef, limit int) ([]meta.EnvelopeRef, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	rows, err := s.read().QueryContext(ctx, metasql.ListPlaintextObjectsSQL(bucket != "", after != nil, q),
		metasql.ListPlaintextObjectsArgs(bucket, after, meta.PageLimit(limit, 1000, 1000), textKey)...)
	if err != nil {
		return nil, classify(err, "list plaintext objects")
	}
	defer rows.Close()
	var out []meta.EnvelopeRef
	for rows.Next() {
		var b string
		var k []byte
		if err := rows.Scan(&b, &k); err != nil {
			return nil, classify(err, "list plaintext objects")
		}
		out = append(out, meta.EnvelopeRef{Table: meta.EnvelopeObjects, Bucket: b, Key: string(k)})
	}
	return out, classify(rows.Err(), "list plaintext objects")
}

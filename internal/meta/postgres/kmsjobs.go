package postgres

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// The background jobs of encryption at rest (meta.KMSJobStore); the SQL is
// metasql's. Object keys are bytea here. Of concurrent AcquireKMSJob
// calls, the second waits for the first's row lock and then re-checks the
// lease on the row as updated (READ COMMITTED): it finds it taken.

var (
	startKMSJobSQL   = metasql.StartKMSJobSQL(ph)
	getKMSJobSQL     = metasql.GetKMSJobSQL(ph)
	acquireKMSJobSQL = metasql.AcquireKMSJobSQL(ph)
	saveKMSJobSQL    = metasql.SaveKMSJobSQL(ph)
)

// StartKMSJob implements meta.Store.
func (s *Store) StartKMSJob(ctx context.Context, j meta.KMSJob) (meta.KMSJob, error) {
	if err := meta.ValidKMSJob(j); err != nil {
		return meta.KMSJob{}, err
	}
	var out meta.KMSJob
	err := s.write(ctx, "start job", func(t *txn) error {
		queueGet(t, &out, metasql.ScanKMSJob, nil, startKMSJobSQL, j.Name, j.Kind, j.Bucket, metasql.Millis(time.Now()))
		return nil
	})
	return out, err
}

// GetKMSJob implements meta.Store.
func (s *Store) GetKMSJob(ctx context.Context, name string) (meta.KMSJob, error) {
	return get(ctx, s, "get job", metasql.ScanKMSJob, meta.ErrNoKMSJob(name), getKMSJobSQL, name)
}

// ListKMSJobs implements meta.Store.
func (s *Store) ListKMSJobs(ctx context.Context) ([]meta.KMSJob, error) {
	return list(ctx, s, "list jobs", metasql.ScanKMSJob, metasql.ListKMSJobsSQL)
}

// AcquireKMSJob implements meta.Store.
func (s *Store) AcquireKMSJob(ctx context.Context, owner string, until, now time.Time) (meta.KMSJob, bool, error) {
	var (
		out meta.KMSJob
		ok  bool
	)
	err := s.write(ctx, "acquire job", func(t *txn) error {
		queueRow(t, &out, &ok, metasql.ScanKMSJob, acquireKMSJobSQL, owner, metasql.Millis(until), metasql.Millis(now))
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
		t.execN(mustAffect(meta.ErrJobLeaseLost(j.Name)), saveKMSJobSQL, metasql.SaveKMSJobArgs(j, owner, until, now)...)
		return nil
	})
}

// ListEnvelopes implements meta.Store.
func (s *Store) ListEnvelopes(ctx context.Context, table meta.EnvelopeTable, after *meta.EnvelopeRef, kekNot string, limit int) ([]meta.EnvelopeRow, error) {
	if err := meta.CheckEnvelopeTable(table); err != nil {
		return nil, err
	}
	return list(ctx, s, "list envelopes", metasql.ScanEnvelopeRow(table), metasql.ListEnvelopesSQL(table, after != nil, ph),
		metasql.ListEnvelopesArgs(after, kekNot, meta.PageLimit(limit, 1000, 1000), key)...)
}

// SwapEnvelope implements meta.Store.
func (s *Store) SwapEnvelope(ctx context.Context, ref meta.EnvelopeRef, old, env []byte, kek string) (bool, error) {
	if err := meta.CheckEnvelopeTable(ref.Table); err != nil {
		return false, err
	}
	var n int64
	err := s.write(ctx, "swap envelope", func(t *txn) error {
		t.execN(affected(&n), metasql.SwapEnvelopeSQL(ref.Table, ph), metasql.SwapEnvelopeArgs(ref, old, env, kek, key)...)
		return nil
	})
	return n == 1, err
}

// KEKUsage implements meta.Store.
func (s *Store) KEKUsage(ctx context.Context) (map[string]int64, error) {
	counts, err := list(ctx, s, "count keys", metasql.ScanKEKCount, metasql.KEKUsageSQL)
	if err != nil {
		return nil, err
	}
	return metasql.KEKTotals(counts), nil
}

// ListPlaintextObjects implements meta.Store.
func (s *Store) ListPlaintextObjects(ctx context.Context, bucket string, after *meta.EnvelopeRef, limit int) ([]meta.EnvelopeRef, error) {
	return list(ctx, s, "list plaintext objects", metasql.ScanPlaintextRef, metasql.ListPlaintextObjectsSQL(bucket != "", after != nil, ph),
		metasql.ListPlaintextObjectsArgs(bucket, after, meta.PageLimit(limit, 1000, 1000), key)...)
}

package metasql

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// The kms_jobs statements and the envelope scans both backends run
// (migration 0012, meta.EncryptionJobs). ph gives the n-th (1-based)
// placeholder of the dialect. Times are Unix milliseconds.

// jobCols are the columns of meta.EncryptionJob, in scanJob's order.
const jobCols = "name, kind, bucket, state, generation, phase, cursor, pass, pass_changed, done, skipped, failed, last_error, lease_owner, lease_until, created_at, updated_at, finished_at"

// scanJob scans a row of jobCols.
func scanJob(r Row) (meta.EncryptionJob, error) {
	var (
		j                        meta.EncryptionJob
		phase                    int64
		until, cr, upd, finished int64
	)
	err := r.Scan(&j.Name, &j.Kind, &j.Bucket, &j.State, &j.Generation, &phase, &j.Cursor, &j.Pass, &j.PassChanged,
		&j.Done, &j.Skipped, &j.Failed, &j.LastError, &j.LeaseOwner, &until, &cr, &upd, &finished)
	j.Phase = meta.EnvelopeTable(phase)
	j.LeaseUntil, j.CreatedAt, j.UpdatedAt = fromMillis(until), fromMillis(cr), fromMillis(upd)
	j.FinishedAt = fromMillis(finished)
	return j, err
}

// startJobSQL creates or restarts a job: args name, kind, bucket, now;
// returns jobCols.
func startJobSQL(ph PH) string {
	return fmt.Sprintf(`INSERT INTO kms_jobs (name, kind, bucket, state, created_at, updated_at) VALUES (%[1]s, %[2]s, %[3]s, 'running', %[4]s, %[4]s)
ON CONFLICT (name) DO UPDATE SET state = 'running', generation = kms_jobs.generation + 1, phase = 0, cursor = '', pass = 1,
	pass_changed = 0, done = 0, skipped = 0, failed = 0, last_error = '', created_at = excluded.created_at,
	updated_at = excluded.updated_at, finished_at = 0
RETURNING `+jobCols, ph(1), ph(2), ph(3), ph(4))
}

// acquireJobSQL leases the oldest running job free for owner: args
// owner, until, now; returns jobCols (no row: none).
func acquireJobSQL(ph PH) string {
	const free = "state = 'running' AND (lease_owner = %[1]s OR lease_owner = '' OR lease_until < %[3]s)"
	return fmt.Sprintf(`UPDATE kms_jobs SET lease_owner = %[1]s, lease_until = %[2]s
WHERE `+free+` AND name = (SELECT name FROM kms_jobs WHERE `+free+` ORDER BY created_at, name LIMIT 1)
RETURNING `+jobCols, ph(1), ph(2), ph(3))
}

// saveJobSQL records progress under the lease: args phase, cursor,
// pass, pass_changed, done, skipped, failed, last_error, done (1 = the
// job finished), until, now, name, generation, owner. The lease's end is
// not checked: a holder whose lease ran out is still lease_owner only if
// no other node took the job since (AcquireJob sets lease_owner), so
// nobody saved over its progress (meta.EncryptionJobs.SaveJob).
func saveJobSQL(ph PH) string {
	return fmt.Sprintf(`UPDATE kms_jobs SET phase = %s, cursor = %s, pass = %s, pass_changed = %s, done = %s, skipped = %s, failed = %s, last_error = %s,
	state = CASE WHEN %[9]s = 1 THEN 'done' ELSE 'running' END,
	lease_owner = CASE WHEN %[9]s = 1 THEN '' ELSE lease_owner END,
	lease_until = CASE WHEN %[9]s = 1 THEN 0 ELSE CAST(%[10]s AS BIGINT) END,
	finished_at = CASE WHEN %[9]s = 1 THEN CAST(%[11]s AS BIGINT) ELSE 0 END,
	updated_at = CAST(%[11]s AS BIGINT)
WHERE name = %[12]s AND generation = %[13]s AND lease_owner = %[14]s AND state = 'running'`,
		ph(1), ph(2), ph(3), ph(4), ph(5), ph(6), ph(7), ph(8), ph(9), ph(10), ph(11), ph(12), ph(13), ph(14))
}

// saveJobArgs are saveJobSQL's arguments.
func saveJobArgs(j meta.EncryptionJob, owner string, until, now time.Time) []any {
	fin := 0
	if j.State == meta.JobDone {
		fin = 1
	}
	return []any{int64(j.Phase), j.Cursor, j.Pass, j.PassChanged, j.Done, j.Skipped, j.Failed, j.LastError, fin,
		millis(until), millis(now), j.Name, j.Generation, owner}
}

// envelopeTables: the table, then its keyset columns.
var envelopeTables = map[meta.EnvelopeTable][]string{
	meta.EnvelopeObjects:     {"objects", "bucket", "key", "version_id"},
	meta.EnvelopeObjectParts: {"object_parts", "parts_id", "idx"},
	meta.EnvelopeUploadParts: {"upload_parts", "upload_id", "number"},
}

// keyset is the keyset columns of table t, comma-separated, and the list
// of the placeholders from ph(from) on.
func keyset(t meta.EnvelopeTable, from int, ph PH) (cols, args string) {
	c := envelopeTables[t][1:]
	return strings.Join(c, ", "), values(ph, from, from+len(c)-1)
}

// listEnvelopesSQL pages through table's rows under a KEK other than ”
// and args[0]: args kekNot, limit, then (with after) the cursor's keyset
// values. Returns the keyset columns, sse, sse_kek.
func listEnvelopesSQL(t meta.EnvelopeTable, after bool, ph PH) string {
	cols, args := keyset(t, 3, ph)
	cond := ""
	if after {
		cond = fmt.Sprintf(" AND (%s) > (%s)", cols, args)
	}
	return fmt.Sprintf("SELECT %[2]s, sse, sse_kek FROM %[1]s WHERE sse_kek <> '' AND sse_kek <> %[3]s%[4]s ORDER BY %[2]s LIMIT %[5]s",
		envelopeTables[t][0], cols, ph(1), cond, ph(2))
}

// keysetArgs are the keyset values of ref's table; key converts an
// object key for the dialect.
func keysetArgs(ref meta.EnvelopeRef, key func(string) any) []any {
	switch ref.Table {
	case meta.EnvelopeObjects:
		return []any{ref.Bucket, key(ref.Key), ref.VersionID}
	case meta.EnvelopeObjectParts:
		return []any{ref.PartsID, ref.Index}
	}
	return []any{ref.UploadID, ref.Number}
}

// scanEnvelopeRow returns the scanner of the rows of listEnvelopesSQL of
// table t.
func scanEnvelopeRow(t meta.EnvelopeTable) func(Row) (meta.EnvelopeRow, error) {
	return func(r Row) (meta.EnvelopeRow, error) {
		out := meta.EnvelopeRow{Ref: meta.EnvelopeRef{Table: t}}
		var err error
		switch t {
		case meta.EnvelopeObjects:
			var key []byte
			err = r.Scan(&out.Ref.Bucket, &key, &out.Ref.VersionID, &out.Envelope, &out.KEK)
			out.Ref.Key = string(key)
		case meta.EnvelopeObjectParts:
			err = r.Scan(&out.Ref.PartsID, &out.Ref.Index, &out.Envelope, &out.KEK)
		default:
			err = r.Scan(&out.Ref.UploadID, &out.Ref.Number, &out.Envelope, &out.KEK)
		}
		return out, err
	}
}

// swapEnvelopeSQL sets a row's envelope if it is still the old one: args
// sse, sse_kek, the keyset values, old sse.
func swapEnvelopeSQL(t meta.EnvelopeTable, ph PH) string {
	cols, args := keyset(t, 3, ph)
	n := len(envelopeTables[t])
	return fmt.Sprintf("UPDATE %s SET sse = %s, sse_kek = %s WHERE (%s) = (%s) AND sse = %s",
		envelopeTables[t][0], ph(1), ph(2), cols, args, ph(n+2))
}

// kekUsageSQL counts rows by KEK (scanKEKCount; one row per table and
// KEK: sum them).
const kekUsageSQL = `SELECT sse_kek, count(*) FROM objects WHERE sse_kek <> '' GROUP BY sse_kek
UNION ALL SELECT sse_kek, count(*) FROM object_parts WHERE sse_kek <> '' GROUP BY sse_kek
UNION ALL SELECT sse_kek, count(*) FROM upload_parts WHERE sse_kek <> '' GROUP BY sse_kek`

// listPlaintextObjectsSQL pages through plaintext object versions (no
// delete markers): args limit, then bucket (with one), then the cursor's
// bucket, key and version ID (with after). Returns bucket, key,
// version_id.
func listPlaintextObjectsSQL(oneBucket, after bool, ph PH) string {
	cond, n := "", 2
	if oneBucket {
		cond += fmt.Sprintf(" AND o.bucket = %s", ph(n))
		n++
	}
	if after {
		// The bound on (bucket, key) is a range of the primary key
		// (bucket, key, seq); a key's version IDs are then sorted. With
		// one bucket the cursor is a row of it (the job's own), so the
		// bound is on the key.
		bound := fmt.Sprintf("(o.bucket, o.key) >= (%s, %s)", ph(n), ph(n+1))
		if oneBucket {
			bound = "o.key >= " + ph(n+1)
		}
		cond += fmt.Sprintf(" AND %s AND (o.bucket, o.key, o.version_id) > (%s, %s, %s)", bound, ph(n), ph(n+1), ph(n+2))
	}
	return fmt.Sprintf(`SELECT o.bucket, o.key, o.version_id FROM objects o WHERE o.sse IS NULL AND NOT o.delete_marker%s
	AND NOT EXISTS (SELECT 1 FROM object_parts p WHERE p.parts_id = o.parts_id AND p.sse IS NOT NULL)
	ORDER BY o.bucket, o.key, o.version_id LIMIT %s`, cond, ph(1))
}

// listPlaintextObjectsArgs are listPlaintextObjectsSQL's arguments.
func listPlaintextObjectsArgs(bucket string, after *meta.EnvelopeRef, limit int, key func(string) any) []any {
	args := []any{limit}
	if bucket != "" {
		args = append(args, bucket)
	}
	if after != nil {
		args = append(args, after.Bucket, key(after.Key), after.VersionID)
	}
	return args
}

// kekCount is a row of kekUsageSQL: how many rows of a table are under a
// KEK.
type kekCount struct {
	KEK  string
	Rows int64
}

// scanKEKCount reads a row of kekUsageSQL.
func scanKEKCount(r Row) (kekCount, error) {
	var c kekCount
	err := r.Scan(&c.KEK, &c.Rows)
	return c, err
}

// kekTotals sums the counts of each KEK.
func kekTotals(cs []kekCount) map[string]int64 {
	out := map[string]int64{}
	for _, c := range cs {
		out[c.KEK] += c.Rows
	}
	return out
}

// scanPlaintextRef reads a row of listPlaintextObjectsSQL.
func scanPlaintextRef(r Row) (meta.EnvelopeRef, error) {
	var key []byte
	ref := meta.EnvelopeRef{Table: meta.EnvelopeObjects}
	err := r.Scan(&ref.Bucket, &key, &ref.VersionID)
	ref.Key = string(key)
	return ref, err
}

// listJobsSQL lists every job by name (scanJob).
const listJobsSQL = "SELECT " + jobCols + " FROM kms_jobs ORDER BY name"

// swapEnvelopeArgs are swapEnvelopeSQL's arguments; key binds an object
// key in the dialect.
func swapEnvelopeArgs(ref meta.EnvelopeRef, old, env []byte, kek string, key func(string) any) []any {
	return append(append([]any{env, kek}, keysetArgs(ref, key)...), old)
}

// listEnvelopesArgs are listEnvelopesSQL's arguments.
func listEnvelopesArgs(after *meta.EnvelopeRef, kekNot string, limit int, key func(string) any) []any {
	args := []any{kekNot, limit}
	if after != nil {
		args = append(args, keysetArgs(*after, key)...)
	}
	return args
}

// GetJob implements meta.EncryptionJobs.
func (o jobOps) GetJob(ctx context.Context, name string) (meta.EncryptionJob, error) {
	return Get(ctx, o.run, "get job", scanJob, func() error { return meta.ErrNoJob(name) }, o.sql.jobs.get, name)
}

// ListJobs implements meta.EncryptionJobs.
func (o jobOps) ListJobs(ctx context.Context) ([]meta.EncryptionJob, error) {
	return List(ctx, o.run, "list jobs", scanJob, listJobsSQL)
}

// ListEnvelopes implements meta.EncryptionJobs.
func (o jobOps) ListEnvelopes(ctx context.Context, table meta.EnvelopeTable, after *meta.EnvelopeRef, kekNot string, limit int) ([]meta.EnvelopeRow, error) {
	if err := meta.CheckEnvelopeTable(table); err != nil {
		return nil, err
	}
	return List(ctx, o.run, "list envelopes", scanEnvelopeRow(table), listEnvelopesSQL(table, after != nil, o.sql.ph),
		listEnvelopesArgs(after, kekNot, meta.PageLimit(limit, 1000, 1000), o.key)...)
}

// KEKUsage implements meta.EncryptionJobs.
func (o jobOps) KEKUsage(ctx context.Context) (map[string]int64, error) {
	counts, err := List(ctx, o.run, "count keys", scanKEKCount, kekUsageSQL)
	if err != nil {
		return nil, err
	}
	return kekTotals(counts), nil
}

// ListPlaintextObjects implements meta.EncryptionJobs.
func (o jobOps) ListPlaintextObjects(ctx context.Context, bucket string, after *meta.EnvelopeRef, limit int) ([]meta.EnvelopeRef, error) {
	return List(ctx, o.run, "list plaintext objects", scanPlaintextRef, listPlaintextObjectsSQL(bucket != "", after != nil, o.sql.ph),
		listPlaintextObjectsArgs(bucket, after, meta.PageLimit(limit, 1000, 1000), o.key)...)
}

// StartJob implements meta.EncryptionJobs.
func (o jobOps) StartJob(ctx context.Context, j meta.EncryptionJob) (meta.EncryptionJob, error) {
	if err := meta.ValidJob(j); err != nil {
		return meta.EncryptionJob{}, err
	}
	out, _, err := writeGet(ctx, o.core, "start job", scanJob, o.sql.jobs.start, j.Name, j.Kind, j.Bucket, millis(time.Now()))
	return out, err
}

// AcquireJob implements meta.EncryptionJobs. Of concurrent calls, SQLite's
// single writer runs one at a time; in PostgreSQL the second waits for the
// first's row lock and then re-checks the lease on the row as updated
// (READ COMMITTED): it finds it taken.
func (o jobOps) AcquireJob(ctx context.Context, owner string, until, now time.Time) (meta.EncryptionJob, bool, error) {
	return writeGet(ctx, o.core, "acquire job", scanJob, o.sql.jobs.acquire, owner, millis(until), millis(now))
}

// SaveJob implements meta.EncryptionJobs.
func (o jobOps) SaveJob(ctx context.Context, j meta.EncryptionJob, owner string, until, now time.Time) error {
	if err := meta.CheckJobSave(j); err != nil {
		return err
	}
	return o.mustChange(ctx, "save job", meta.ErrJobLeaseLost(j.Name), o.sql.jobs.save, saveJobArgs(j, owner, until, now)...)
}

// SwapEnvelope implements meta.EncryptionJobs.
func (o jobOps) SwapEnvelope(ctx context.Context, ref meta.EnvelopeRef, old, env []byte, kek string) (bool, error) {
	if err := meta.CheckEnvelopeTable(ref.Table); err != nil {
		return false, err
	}
	n, err := o.run.Exec(ctx, "swap envelope", swapEnvelopeSQL(ref.Table, o.sql.ph), swapEnvelopeArgs(ref, old, env, kek, o.key), nil)
	return n == 1, err
}

// jobSQL are the kms_jobs statements of Ops.
type jobSQL struct {
	get, start, acquire, save string
}

func newJobSQL(ph PH) jobSQL {
	return jobSQL{
		get:     "SELECT " + jobCols + " FROM kms_jobs WHERE name = " + ph(1),
		start:   startJobSQL(ph),
		acquire: acquireJobSQL(ph),
		save:    saveJobSQL(ph),
	}
}

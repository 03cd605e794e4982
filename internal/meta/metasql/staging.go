package metasql

import (
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// The SQL below is common to both backends. Fragments take their operands
// as SQL expressions (a column, or a placeholder: "$2" in PostgreSQL, "?2"
// in SQLite), so that each backend binds them its own way. Booleans are
// used only as CASE conditions, which SQLite's 0/1 integers satisfy too.

// Referenced is the condition "a row points at blob k" (k must not be a
// bare column name, which the subqueries would resolve to their own
// tables' blob_key): an object, a part of a multipart object, a part of an
// upload in progress, an upload whose blob the backend assembles, or a
// staging. A staging counts whether live or expired, until a janitor
// deletes it: liveness is judged by clocks, and a node whose clock runs
// ahead must not take a blob whose writer still believes its lease live
// (the writer's commit and the staging's deletion then exclude each other
// on the staging row). The garbage queue does not count: this is the check
// made before a queued blob is deleted (and before one is queued). Every
// blob_key column is indexed.
func Referenced(k string) string {
	return "(EXISTS (SELECT 1 FROM objects WHERE blob_key = " + k + ")" +
		" OR EXISTS (SELECT 1 FROM object_parts WHERE blob_key = " + k + ")" +
		" OR EXISTS (SELECT 1 FROM upload_parts WHERE blob_key = " + k + ")" +
		" OR EXISTS (SELECT 1 FROM uploads WHERE blob_key = " + k + ")" +
		" OR EXISTS (SELECT 1 FROM staging WHERE blob_key = " + k + "))"
}

// ReferencedOrQueued is Referenced, or k waits in the garbage queue: what
// orphan collection must leave alone.
func ReferencedOrQueued(k string) string {
	return "(" + Referenced(k) + " OR EXISTS (SELECT 1 FROM garbage WHERE blob_key = " + k + "))"
}

// ClaimGarbageQuery lists up to limit queue entries enqueued before
// before, oldest first, each with whether a row points at its blob again
// (see Referenced). Columns: id, blob_key, created_at, referenced.
func ClaimGarbageQuery(before, limit string) string {
	return "SELECT g.id, g.blob_key, g.created_at, CASE WHEN " + Referenced("g.blob_key") + " THEN 1 ELSE 0 END FROM garbage g" +
		" WHERE g.created_at < " + before + " ORDER BY g.created_at, g.id LIMIT " + limit
}

// larger is the SQL of the larger of two expressions.
func larger(a, b string) string {
	return "CASE WHEN " + a + " > " + b + " THEN " + a + " ELSE " + b + " END"
}

const (
	declaredBytes = "SUM(CASE WHEN declared THEN bytes ELSE 0 END)"
	partBytes     = "SUM(CASE WHEN declared THEN 0 ELSE bytes END)"
)

// ReservedQuery reads what the stagings live at now reserve, per owner,
// for the owners that ownerCond (a condition on owner_id) selects: rows
// (owner_id, bytes); an owner without live stagings has no row. An
// object's staging reserves Bytes - Credit (at least 0); the stagings of one upload
// reserve together the larger of its declared bytes still due and the
// bytes of its parts in flight.
func ReservedQuery(ownerCond, now string) string {
	return "SELECT owner_id, CAST(SUM(r) AS bigint) FROM (SELECT owner_id, CASE WHEN upload_id = '' THEN SUM(" + larger("bytes - credit", "0") + ") ELSE " +
		larger(declaredBytes, partBytes) + " END AS r FROM staging WHERE " + ownerCond +
		" AND expires_at > " + now + " GROUP BY owner_id, upload_id) AS t GROUP BY owner_id"
}

// GroupQuery reads what the stagings of upload, live at now, other than
// key, reserve: the declared bytes still due, and the bytes of its parts.
func GroupQuery(upload, key, now string) string {
	return "SELECT CAST(COALESCE(SUM(CASE WHEN declared THEN bytes ELSE 0 END), 0) AS bigint)," +
		" CAST(COALESCE(SUM(CASE WHEN declared OR blob_key = " + key + " THEN 0 ELSE bytes END), 0) AS bigint)" +
		" FROM staging WHERE upload_id = " + upload + " AND upload_id <> '' AND expires_at > " + now
}

// CreditQuery reads the size of the object at bucket/key (0 if none) and
// the credit that other live stagings already take of it, for Stage.
func CreditQuery(bucket, key, owner, now string) string {
	return "SELECT CAST(COALESCE((SELECT size FROM objects WHERE bucket = " + bucket + " AND key = " + key + "), 0) AS bigint)," +
		" CAST(COALESCE((SELECT SUM(credit) FROM staging WHERE owner_id = " + owner + " AND bucket = " + bucket +
		" AND key = " + key + " AND upload_id = '' AND expires_at > " + now + "), 0) AS bigint)"
}

// DeclaredLeftUpdate sets the declared-size staging of upload to the
// declared bytes still due once its part number holds size bytes: the
// declared size minus the sizes of its other parts and size, at least 0.
func DeclaredLeftUpdate(upload, number, size string) string {
	left := "(SELECT u.size - COALESCE((SELECT SUM(p.size) FROM upload_parts p WHERE p.upload_id = u.id AND p.number <> " + number + "), 0) - " + size +
		" FROM uploads u WHERE u.id = " + upload + ")"
	return "UPDATE staging SET bytes = " + larger(left, "0") + " WHERE upload_id = " + upload + " AND declared"
}

// Room is an owner's quota as a transaction sees it under the owner's
// lock.
type Room struct {
	Quota    int64 // 0: unlimited
	Usage    int64
	Reserved int64 // by the owner's live stagings (ReservedQuery), except those the transaction releases
}

// CheckGrowth fails with QuotaExceeded unless usage may grow by delta:
// shrinking always passes; growth must leave usage + reservations within
// the quota.
func (r Room) CheckGrowth(delta int64) error {
	if delta <= 0 || r.Quota == 0 || r.Usage+r.Reserved+delta <= r.Quota {
		return nil
	}
	return r.exceeded(delta)
}

func (r Room) exceeded(needed int64) error {
	return &errcode.Error{
		Code:    errcode.QuotaExceeded,
		Message: "storage quota exceeded",
		Detail:  map[string]any{"quota_bytes": r.Quota, "usage_bytes": r.Usage, "reserved_bytes": r.Reserved, "needed_bytes": needed},
	}
}

// Share is one staging's place in its owner's reservations.
type Share struct {
	Own      int64 // the bytes it reserves now (0 for a new staging)
	Credit   int64 // of an object staging
	Upload   bool  // a part: it shares its upload's group
	Declared int64 // the group's declared bytes still due
	Parts    int64 // the bytes of the group's other parts in flight
}

func (s Share) of(b int64) int64 {
	if s.Upload {
		return max(s.Declared, s.Parts+b)
	}
	return max(0, b-s.Credit)
}

// Grant returns how many bytes in [minBytes, maxBytes] (and at least
// sh.Own) the staging may reserve: all when the owner has no quota, else
// the most with which usage + reservations stay within the quota.
// QuotaExceeded if not even minBytes fit. r.Reserved includes sh.Own's
// share.
func (r Room) Grant(sh Share, minBytes, maxBytes int64) (int64, error) {
	minBytes = max(minBytes, sh.Own)
	maxBytes = max(maxBytes, minBytes)
	if r.Quota == 0 {
		return maxBytes, nil
	}
	// What the staging's share may be: what is free, and at least what
	// it holds (a share that does not grow always fits, even over a
	// lowered quota, as shrinking usage always passes).
	room := max(r.Quota-r.Usage-(r.Reserved-sh.of(sh.Own)), sh.of(sh.Own))
	switch {
	case sh.of(minBytes) > room:
		return 0, r.exceeded(sh.of(minBytes) - sh.of(sh.Own))
	case sh.of(maxBytes) <= room:
		return maxBytes, nil
	case sh.Upload:
		return room - sh.Parts, nil // >= minBytes: of(minBytes) fits
	}
	return room + sh.Credit, nil
}

// Credit is the credit a new object staging takes of the object it
// replaces (size bytes, of which other live stagings take taken).
func Credit(size, taken int64) int64 { return max(size-taken, 0) }

// CheckReleased fails unless every key was released from a staging live
// at nowNanos: expires maps each released key to its expiry (nanos).
func CheckReleased(keys []string, expires map[string]int64, nowNanos int64) error {
	for _, k := range keys {
		if e, ok := expires[k]; !ok || e <= nowNanos {
			return meta.ErrLeaseLost()
		}
	}
	return nil
}

// DeclaredStaging is the staging of upload u's declared size, drawn on
// owner's quota until the upload goes (it expires with the upload).
func DeclaredStaging(u meta.Upload, owner string) meta.Staging {
	return meta.Staging{
		BlobKey: meta.DeclaredStagingKey(u.ID), OwnerID: owner, UploadID: u.ID, Declared: true,
		Bytes: u.Size, ExpiresAt: u.ExpiresAt,
	}
}

// Missing returns the keys not in have, in order.
func Missing(keys []string, have map[string]bool) []string {
	var out []string
	for _, k := range keys {
		if !have[k] {
			out = append(out, k)
		}
	}
	return out
}

package metasql

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

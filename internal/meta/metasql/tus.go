package metasql

import (
	"fmt"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// The tus_uploads statements both backends run (migration 0011). ph gives
// the n-th (1-based) placeholder of the dialect. Times are Unix
// milliseconds.

// TusCols are the columns of meta.TusUpload, in ScanTus's order.
const TusCols = "upload_id, length, info, hash_offset, hash_state"

// ScanTus scans a row of TusCols.
func ScanTus(r interface{ Scan(...any) error }) (meta.TusUpload, error) {
	var t meta.TusUpload
	var info string
	err := r.Scan(&t.UploadID, &t.Length, &info, &t.HashOffset, &t.HashState)
	t.Info = []byte(info)
	return t, err
}

// InsertTusSQL inserts a row: args upload_id, length, info.
func InsertTusSQL(ph func(int) string) string {
	return fmt.Sprintf("INSERT INTO tus_uploads (upload_id, length, info) VALUES (%s, %s, %s)", ph(1), ph(2), ph(3))
}

// SetTusLengthSQL sets a deferred length: args length, upload_id.
func SetTusLengthSQL(ph func(int) string) string {
	return fmt.Sprintf("UPDATE tus_uploads SET length = %s WHERE upload_id = %s AND length = -1", ph(1), ph(2))
}

// SetTusHashSQL records the hash state: args offset, state, upload_id.
func SetTusHashSQL(ph func(int) string) string {
	return fmt.Sprintf("UPDATE tus_uploads SET hash_offset = %s, hash_state = %s WHERE upload_id = %s", ph(1), ph(2), ph(3))
}

// LockTusSQL takes the lock if free, expired or the holder's: args
// holder, until, upload_id, now.
func LockTusSQL(ph func(int) string) string {
	return fmt.Sprintf("UPDATE tus_uploads SET lock_holder = %[1]s, lock_until = %[2]s, release_requested = 0 WHERE upload_id = %[3]s AND (lock_holder = '' OR lock_holder = %[1]s OR lock_until < %[4]s)",
		ph(1), ph(2), ph(3), ph(4))
}

// RequestTusReleaseSQL asks the holder to let go: args upload_id.
func RequestTusReleaseSQL(ph func(int) string) string {
	return fmt.Sprintf("UPDATE tus_uploads SET release_requested = 1 WHERE upload_id = %s", ph(1))
}

// RenewTusLockSQL extends the lease: args until, upload_id, holder;
// returns release_requested.
func RenewTusLockSQL(ph func(int) string) string {
	return fmt.Sprintf("UPDATE tus_uploads SET lock_until = %s WHERE upload_id = %s AND lock_holder = %s RETURNING release_requested", ph(1), ph(2), ph(3))
}

// UnlockTusSQL releases the lock: args upload_id, holder.
func UnlockTusSQL(ph func(int) string) string {
	return fmt.Sprintf("UPDATE tus_uploads SET lock_holder = '', lock_until = 0, release_requested = 0 WHERE upload_id = %s AND lock_holder = %s", ph(1), ph(2))
}

// Millis encodes t for the lock columns.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// UpsertUserLimitsSQL stores an override: args user_id, requests, bytes,
// window_ms.
func UpsertUserLimitsSQL(ph func(int) string) string {
	return fmt.Sprintf("INSERT INTO user_limits (user_id, requests, bytes, window_ms) VALUES (%s, %s, %s, %s) ON CONFLICT (user_id) DO UPDATE SET requests = excluded.requests, bytes = excluded.bytes, window_ms = excluded.window_ms",
		ph(1), ph(2), ph(3), ph(4))
}

// ReserveRateSQL takes a block: args dim, key, window_start, block,
// limit; returns used after the reservation (no row when the limit was
// spent already).
func ReserveRateSQL(ph func(int) string) string {
	return fmt.Sprintf(`INSERT INTO rate_leases (dim, key, window_start, used) VALUES (%[1]s, %[2]s, %[3]s, %[4]s)
ON CONFLICT (dim, key, window_start) DO UPDATE SET used = rate_leases.used + %[4]s WHERE rate_leases.used < %[5]s
RETURNING used`, ph(1), ph(2), ph(3), ph(4), ph(5))
}

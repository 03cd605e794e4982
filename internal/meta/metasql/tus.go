package metasql

import (
	"fmt"

	"github.com/coffer-storage/coffer/internal/meta"
)

// The tus_uploads statements both backends run (migration 0011). ph gives
// the n-th (1-based) placeholder of the dialect. Times are Unix
// milliseconds.

// TusCols are the columns of meta.TusUpload, in ScanTus's order.
const TusCols = "upload_id, length, info, hash_offset, hash_state"

// ScanTus scans a row of TusCols.
func ScanTus(r Row) (meta.TusUpload, error) {
	var t meta.TusUpload
	var info string
	err := r.Scan(&t.UploadID, &t.Length, &info, &t.HashOffset, &t.HashState)
	t.Info = []byte(info)
	return t, err
}

// InsertTusSQL inserts a row: args upload_id, length, info.
func InsertTusSQL(ph PH) string {
	return fmt.Sprintf("INSERT INTO tus_uploads (upload_id, length, info) VALUES (%s, %s, %s)", ph(1), ph(2), ph(3))
}

// SetTusLengthSQL sets a deferred length: args length, upload_id.
func SetTusLengthSQL(ph PH) string {
	return fmt.Sprintf("UPDATE tus_uploads SET length = %s WHERE upload_id = %s AND length = -1", ph(1), ph(2))
}

// SetTusHashSQL records the hash state: args offset, state, upload_id.
func SetTusHashSQL(ph PH) string {
	return fmt.Sprintf("UPDATE tus_uploads SET hash_offset = %s, hash_state = %s WHERE upload_id = %s", ph(1), ph(2), ph(3))
}

// LockTusSQL takes the lock if free, expired or the holder's: args
// holder, until, upload_id, now.
func LockTusSQL(ph PH) string {
	return fmt.Sprintf("UPDATE tus_uploads SET lock_holder = %[1]s, lock_until = %[2]s, release_requested = 0 WHERE upload_id = %[3]s AND (lock_holder = '' OR lock_holder = %[1]s OR lock_until < %[4]s)",
		ph(1), ph(2), ph(3), ph(4))
}

// RequestTusReleaseSQL asks the holder to let go: args upload_id.
func RequestTusReleaseSQL(ph PH) string {
	return fmt.Sprintf("UPDATE tus_uploads SET release_requested = 1 WHERE upload_id = %s", ph(1))
}

// RenewTusLockSQL extends the lease: args until, upload_id, holder;
// returns release_requested.
func RenewTusLockSQL(ph PH) string {
	return fmt.Sprintf("UPDATE tus_uploads SET lock_until = %s WHERE upload_id = %s AND lock_holder = %s RETURNING release_requested", ph(1), ph(2), ph(3))
}

// UnlockTusSQL releases the lock: args upload_id, holder.
func UnlockTusSQL(ph PH) string {
	return fmt.Sprintf("UPDATE tus_uploads SET lock_holder = '', lock_until = 0, release_requested = 0 WHERE upload_id = %s AND lock_holder = %s", ph(1), ph(2))
}

// GetTusSQL reads the tus state of upload ph(1) (ScanTus).
func GetTusSQL(ph PH) string {
	return "SELECT " + TusCols + " FROM tus_uploads WHERE upload_id = " + ph(1)
}

// TouchTusSQL changes nothing of upload ph(1)'s tus state, and tells
// whether it exists (a lock that was not free).
func TouchTusSQL(ph PH) string {
	return "UPDATE tus_uploads SET lock_until = lock_until WHERE upload_id = " + ph(1)
}

package metasql

import (
	"fmt"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// The user_limits and rate_leases statements both backends run (meta's
// LimitsStore and RateStore).

// UpsertUserLimitsSQL stores an override: args user_id, requests, bytes,
// window_ms.
func UpsertUserLimitsSQL(ph PH) string {
	return fmt.Sprintf("INSERT INTO user_limits (user_id, requests, bytes, window_ms) VALUES (%s, %s, %s, %s) ON CONFLICT (user_id) DO UPDATE SET requests = excluded.requests, bytes = excluded.bytes, window_ms = excluded.window_ms",
		ph(1), ph(2), ph(3), ph(4))
}

// UserLimitsSQL reads the override of user ph(1) (ScanUserLimits).
func UserLimitsSQL(ph PH) string {
	return "SELECT user_id, requests, bytes, window_ms FROM user_limits WHERE user_id = " + ph(1)
}

// ScanUserLimits reads a row of UserLimitsSQL.
func ScanUserLimits(r Row) (meta.UserLimits, error) {
	var l meta.UserLimits
	var ms int64
	err := r.Scan(&l.UserID, &l.Requests, &l.Bytes, &ms)
	l.Window = time.Duration(ms) * time.Millisecond
	return l, err
}

// DeleteUserLimitsSQL removes the override of user ph(1).
func DeleteUserLimitsSQL(ph PH) string { return "DELETE FROM user_limits WHERE user_id = " + ph(1) }

// UserLimitsArgs are UpsertUserLimitsSQL's arguments.
func UserLimitsArgs(l meta.UserLimits) []any {
	return []any{l.UserID, l.Requests, l.Bytes, l.Window.Milliseconds()}
}

// ReserveRateSQL takes a block: args dim, key, window_start, block,
// limit; returns used after the reservation (no row when the limit was
// spent already).
func ReserveRateSQL(ph PH) string {
	return fmt.Sprintf(`INSERT INTO rate_leases (dim, key, window_start, used) VALUES (%[1]s, %[2]s, %[3]s, %[4]s)
ON CONFLICT (dim, key, window_start) DO UPDATE SET used = rate_leases.used + %[4]s WHERE rate_leases.used < %[5]s
RETURNING used`, ph(1), ph(2), ph(3), ph(4), ph(5))
}

// ForgetRateWindowsSQL deletes the windows of (ph(1), ph(2)) before ph(3),
// once a new one started.
func ForgetRateWindowsSQL(ph PH) string {
	return "DELETE FROM rate_leases WHERE dim = " + ph(1) + " AND key = " + ph(2) + " AND window_start < " + ph(3)
}

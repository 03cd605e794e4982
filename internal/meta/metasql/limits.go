package metasql

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// The user_limits and rate_leases statements both backends run (meta's
// LimitsStore and RateStore).

// upsertUserLimitsSQL stores an override: args user_id, requests, bytes,
// window_ms.
func upsertUserLimitsSQL(ph PH) string {
	return fmt.Sprintf("INSERT INTO user_limits (user_id, requests, bytes, window_ms) VALUES (%s, %s, %s, %s) ON CONFLICT (user_id) DO UPDATE SET requests = excluded.requests, bytes = excluded.bytes, window_ms = excluded.window_ms",
		ph(1), ph(2), ph(3), ph(4))
}

// scanUserLimits reads a row of user_id, requests, bytes, window_ms.
func scanUserLimits(r Row) (meta.UserLimits, error) {
	var l meta.UserLimits
	var ms int64
	err := r.Scan(&l.UserID, &l.Requests, &l.Bytes, &ms)
	l.Window = time.Duration(ms) * time.Millisecond
	return l, err
}

// deleteUserLimitsSQL removes the override of user ph(1).
func deleteUserLimitsSQL(ph PH) string { return "DELETE FROM user_limits WHERE user_id = " + ph(1) }

// userLimitsArgs are upsertUserLimitsSQL's arguments.
func userLimitsArgs(l meta.UserLimits) []any {
	return []any{l.UserID, l.Requests, l.Bytes, l.Window.Milliseconds()}
}

// reserveRateSQL takes a block: args dim, key, window_start, block,
// limit; returns used after the reservation (no row when the limit was
// spent already).
func reserveRateSQL(ph PH) string {
	return fmt.Sprintf(`INSERT INTO rate_leases (dim, key, window_start, used) VALUES (%[1]s, %[2]s, %[3]s, %[4]s)
ON CONFLICT (dim, key, window_start) DO UPDATE SET used = rate_leases.used + %[4]s WHERE rate_leases.used < %[5]s
RETURNING used`, ph(1), ph(2), ph(3), ph(4), ph(5))
}

// forgetRateWindowsSQL deletes the windows of (ph(1), ph(2)) before ph(3),
// once a new one started.
func forgetRateWindowsSQL(ph PH) string {
	return "DELETE FROM rate_leases WHERE dim = " + ph(1) + " AND key = " + ph(2) + " AND window_start < " + ph(3)
}

// GetUserLimits implements meta.Limits.
func (o limitOps) GetUserLimits(ctx context.Context, id string) (meta.UserLimits, error) {
	return Get(ctx, o.run, "get user limits", scanUserLimits, func() error { return meta.ErrNoUserLimits(id) }, o.sql.limits.get, id)
}

// SetUserLimits implements meta.Limits. A missing user fails the statement
// with a foreign key violation: NotFound.
func (o limitOps) SetUserLimits(ctx context.Context, l meta.UserLimits) error {
	if l.Requests == 0 && l.Bytes == 0 {
		return o.exec(ctx, "clear user limits", o.sql.limits.remove, l.UserID)
	}
	if err := meta.CheckUserLimits(l); err != nil {
		return err
	}
	return noUser(o.exec(ctx, "set user limits", o.sql.limits.upsert, userLimitsArgs(l)...), l.UserID)
}

// limitSQL are the user_limits, rate_leases and throttles statements of
// Ops.
type limitSQL struct {
	get, upsert, remove, reserve, forget string
	// Throttles: lock reads and locks the rows of the keys bound as a
	// list at 1, in key order; put stores a state (key, window_start,
	// count, delay_ms, until_ms, expires_ms), drop forgets key 1, sweep
	// forgets up to 32 rows expired before 1.
	lock, put, drop, sweep string
}

func newLimitSQL(d Dialect) limitSQL {
	ph := d.PH
	return limitSQL{
		lock: "SELECT key, window_start, count, delay_ms, until_ms, expires_ms FROM throttles WHERE " + d.In("key", 1) +
			" ORDER BY key" + d.ForUpdate,
		put: fmt.Sprintf(`INSERT INTO throttles (key, window_start, count, delay_ms, until_ms, expires_ms) VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (key) DO UPDATE SET window_start = excluded.window_start, count = excluded.count, delay_ms = excluded.delay_ms, until_ms = excluded.until_ms, expires_ms = excluded.expires_ms`,
			ph(1), ph(2), ph(3), ph(4), ph(5), ph(6)),
		drop:    "DELETE FROM throttles WHERE key = " + ph(1),
		sweep:   "DELETE FROM throttles WHERE key IN (SELECT key FROM throttles WHERE expires_ms < " + ph(1) + " LIMIT 32)",
		get:     "SELECT user_id, requests, bytes, window_ms FROM user_limits WHERE user_id = " + ph(1),
		upsert:  upsertUserLimitsSQL(ph),
		remove:  deleteUserLimitsSQL(ph),
		reserve: reserveRateSQL(ph),
		forget:  forgetRateWindowsSQL(ph),
	}
}

// ReserveRate implements meta.Limits in one transaction: a reservation
// that opens a window forgets the key's older ones.
func (o limitOps) ReserveRate(ctx context.Context, dim, key string, windowStart, block, limit int64) (int64, error) {
	var got int64
	err := o.run.Write(ctx, "reserve rate", func(w Writer) error {
		got = 0
		var used []int64 // no row: the window's limit is spent
		err := w.Query(o.sql.limits.reserve, []any{dim, key, windowStart, block, limit}, func(r Row) error {
			u, err := ScanInt64(r)
			used = append(used, u)
			return err
		})
		if err != nil || len(used) == 0 {
			return err
		}
		got = meta.Granted(used[0], block, limit)
		if used[0] != block {
			return nil
		}
		return w.Queue(nil, o.sql.limits.forget, dim, key, windowStart)
	})
	if err != nil {
		return 0, err
	}
	return got, nil
}

// UpdateThrottles implements meta.Limits: the keys' rows are made if
// missing (in key order, so that two transactions never wait for each
// other's rows in opposite orders) and locked, fn computes, and the
// states it returns are stored or forgotten, with a sweep of a few
// expired rows, in one transaction.
func (o limitOps) UpdateThrottles(ctx context.Context, now time.Time, keys []string, fn func([]meta.ThrottleState) []meta.ThrottleState) error {
	if len(keys) == 0 {
		return nil
	}
	sorted := slices.Sorted(slices.Values(keys))
	var insert strings.Builder
	insert.WriteString("INSERT INTO throttles (key, window_start, count, delay_ms, until_ms, expires_ms) VALUES ")
	args := make([]any, len(sorted))
	for i, k := range sorted {
		if i > 0 {
			insert.WriteString(", ")
		}
		insert.WriteString("(" + o.sql.ph(i+1) + ", 0, 0, 0, 0, 0)")
		args[i] = k
	}
	insert.WriteString(" ON CONFLICT (key) DO NOTHING")
	list, err := o.d.List(sorted)
	if err != nil {
		return err
	}
	nowMS := now.UnixMilli()
	return o.run.Write(ctx, "update throttles", func(w Writer) error {
		if _, err := w.Exec(insert.String(), args...); err != nil {
			return err
		}
		got := map[string]meta.ThrottleState{}
		err := w.Query(o.sql.limits.lock, []any{list}, func(r Row) error {
			var k string
			var start, count, delay, until, expires int64
			if err := r.Scan(&k, &start, &count, &delay, &until, &expires); err != nil {
				return err
			}
			if expires > nowMS {
				got[k] = meta.ThrottleState{Start: time.UnixMilli(start), Count: count, Delay: time.Duration(delay) * time.Millisecond,
					Until: time.UnixMilli(until), Expires: time.UnixMilli(expires)}
			}
			return nil
		})
		if err != nil {
			return err
		}
		in := make([]meta.ThrottleState, len(keys))
		for i, k := range keys {
			in[i] = got[k]
		}
		out := fn(in)
		if out == nil {
			return nil
		}
		if len(out) != len(keys) {
			return errcode.New(errcode.Internal, "UpdateThrottles: %d states for %d keys", len(out), len(keys))
		}
		for i, k := range keys {
			st := out[i]
			if !st.Expires.After(now) {
				if err := w.Queue(nil, o.sql.limits.drop, k); err != nil {
					return err
				}
				continue
			}
			if err := w.Queue(nil, o.sql.limits.put, k, st.Start.UnixMilli(), st.Count, st.Delay.Milliseconds(), st.Until.UnixMilli(), st.Expires.UnixMilli()); err != nil {
				return err
			}
		}
		return w.Queue(nil, o.sql.limits.sweep, nowMS)
	})
}

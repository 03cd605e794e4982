package metasql

import (
	"context"
	"fmt"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// The tus_uploads statements both backends run (migration 0011). ph gives
// the n-th (1-based) placeholder of the dialect. Times are Unix
// milliseconds.

// tusCols are the columns of meta.TusUpload, in scanTus's order.
const tusCols = "upload_id, length, info, hash_offset, hash_state"

// scanTus scans a row of tusCols.
func scanTus(r Row) (meta.TusUpload, error) {
	var t meta.TusUpload
	var info string
	err := r.Scan(&t.UploadID, &t.Length, &info, &t.HashOffset, &t.HashState)
	t.Info = []byte(info)
	return t, err
}

// insertTusSQL inserts a row: args upload_id, length, info.
func insertTusSQL(ph PH) string {
	return fmt.Sprintf("INSERT INTO tus_uploads (upload_id, length, info) VALUES (%s, %s, %s)", ph(1), ph(2), ph(3))
}

// setTusLengthSQL sets a deferred length: args length, upload_id.
func setTusLengthSQL(ph PH) string {
	return fmt.Sprintf("UPDATE tus_uploads SET length = %s WHERE upload_id = %s AND length = -1", ph(1), ph(2))
}

// setTusHashSQL records the hash state: args offset, state, upload_id.
func setTusHashSQL(ph PH) string {
	return fmt.Sprintf("UPDATE tus_uploads SET hash_offset = %s, hash_state = %s WHERE upload_id = %s", ph(1), ph(2), ph(3))
}

// lockTusSQL takes the lock if free, expired or the holder's: args
// holder, until, upload_id, now.
func lockTusSQL(ph PH) string {
	return fmt.Sprintf("UPDATE tus_uploads SET lock_holder = %[1]s, lock_until = %[2]s, release_requested = 0 WHERE upload_id = %[3]s AND (lock_holder = '' OR lock_holder = %[1]s OR lock_until < %[4]s)",
		ph(1), ph(2), ph(3), ph(4))
}

// requestTusReleaseSQL asks the holder to let go: args upload_id.
func requestTusReleaseSQL(ph PH) string {
	return fmt.Sprintf("UPDATE tus_uploads SET release_requested = 1 WHERE upload_id = %s", ph(1))
}

// renewTusLockSQL extends the lease: args until, upload_id, holder;
// returns release_requested.
func renewTusLockSQL(ph PH) string {
	return fmt.Sprintf("UPDATE tus_uploads SET lock_until = %s WHERE upload_id = %s AND lock_holder = %s RETURNING release_requested", ph(1), ph(2), ph(3))
}

// unlockTusSQL releases the lock: args upload_id, holder.
func unlockTusSQL(ph PH) string {
	return fmt.Sprintf("UPDATE tus_uploads SET lock_holder = '', lock_until = 0, release_requested = 0 WHERE upload_id = %s AND lock_holder = %s", ph(1), ph(2))
}

// unlockTusHashSQL releases the lock and records the hash state: args
// offset, state, upload_id, holder.
func unlockTusHashSQL(ph PH) string {
	return fmt.Sprintf("UPDATE tus_uploads SET lock_holder = '', lock_until = 0, release_requested = 0, hash_offset = %s, hash_state = %s WHERE upload_id = %s AND lock_holder = %s",
		ph(1), ph(2), ph(3), ph(4))
}

// touchTusSQL changes nothing of upload ph(1)'s tus state, and tells
// whether it exists (a lock that was not free).
func touchTusSQL(ph PH) string {
	return "UPDATE tus_uploads SET lock_until = lock_until WHERE upload_id = " + ph(1)
}

// GetTus implements meta.Tus.
func (o tusOps) GetTus(ctx context.Context, id string) (meta.TusUpload, error) {
	return Get(ctx, o.run, "get tus upload", scanTus, func() error { return meta.ErrNoTus(id) }, o.sql.tus.get, id)
}

// CreateTus implements meta.Tus.
func (o tusOps) CreateTus(ctx context.Context, t meta.TusUpload) error {
	return o.exec(ctx, "create tus upload", o.sql.tus.insert, t.UploadID, t.Length, string(t.Info))
}

// SetTusLength implements meta.Tus.
func (o tusOps) SetTusLength(ctx context.Context, id string, length int64) error {
	return o.mustChange(ctx, "declare tus length", meta.ErrTusLengthDeclared(id), o.sql.tus.setLength, length, id)
}

// SetTusHash implements meta.Tus.
func (o tusOps) SetTusHash(ctx context.Context, id string, offset int64, state []byte) error {
	return o.mustChange(ctx, "record tus hash", meta.ErrNoTus(id), o.sql.tus.setHash, offset, state, id)
}

// RenewTusLock implements meta.Tus.
func (o tusOps) RenewTusLock(ctx context.Context, id, holder string, until time.Time) (held, releaseRequested bool, err error) {
	rr, held, err := writeGet(ctx, o.core, "renew tus lock", ScanInt64, o.sql.tus.renewLock, millis(until), id, holder)
	return held, rr != 0, err
}

// UnlockTus implements meta.Tus.
func (o tusOps) UnlockTus(ctx context.Context, id, holder string) error {
	return o.exec(ctx, "unlock tus upload", o.sql.tus.unlock, id, holder)
}

// UnlockTusHash implements meta.Tus.
func (o tusOps) UnlockTusHash(ctx context.Context, id, holder string, offset int64, state []byte) error {
	if err := meta.CheckTusHash(offset); err != nil {
		return err
	}
	return o.exec(ctx, "unlock tus upload with its hash", o.sql.tus.unlockHash, offset, state, id, holder)
}

// tusSQL are the tus_uploads statements of Ops.
type tusSQL struct {
	get, insert, setLength, setHash, renewLock, unlock string
	unlockHash, lock, requestRelease, touch            string
}

func newTusSQL(ph PH) tusSQL {
	return tusSQL{
		get:            "SELECT " + tusCols + " FROM tus_uploads WHERE upload_id = " + ph(1),
		insert:         insertTusSQL(ph),
		setLength:      setTusLengthSQL(ph),
		setHash:        setTusHashSQL(ph),
		renewLock:      renewTusLockSQL(ph),
		unlock:         unlockTusSQL(ph),
		unlockHash:     unlockTusHashSQL(ph),
		lock:           lockTusSQL(ph),
		requestRelease: requestTusReleaseSQL(ph),
		touch:          touchTusSQL(ph),
	}
}

// TryLockTus implements meta.Tus in one transaction.
func (o tusOps) TryLockTus(ctx context.Context, id, holder string, until time.Time, requestRelease bool) (meta.TusLock, error) {
	out := meta.TusMissing
	err := o.run.Write(ctx, "lock tus upload", func(w Writer) error {
		out = meta.TusMissing
		n, err := w.Exec(o.sql.tus.lock, holder, millis(until), id, millis(time.Now()))
		if err != nil || n == 1 {
			if err == nil {
				out = meta.TusLocked
			}
			return err
		}
		q := o.sql.tus.touch
		if requestRelease {
			q = o.sql.tus.requestRelease
		}
		return w.Queue(func(n int64) {
			if n == 1 {
				out = meta.TusBusy
			}
		}, q, id)
	})
	return out, err
}

package postgres

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// Stagings and quotas: every change to what an owner reserves, and every
// quota check, happens with the owner's users row locked (lockOwner…), and
// reads the reservations in a later statement, which sees every staging
// committed before the lock. Renewing and unstaging touch no users row and
// never wait for one, so they cannot deadlock with the others, which lock
// the users row first and the staging rows after.

const (
	lockOwnerQuery = `SELECT id, quota_bytes, usage_bytes FROM users WHERE id = $1 FOR UPDATE`

	// reservedOfBuckets and reservedOfUpload read the reservations of the
	// owners lockOwners and lockUploadOwner lock, if they have a quota.
	reservedOfBuckets = `owner_id IN (SELECT id FROM users WHERE quota_bytes > 0
		AND id IN (SELECT owner_id FROM buckets WHERE name = ANY($1)))`
	reservedOfUpload = `owner_id IN (SELECT id FROM users WHERE quota_bytes > 0
		AND id = (SELECT b.owner_id FROM uploads u JOIN buckets b ON b.name = u.bucket WHERE u.id = $1))`
	reservedOfOwner = `owner_id IN (SELECT id FROM users WHERE quota_bytes > 0 AND id = $1)`
)

var (
	reservedOfBucketsQuery = metasql.ReservedQuery(reservedOfBuckets, "$2")
	reservedOfUploadQuery  = metasql.ReservedQuery(reservedOfUpload, "$2")
	reservedOfOwnerQuery   = metasql.ReservedQuery(reservedOfOwner, "$2")
)

// readReserved queues reading the reservations of the locked owners that
// query (a ReservedQuery whose $1 is arg) selects. Queue it after the
// lock and after the transaction's own staging changes.
func (t *txn) readReserved(query string, arg any) {
	queueEach(t, metasql.ScanReserved, func(r metasql.Reserved) {
		if o := t.owners[r.Owner]; o != nil {
			o.reserved = r.Bytes
		}
	}, query, arg, metasql.ToNanos(t.now))
}

// room is the locked owner id's quota, usage and reservations.
func (t *txn) room(id string) (meta.Room, error) {
	o := t.owners[id]
	if o == nil {
		return meta.Room{}, errRetry
	}
	return meta.Room{Quota: o.quota, Usage: o.usage, Reserved: o.reserved}, nil
}

// releaseStaged queues deleting the stagings of the blobs the transaction
// commits; checkReleased then tells whether each was live.
func (t *txn) releaseStaged(keys []string) {
	if t.released == nil {
		t.released = map[string]time.Time{}
	}
	clear(t.released)
	if len(keys) == 0 {
		return
	}
	queueEach(t, metasql.ScanReleased, func(r metasql.Released) { t.released[r.Key] = r.Expires },
		"DELETE FROM staging WHERE blob_key = ANY($1) AND NOT declared RETURNING blob_key, expires_at", keys)
}

func (t *txn) checkReleased(keys []string) error {
	return meta.CheckReleased(keys, t.released, t.now)
}

// deleteDeclared queues deleting the declared-size staging of upload id.
func (t *txn) deleteDeclared(id string) {
	t.exec(sq.DeleteDeclared, meta.DeclaredStagingKey(id))
}

func insertStaging(t *txn, s meta.Staging) {
	t.exec(sq.InsertStaging, metasql.StagingArgs(s, key)...)
}

// Stage implements meta.Stagings. An owner without a quota takes one
// statement (nothing to check); otherwise the owner is locked and the
// reservation checked in a transaction of two round trips.
func (s driver) Stage(ctx context.Context, st meta.Staging, minBytes int64) (meta.Staging, bool, error) {
	inserted := false
	err := s.write(ctx, "stage", func(t *txn) error {
		t.execN(func(n int64) error { inserted = n == 1; return nil },
			"INSERT INTO staging ("+metasql.StagingCols+`) SELECT $1, id, $3, false, $4, $5, $6, 0, $7 FROM users
			WHERE id = $2 AND quota_bytes = 0`,
			st.BlobKey, st.OwnerID, st.UploadID, st.Bucket, key(st.Key), st.Bytes, metasql.ToNanos(st.ExpiresAt))
		return nil
	})
	if err != nil || inserted {
		return st, false, err
	}
	out := st
	err = s.write(ctx, "stage", func(t *txn) error {
		out = st
		t.lockOwnersWith(lockOwnerQuery, st.OwnerID)
		t.readReserved(reservedOfOwnerQuery, st.OwnerID)
		var credit, group [2]int64 // size, taken; declared, parts
		if st.Bucket != "" {
			queueGet(t, &credit, metasql.ScanPair, nil, sq.Credit, st.Bucket, key(st.Key), st.OwnerID, metasql.ToNanos(t.now))
		}
		if st.UploadID != "" {
			queueGet(t, &group, metasql.ScanPair, nil, sq.Group, st.UploadID, st.BlobKey, metasql.ToNanos(t.now))
		}
		if err := t.flush(); err != nil {
			return err
		}
		r, err := t.room(st.OwnerID)
		if err == errRetry {
			return meta.ErrNoUser(st.OwnerID)
		}
		out.Credit = meta.Credit(credit[0], credit[1])
		res := meta.Reservation{Credit: out.Credit, Upload: st.UploadID != "", Declared: group[0], Parts: group[1]}
		if out.Bytes, err = r.Grant(res, minBytes, st.Bytes); err != nil {
			return err
		}
		insertStaging(t, out)
		return nil
	})
	if err != nil {
		return meta.Staging{}, false, err
	}
	return out, true, nil
}

// GrowStaging implements meta.Stagings in two round trips.
func (s *Store) GrowStaging(ctx context.Context, k string, minBytes, maxBytes int64) (int64, error) {
	var granted int64
	err := s.write(ctx, "grow staging", func(t *txn) error {
		t.lockOwnersWith(`SELECT id, quota_bytes, usage_bytes FROM users
			WHERE id = (SELECT owner_id FROM staging WHERE blob_key = $1) FOR UPDATE`, k)
		var l metasql.StagingLease
		var found bool
		var group [2]int64 // declared, parts
		queueRow(t, &l, &found, metasql.ScanStagingLease, sq.StagingLease, k)
		t.readReserved(metasql.ReservedQuery(`owner_id = (SELECT owner_id FROM staging WHERE blob_key = $1)`, "$2"), k)
		// The group of the staging's upload, if any ('' selects object
		// stagings, which have none: ignored below).
		queueGet(t, &group, metasql.ScanPair, nil, metasql.GroupQuery("(SELECT upload_id FROM staging WHERE blob_key = $1)", "$2", "$3"),
			k, k, metasql.ToNanos(t.now))
		if err := t.flush(); err != nil {
			return err
		}
		if !found || l.ExpiresAtNanos <= metasql.ToNanos(t.now) {
			return meta.ErrLeaseLost()
		}
		r, err := t.room(l.Owner)
		if err != nil {
			return err
		}
		res := meta.Reservation{Own: l.Bytes, Credit: l.Credit, Upload: l.Upload != "", Declared: group[0], Parts: group[1]}
		if granted, err = r.Grant(res, minBytes, maxBytes); err != nil {
			return err
		}
		if granted != l.Bytes {
			t.exec(sq.GrowStaging, granted, k)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return granted, nil
}

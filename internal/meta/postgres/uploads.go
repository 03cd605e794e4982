package postgres

import (
	"context"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// CreateUpload implements meta.Uploads. A zero CreatedAt is set to now.
func (s driver) CreateUpload(ctx context.Context, u meta.Upload, args []any) error {
	return s.write(ctx, "create upload", func(t *txn) error {
		var owner string
		if u.Size > 0 {
			// The declared size is reserved until the upload goes: lock
			// the bucket's owner and check the quota first.
			t.lockOwners([]string{u.Bucket})
			t.readReserved(reservedOfBucketsQuery, []string{u.Bucket})
			queueGet(t, &owner, metasql.ScanString, meta.ErrNoBucket(u.Bucket), "SELECT owner_id FROM buckets WHERE name = $1", u.Bucket)
			if err := t.flush(); err != nil {
				return err
			}
			r, err := t.room(owner)
			if err != nil {
				return err
			}
			if err := r.CheckGrowth(u.Size); err != nil {
				return err
			}
		}
		// A missing bucket is a foreign key violation: NotFound.
		t.exec(sq.InsertUpload, args...)
		if u.Size > 0 {
			insertStaging(t, meta.DeclaredStaging(u, owner))
		}
		return nil
	})
}

// upload is where an upload goes, as a write reads it.
type upload struct {
	metasql.UploadPlace
	found bool
}

// getUpload queues reading where upload id goes into u. Queue it after
// lockUploadOwner.
func (t *txn) getUpload(u *upload, id string) {
	queueRow(t, &u.UploadPlace, &u.found, metasql.ScanUploadPlace, sq.UploadPlace, id)
}

// check fails if the upload is gone or its owner is not locked.
func (u *upload) check(t *txn, id string) error {
	if !u.found {
		return meta.ErrNoUpload(id)
	}
	return t.checkLocked(u.Owner)
}

// readParts queues reading every part of an upload into have.
func (t *txn) readParts(have *[]meta.Part, id string) {
	queueRows(t, have, metasql.ScanPart, sq.Parts, id)
}

// PutPart implements meta.Uploads. A zero ModTime is set to now.
// InvalidArgument unless 1 <= Number <= 10000, Size >= 0 and BlobKey is
// set.
func (s driver) PutPart(ctx context.Context, p meta.Part, staged []string) (meta.Part, error) {
	var old meta.Part
	err := s.write(ctx, "put part", func(t *txn) error {
		old = meta.Part{}
		var u upload
		t.lockUploadOwner(p.UploadID)
		t.releaseStaged(staged)
		t.exec(sq.DeclaredLeft, p.UploadID, p.Number, p.Size)
		t.readReserved(reservedOfUploadQuery, p.UploadID)
		t.getUpload(&u, p.UploadID)
		var cur meta.Part
		var exists bool
		queueRow(t, &cur, &exists, metasql.ScanPart, sq.Part, p.UploadID, p.Number)
		if err := t.flush(); err != nil {
			return err
		}
		if err := u.check(t, p.UploadID); err != nil {
			return err
		}
		if err := t.checkReleased(staged); err != nil {
			return err
		}
		if err := t.addUsage(u.Owner, p.Size-cur.Size); err != nil {
			return err
		}
		t.exec(sq.UpsertPart, metasql.PartArgs(p)...)
		if exists {
			t.enqueue(cur.BlobKey)
			old = cur
		}
		return nil
	})
	return metasql.Result(old, err)
}

// ListUploads implements meta.Uploads in one REPEATABLE READ transaction of
// two round trips. A limit <= 0 means 1000; a limit above 10000 is 10000.
//
// The page starts after the marker in the order (key, created_at, id):
// with a KeyMarker alone, after every upload of that key (as in S3); with
// an UploadIDMarker too, after that upload, or, if it no longer exists
// there, at the first upload of KeyMarker (so a vanished marker repeats
// rather than skips). An UploadIDMarker without KeyMarker is ignored.
func (s *Store) ListUploads(ctx context.Context, bucket string, opts meta.ListUploadsOptions) ([]meta.Upload, bool, error) {
	limit := meta.PageLimit(opts.Limit, 1000, meta.MaxPartNumber)
	var out []meta.Upload
	err := s.tx(ctx, "list uploads of "+bucket, beginSnapshot, func(t *txn) error {
		var name string
		var created int64
		var exists, markerFound bool
		queueRow(t, &name, &exists, metasql.ScanString, "SELECT name FROM buckets WHERE name = $1", bucket)
		if opts.KeyMarker != "" && opts.UploadIDMarker != "" {
			queueRow(t, &created, &markerFound, metasql.ScanInt64, sq.UploadMarker, opts.UploadIDMarker, bucket, key(opts.KeyMarker))
		}
		if err := t.flush(); err != nil {
			return err
		}
		if !exists {
			return meta.ErrNoBucket(bucket)
		}
		var marker *int64
		if markerFound {
			marker = &created
		}
		query, args := metasql.ListUploadsQuery(bucket, opts, marker, limit, ph, key)
		queueRows(t, &out, metasql.ScanUpload, query, args...)
		return t.flush()
	})
	if err != nil {
		return nil, false, err
	}
	out, more := meta.Page(out, limit)
	return out, more, nil
}

// deleteUpload queues deleting the rows of an upload and its parts.
func deleteUpload(t *txn, id string) {
	t.exec(sq.DeleteUpload[0], id)
	t.exec(sq.DeleteUpload[1], id)
}

// AbortUpload implements meta.Uploads.
func (s *Store) AbortUpload(ctx context.Context, id string) error {
	return s.write(ctx, "abort upload", func(t *txn) error {
		var u upload
		var have []meta.Part
		t.lockUploadOwner(id)
		t.getUpload(&u, id)
		t.readParts(&have, id)
		if err := t.flush(); err != nil {
			return err
		}
		if err := u.check(t, id); err != nil {
			return err
		}
		freed, blobs := meta.PartsFreed(have)
		deleteUpload(t, id)
		t.deleteDeclared(id)
		if err := t.addUsage(u.Owner, -freed); err != nil {
			return err
		}
		t.enqueue(append(blobs, u.BlobKey)...)
		return nil
	})
}

// CompleteUpload implements meta.Uploads in three round trips (the upload
// and its parts; the object at the key; the writes and COMMIT). The checks
// run in the order the contract lists them, each over all listed parts
// before the next. A zero obj.ModTime is set to now.
func (s *Store) CompleteUpload(ctx context.Context, id string, obj meta.Object, parts []meta.CompletePart, minPartSize int64, cond meta.Cond) (meta.Object, error) {
	var out meta.Object
	err := s.write(ctx, "complete upload", func(t *txn) error {
		var u upload
		var have []meta.Part
		var partsID int64
		t.lockUploadOwner(id)
		t.getUpload(&u, id)
		t.readParts(&have, id)
		t.newPartsID(&partsID)
		if err := t.flush(); err != nil {
			return err
		}
		if err := u.check(t, id); err != nil {
			return err
		}
		a, err := meta.AssembleUpload(obj, u.Bucket, u.Key, have, parts, minPartSize, t.now)
		if err != nil {
			return err
		}
		var cur found
		t.lookup(&cur, u.Bucket, u.Key, "")
		if err := t.flush(); err != nil {
			return err
		}
		freed, discarded := a.Freed()
		// The listed parts, in ascending order, become the object's; their
		// numbers serve as positions. (They were read under the owner's
		// lock: all are there.) They are counted already: usage moves by
		// the discarded ones and the version replaced.
		res, err := t.newVersion(cur, a.Object, cond, -freed, func() { t.exec(sq.CopyParts, partsID, id, a.Numbers) }, partsID)
		if err != nil {
			return err
		}
		deleteUpload(t, id)
		t.deleteDeclared(id)
		t.enqueue(discarded...)
		out = res.Object
		return nil
	})
	return metasql.Result(out, err)
}

// CompleteBackendUpload implements meta.Uploads in three round trips, as
// CompleteUpload.
func (s driver) CompleteBackendUpload(ctx context.Context, id string, obj meta.Object, cond meta.Cond) (meta.Object, error) {
	var out meta.Object
	err := s.write(ctx, "complete upload", func(t *txn) error {
		var u upload
		var have []meta.Part
		t.lockUploadOwner(id)
		t.deleteDeclared(id)
		t.readReserved(reservedOfUploadQuery, id)
		t.getUpload(&u, id)
		t.readParts(&have, id)
		if err := t.flush(); err != nil {
			return err
		}
		if err := u.check(t, id); err != nil {
			return err
		}
		o, err := meta.AssembleBackendUpload(obj, u.Upload, t.now)
		if err != nil {
			return err
		}
		var cur found
		t.lookup(&cur, u.Bucket, u.Key, "")
		if err := t.flush(); err != nil {
			return err
		}
		freed, discarded := meta.PartsFreed(have)
		deleteUpload(t, id)
		res, err := t.newVersion(cur, o, cond, o.Size-freed, nil, 0)
		if err != nil {
			return err
		}
		t.enqueue(discarded...)
		out = res.Object
		return nil
	})
	return metasql.Result(out, err)
}

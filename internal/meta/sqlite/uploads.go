package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// CreateUpload implements meta.Uploads. A zero CreatedAt is set to now.
func (s driver) CreateUpload(ctx context.Context, u meta.Upload, args []any) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		owner, err := queryRow(ctx, c, metasql.ScanString, meta.ErrNoBucket(u.Bucket), "SELECT owner_id FROM buckets WHERE name = ?", u.Bucket)
		if err != nil {
			return classify(err, "create upload")
		}
		_, err = c.ExecContext(ctx, sq.InsertUpload, args...)
		if err != nil || u.Size == 0 {
			return classify(err, "upload %q", u.ID)
		}
		// The declared size is reserved until the upload goes.
		r, err := room(ctx, c, owner, now)
		if err != nil {
			return err
		}
		if err := r.CheckGrowth(u.Size); err != nil {
			return err
		}
		return insertStaging(ctx, c, meta.DeclaredStaging(u, owner))
	})
}

// getUpload returns where upload id goes.
func getUpload(ctx context.Context, c *conn, id string) (metasql.UploadPlace, error) {
	u, err := queryRow(ctx, c, metasql.ScanUploadPlace, meta.ErrNoUpload(id), sq.UploadPlace, id)
	return u, classify(err, "get upload %q", id)
}

// PutPart implements meta.Uploads. A zero ModTime is set to now.
// InvalidArgument unless 1 <= Number <= 10000, Size >= 0 and BlobKey is
// set.
func (s driver) PutPart(ctx context.Context, p meta.Part, staged []string) (meta.Part, error) {
	var old meta.Part
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		old = meta.Part{}
		u, err := getUpload(ctx, c, p.UploadID)
		if err != nil {
			return err
		}
		if err := releaseStaged(ctx, c, staged, now); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, sq.DeclaredLeft, p.UploadID, p.Number, p.Size); err != nil {
			return classify(err, "update the declared size of upload %q", p.UploadID)
		}
		cur, err := metasql.ScanPart(c.QueryRowContext(ctx, sq.Part, p.UploadID, p.Number))
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return classify(err, "get part %d", p.Number)
		}
		if err := addUsage(ctx, c, u.Owner, p.Size-cur.Size, now); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, sq.UpsertPart, metasql.PartArgs(p)...); err != nil {
			return classify(err, "put part %d", p.Number)
		}
		if exists {
			if err := enqueue(ctx, c, now, cur.BlobKey); err != nil {
				return err
			}
			old = cur
		}
		return nil
	})
	return metasql.Result(old, err)
}

// ListUploads implements meta.Uploads in one read transaction. A limit <= 0
// means 1000; a limit above 10000 is 10000.
//
// The page starts after the marker in the order (key, created_at, id):
// with a KeyMarker alone, after every upload of that key (as in S3); with
// an UploadIDMarker too, after that upload, or, if it no longer exists
// there, at the first upload of KeyMarker (so a vanished marker repeats
// rather than skips). An UploadIDMarker without KeyMarker is ignored.
func (s *Store) ListUploads(ctx context.Context, bucket string, opts meta.ListUploadsOptions) ([]meta.Upload, bool, error) {
	if err := s.ready(); err != nil {
		return nil, false, err
	}
	limit := meta.PageLimit(opts.Limit, 1000, meta.MaxPartNumber)
	tx, err := s.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, false, classify(err, "list uploads of %q", bucket)
	}
	defer tx.Rollback()
	out, err := listUploads(ctx, reader{stmts: s.rstmts, tx: tx}, bucket, opts, limit)
	if err != nil {
		return nil, false, classify(err, "list uploads of %q", bucket)
	}
	out, more := meta.Page(out, limit)
	return out, more, nil
}

func listUploads(ctx context.Context, q querier, bucket string, opts meta.ListUploadsOptions, limit int) ([]meta.Upload, error) {
	if found, err := exists(ctx, q, "SELECT 1 FROM buckets WHERE name = ?", bucket); err != nil || !found {
		if err == nil {
			err = meta.ErrNoBucket(bucket)
		}
		return nil, err
	}
	var marker *int64
	if opts.KeyMarker != "" && opts.UploadIDMarker != "" {
		var created int64
		err := q.QueryRowContext(ctx, sq.UploadMarker, opts.UploadIDMarker, bucket, opts.KeyMarker).Scan(&created)
		switch {
		case err == nil:
			marker = &created
		case !errors.Is(err, sql.ErrNoRows):
			return nil, err
		}
	}
	query, args := metasql.ListUploadsQuery(bucket, opts, marker, limit, ph, key)
	return queryRows(ctx, q, metasql.ScanUpload, query, args...)
}

// dropUpload deletes upload id, its parts and its declared size, and
// returns the bytes of its parts and their blobs, which the caller must
// release (addUsage) and enqueue.
func dropUpload(ctx context.Context, c *conn, id string) (int64, []string, error) {
	parts, err := queryRows(ctx, c, metasql.ScanPart, sq.Parts, id)
	if err != nil {
		return 0, nil, classify(err, "parts of upload %q", id)
	}
	freed, blobs := meta.PartsFreed(parts)
	return freed, blobs, deleteUpload(ctx, c, id)
}

// deleteUpload deletes the rows of upload id, its parts and its declared
// size.
func deleteUpload(ctx context.Context, c *conn, id string) error {
	if _, err := c.ExecContext(ctx, sq.DeleteUpload[0], id); err != nil {
		return classify(err, "delete parts of upload %q", id)
	}
	if err := mustAffect(ctx, c, meta.ErrNoUpload(id), "delete upload", sq.DeleteUpload[1], id); err != nil {
		return err
	}
	_, err := c.ExecContext(ctx, sq.DeleteDeclared, meta.DeclaredStagingKey(id))
	return classify(err, "release the declared size of upload %q", id)
}

// AbortUpload implements meta.Uploads.
func (s *Store) AbortUpload(ctx context.Context, id string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		u, err := getUpload(ctx, c, id)
		if err != nil {
			return err
		}
		freed, blobs, err := dropUpload(ctx, c, id)
		if err != nil {
			return err
		}
		now := time.Now()
		if err := addUsage(ctx, c, u.Owner, -freed, now); err != nil {
			return err
		}
		return enqueue(ctx, c, now, append(blobs, u.BlobKey)...)
	})
}

// CompleteUpload implements meta.Uploads. The checks run in the order the
// contract lists them, each over all listed parts before the next. A zero
// obj.ModTime is set to now.
func (s *Store) CompleteUpload(ctx context.Context, id string, obj meta.Object, parts []meta.CompletePart, minPartSize int64, cond meta.Cond) (meta.Object, error) {
	var out meta.Object
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		u, err := getUpload(ctx, c, id)
		if err != nil {
			return err
		}
		have, err := queryRows(ctx, c, metasql.ScanPart, sq.Parts, id)
		if err != nil {
			return classify(err, "parts of upload %q", id)
		}
		a, err := meta.AssembleUpload(obj, u.Bucket, u.Key, have, parts, minPartSize, now)
		if err != nil {
			return err
		}
		f, err := lookupFull(ctx, c, u.Bucket, u.Key, "")
		if err != nil {
			return err
		}
		freed, discarded := a.Freed()
		// The parts are counted already: usage moves by the discarded
		// ones and the version replaced.
		res, err := newVersion(ctx, c, f, a.Object, cond, -freed, func() (int64, int64, error) {
			id, err := moveParts(ctx, c, id, a.Numbers)
			return id, 0, err
		}, now)
		if err != nil {
			return err
		}
		if err := deleteUpload(ctx, c, id); err != nil {
			return err
		}
		if err := enqueue(ctx, c, now, discarded...); err != nil {
			return err
		}
		out = res.Object
		return nil
	})
	return metasql.Result(out, err)
}

// moveParts copies the listed parts of an upload, which are in ascending
// order, to a new parts set of a multipart object (their numbers serve as
// positions) in one statement, and returns its id.
func moveParts(ctx context.Context, c *conn, uploadID string, numbers []int) (int64, error) {
	list, err := dialect.List(numbers)
	if err != nil {
		return 0, errcode.Wrap(errcode.Internal, err, "encode part numbers")
	}
	id, err := newPartsID(ctx, c)
	if err != nil {
		return 0, err
	}
	n, err := execN(ctx, c, sq.CopyParts, id, uploadID, list)
	if err != nil {
		return 0, classify(err, "copy parts of upload %q", uploadID)
	}
	if n != int64(len(numbers)) {
		return 0, errcode.New(errcode.Internal, "copied %d of the %d listed parts of upload %q", n, len(numbers), uploadID)
	}
	return id, nil
}

// CompleteBackendUpload implements meta.Uploads.
func (s driver) CompleteBackendUpload(ctx context.Context, id string, obj meta.Object, cond meta.Cond) (meta.Object, error) {
	var out meta.Object
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		u, err := getUpload(ctx, c, id)
		if err != nil {
			return err
		}
		o, err := meta.AssembleBackendUpload(obj, u.Upload, now)
		if err != nil {
			return err
		}
		f, err := lookupFull(ctx, c, u.Bucket, u.Key, "")
		if err != nil {
			return err
		}
		freed, discarded, err := dropUpload(ctx, c, id)
		if err != nil {
			return err
		}
		res, err := newVersion(ctx, c, f, o, cond, o.Size-freed, nil, now)
		if err != nil {
			return err
		}
		if err := enqueue(ctx, c, now, discarded...); err != nil {
			return err
		}
		out = res.Object
		return nil
	})
	return metasql.Result(out, err)
}

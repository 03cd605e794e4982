package metasql

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// shareCols are the columns of a share, in the order scanShare reads them.
const shareCols = "id, hash, owner_id, bucket, object_key, folder, password, note, allow_upload, max_downloads, downloads, created_at, expires_at, last_access, revoked, is_grant"

// scanShare reads a share selected with shareCols.
func scanShare(r Row) (meta.Share, error) {
	var sh meta.Share
	var created, expires, last int64
	err := r.Scan(&sh.ID, &sh.Hash, &sh.OwnerID, &sh.Bucket, &sh.Key, &sh.Folder, &sh.Password, &sh.Note,
		&sh.AllowUpload, &sh.MaxDownloads, &sh.Downloads, &created, &expires, &last, &sh.Revoked, &sh.Grant)
	sh.CreatedAt, sh.ExpiresAt = FromNanos(created), FromNanos(expires)
	if last != 0 {
		sh.LastAccess = FromNanos(last)
	}
	return sh, err
}

// insertShareSQL inserts a share: arguments shareArgs.
func insertShareSQL(ph PH) string {
	return "INSERT INTO shares (" + shareCols + ") VALUES (" + values(ph, 1, 16) + ")"
}

// getShareSQL reads the share whose column col (id or hash) is ph(1)
// (scanShare).
func getShareSQL(col string, ph PH) string {
	return "SELECT " + shareCols + " FROM shares WHERE " + col + " = " + ph(1)
}

// shareArgs are insertShareSQL's arguments for a share meta.CheckShare
// returned.
func shareArgs(sh meta.Share) []any {
	return []any{sh.ID, sh.Hash, sh.OwnerID, sh.Bucket, sh.Key, sh.Folder, sh.Password, sh.Note,
		sh.AllowUpload, sh.MaxDownloads, sh.Downloads, ToNanos(sh.CreatedAt), ToNanos(sh.ExpiresAt), int64(0), sh.Revoked, sh.Grant}
}

// deleteSpentGrantsSQL is the DELETE of meta.Shares.DeleteSpentGrants, with
// arguments (ownerID, ToNanos(now)) and placeholders made by ph: the
// owner's grants that are not "active" (meta.Share.State) at now.
func deleteSpentGrantsSQL(ph PH) string {
	return "DELETE FROM shares WHERE owner_id = " + ph(1) + " AND is_grant AND (revoked OR expires_at <= " + ph(2) +
		" OR (max_downloads > 0 AND downloads >= max_downloads))"
}

// useShareSQL is the conditional UPDATE of meta.Shares.UseShare, with
// arguments useShareArgs and placeholders made by ph: it changes one row
// exactly when the share is "active" (meta.Share.State) at now, taking one
// download when asked. One statement on one row: two concurrent downloads
// of the last one cannot both change it (SQLite runs one writer;
// PostgreSQL re-evaluates the WHERE on the updated row at READ COMMITTED).
func useShareSQL(ph PH) string {
	return "UPDATE shares SET last_access = " + ph(1) + ", downloads = downloads + " + ph(2) +
		" WHERE id = " + ph(3) + " AND NOT revoked AND expires_at > " + ph(4) +
		" AND (max_downloads = 0 OR downloads < max_downloads)"
}

// useShareArgs are the arguments of useShareSQL.
func useShareArgs(id string, download bool, now time.Time) []any {
	n := int64(0)
	if download {
		n = 1
	}
	return []any{ToNanos(now), n, id, ToNanos(now)}
}

// shareDownloadUpsertSQL records a download for StartShareDownload, with
// arguments shareDownloadUpsertArgs: a new row, or the one of the same
// share, client and key replaced (its resumes back to 0).
func shareDownloadUpsertSQL(ph PH) string {
	return "INSERT INTO share_downloads (share_id, client, object_key, etag, last_start, resumes, expires_at) VALUES (" +
		ph(1) + ", " + ph(2) + ", " + ph(3) + ", " + ph(4) + ", " + ph(5) + ", 0, " + ph(6) + ")" +
		" ON CONFLICT (share_id, client, object_key) DO UPDATE SET etag = excluded.etag, last_start = excluded.last_start," +
		" resumes = 0, expires_at = excluded.expires_at"
}

// shareDownloadUpsertArgs are the arguments of shareDownloadUpsertSQL.
func shareDownloadUpsertArgs(d meta.ShareDownload) []any {
	return []any{d.ShareID, d.Client, d.Key, d.ETag, d.Offset, ToNanos(d.Until)}
}

// resumeShareDownloadSQL is the conditional UPDATE of
// meta.Shares.ResumeShareDownload, with arguments resumeShareDownloadArgs:
// it changes the download's row exactly when the resume is allowed.
func resumeShareDownloadSQL(ph PH) string {
	return "UPDATE share_downloads SET last_start = " + ph(1) + ", resumes = resumes + 1, expires_at = " + ph(2) +
		" WHERE share_id = " + ph(3) + " AND client = " + ph(4) + " AND object_key = " + ph(5) + " AND etag = " + ph(6) +
		" AND expires_at > " + ph(7) + " AND last_start < " + ph(1) + " AND resumes < " + ph(8) +
		" AND EXISTS (SELECT 1 FROM shares WHERE id = " + ph(3) + " AND NOT revoked AND expires_at > " + ph(7) + ")"
}

// resumeShareDownloadArgs are the arguments of resumeShareDownloadSQL.
func resumeShareDownloadArgs(d meta.ShareDownload, maxResumes int, now time.Time) []any {
	return []any{d.Offset, ToNanos(d.Until), d.ShareID, d.Client, d.Key, d.ETag, ToNanos(now), maxResumes}
}

// touchShareSQL sets a share's last access (arguments now, id).
func touchShareSQL(ph PH) string {
	return "UPDATE shares SET last_access = " + ph(1) + " WHERE id = " + ph(2)
}

// GetShare implements meta.Shares.
func (o shareOps) GetShare(ctx context.Context, id string) (meta.Share, error) {
	return Get(ctx, o.run, "get share", scanShare, func() error { return meta.ErrNoShare() }, o.sql.shares.get, id)
}

// GetShareByHash implements meta.Shares.
func (o shareOps) GetShareByHash(ctx context.Context, hash string) (meta.Share, error) {
	return Get(ctx, o.run, "get share", scanShare, func() error { return meta.ErrNoShare() }, o.sql.shares.getByHash, hash)
}

// ListShares implements meta.Shares.
func (o shareOps) ListShares(ctx context.Context, ownerID string) ([]meta.Share, error) {
	return List(ctx, o.run, "list shares", scanShare, o.sql.shares.list, ownerID)
}

// CreateShare implements meta.Shares.
func (o shareOps) CreateShare(ctx context.Context, sh meta.Share) error {
	sh, err := meta.CheckShare(sh, time.Now())
	if err != nil {
		return err
	}
	return o.exec(ctx, "create share", o.sql.shares.insert, shareArgs(sh)...)
}

// SetShareExpiry implements meta.Shares.
func (o shareOps) SetShareExpiry(ctx context.Context, id string, expires time.Time) (meta.Share, error) {
	if err := meta.CheckShareExpiry(expires); err != nil {
		return meta.Share{}, err
	}
	if err := o.mustChange(ctx, "share expiry", meta.ErrNoShare(), o.sql.shares.setExpiry, ToNanos(expires), id); err != nil {
		return meta.Share{}, err
	}
	return o.GetShare(ctx, id)
}

// RevokeShare implements meta.Shares.
func (o shareOps) RevokeShare(ctx context.Context, id string) error {
	return o.mustChange(ctx, "revoke share", meta.ErrNoShare(), o.sql.shares.revoke, id)
}

// DeleteShare implements meta.Shares.
func (o shareOps) DeleteShare(ctx context.Context, id string) error {
	return o.mustChange(ctx, "delete share", meta.ErrNoShare(), o.sql.shares.remove, id)
}

// DeleteSpentGrants implements meta.Shares.
func (o shareOps) DeleteSpentGrants(ctx context.Context, ownerID string, now time.Time) (int, error) {
	n, err := o.run.Exec(ctx, "delete spent grants", o.sql.shares.spentGrant, []any{ownerID, ToNanos(now)}, nil)
	return int(n), err
}

// shareSQL are the shares statements of Ops.
type shareSQL struct {
	get, getByHash, list                          string // scanShare
	insert, setExpiry, revoke, remove, spentGrant string
	use, recordDownload, resume, touch            string
	deleteExpired                                 string // the shares expired before ph(1)
}

func newShareSQL(ph PH) shareSQL {
	return shareSQL{
		get:            getShareSQL("id", ph),
		getByHash:      getShareSQL("hash", ph),
		list:           "SELECT " + shareCols + " FROM shares WHERE owner_id = " + ph(1) + " ORDER BY created_at DESC, id",
		insert:         insertShareSQL(ph),
		setExpiry:      "UPDATE shares SET expires_at = " + ph(1) + " WHERE id = " + ph(2),
		revoke:         "UPDATE shares SET revoked = true WHERE id = " + ph(1),
		remove:         "DELETE FROM shares WHERE id = " + ph(1),
		spentGrant:     deleteSpentGrantsSQL(ph),
		use:            useShareSQL(ph),
		recordDownload: shareDownloadUpsertSQL(ph),
		resume:         resumeShareDownloadSQL(ph),
		touch:          touchShareSQL(ph),
		deleteExpired:  "DELETE FROM shares WHERE expires_at < " + ph(1),
	}
}

// UseShare implements meta.Shares.
func (o shareOps) UseShare(ctx context.Context, id string, download bool, now time.Time) error {
	now = meta.OrNow(now, time.Now())
	n, err := o.run.Exec(ctx, "use share", o.sql.shares.use, useShareArgs(id, download, now), nil)
	if err != nil || n == 1 {
		return err
	}
	return meta.ShareRefusal(ctx, o.GetShare, id, now)
}

// StartShareDownload implements meta.Shares: the download is taken, and
// then recorded, in one transaction.
func (o shareOps) StartShareDownload(ctx context.Context, d meta.ShareDownload, now time.Time) error {
	if err := meta.CheckShareDownload(d); err != nil {
		return err
	}
	now = meta.OrNow(now, time.Now())
	var used bool
	err := o.run.Write(ctx, "use share", func(w Writer) error {
		n, err := w.Exec(o.sql.shares.use, useShareArgs(d.ShareID, true, now)...)
		if used = n == 1 && err == nil; !used {
			return err
		}
		return w.Queue(nil, o.sql.shares.recordDownload, shareDownloadUpsertArgs(d)...)
	})
	if err != nil || used {
		return err
	}
	return meta.ShareRefusal(ctx, o.GetShare, d.ShareID, now)
}

// ResumeShareDownload implements meta.Shares: the resume and the share's
// last access in one transaction.
func (o shareOps) ResumeShareDownload(ctx context.Context, d meta.ShareDownload, maxResumes int, now time.Time) (bool, error) {
	now = meta.OrNow(now, time.Now())
	var resumed bool
	err := o.run.Write(ctx, "resume share download", func(w Writer) error {
		n, err := w.Exec(o.sql.shares.resume, resumeShareDownloadArgs(d, maxResumes, now)...)
		if resumed = n == 1 && err == nil; !resumed {
			return err
		}
		return w.Queue(nil, o.sql.shares.touch, ToNanos(now), d.ShareID)
	})
	return resumed && err == nil, err
}

// DeleteExpiredShares removes the shares whose ExpiresAt is before
// before, revoked and used-up ones included, and returns how many went:
// one statement; their download records go with them (ON DELETE CASCADE).
// (The janitor's purge of meta.Shares.)
func (o shareOps) DeleteExpiredShares(ctx context.Context, before time.Time) (int, error) {
	n, err := o.run.Exec(ctx, "delete expired shares", o.sql.shares.deleteExpired, []any{ToNanos(before)}, nil)
	return int(n), err
}

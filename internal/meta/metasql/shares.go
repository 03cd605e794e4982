package metasql

import (
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// ShareCols are the columns of a share, in the order ScanShare reads them.
const ShareCols = "id, hash, owner_id, bucket, object_key, folder, password, note, allow_upload, max_downloads, downloads, created_at, expires_at, last_access, revoked, is_grant"

// ScanShare reads a share selected with ShareCols.
func ScanShare(r Row) (meta.Share, error) {
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

// InsertShareSQL inserts a share: arguments ShareArgs.
func InsertShareSQL(ph PH) string {
	return "INSERT INTO shares (" + ShareCols + ") VALUES (" + Values(ph, 1, 16) + ")"
}

// GetShareSQL reads the share whose column col (id or hash) is ph(1)
// (ScanShare).
func GetShareSQL(col string, ph PH) string {
	return "SELECT " + ShareCols + " FROM shares WHERE " + col + " = " + ph(1)
}

// ListSharesSQL lists the shares of owner ph(1), newest first (ScanShare).
func ListSharesSQL(ph PH) string {
	return "SELECT " + ShareCols + " FROM shares WHERE owner_id = " + ph(1) + " ORDER BY created_at DESC, id"
}

// ShareArgs are InsertShareSQL's arguments for a share meta.CheckShare
// returned.
func ShareArgs(sh meta.Share) []any {
	return []any{sh.ID, sh.Hash, sh.OwnerID, sh.Bucket, sh.Key, sh.Folder, sh.Password, sh.Note,
		sh.AllowUpload, sh.MaxDownloads, sh.Downloads, ToNanos(sh.CreatedAt), ToNanos(sh.ExpiresAt), int64(0), sh.Revoked, sh.Grant}
}

// DeleteSpentGrantsSQL is the DELETE of meta.Store.DeleteSpentGrants, with
// arguments (ownerID, ToNanos(now)) and placeholders made by ph: the
// owner's grants that are not "active" (meta.Share.State) at now.
func DeleteSpentGrantsSQL(ph PH) string {
	return "DELETE FROM shares WHERE owner_id = " + ph(1) + " AND is_grant AND (revoked OR expires_at <= " + ph(2) +
		" OR (max_downloads > 0 AND downloads >= max_downloads))"
}

// UseShareSQL is the conditional UPDATE of meta.Store.UseShare, with
// arguments UseShareArgs and placeholders made by ph: it changes one row
// exactly when the share is "active" (meta.Share.State) at now, taking one
// download when asked. One statement on one row: two concurrent downloads
// of the last one cannot both change it (SQLite runs one writer;
// PostgreSQL re-evaluates the WHERE on the updated row at READ COMMITTED).
func UseShareSQL(ph PH) string {
	return "UPDATE shares SET last_access = " + ph(1) + ", downloads = downloads + " + ph(2) +
		" WHERE id = " + ph(3) + " AND NOT revoked AND expires_at > " + ph(4) +
		" AND (max_downloads = 0 OR downloads < max_downloads)"
}

// UseShareArgs are the arguments of UseShareSQL.
func UseShareArgs(id string, download bool, now time.Time) []any {
	n := int64(0)
	if download {
		n = 1
	}
	return []any{ToNanos(now), n, id, ToNanos(now)}
}

// ShareDownloadUpsertSQL records a download for StartShareDownload, with
// arguments ShareDownloadUpsertArgs: a new row, or the one of the same
// share, client and key replaced (its resumes back to 0).
func ShareDownloadUpsertSQL(ph PH) string {
	return "INSERT INTO share_downloads (share_id, client, object_key, etag, last_start, resumes, expires_at) VALUES (" +
		ph(1) + ", " + ph(2) + ", " + ph(3) + ", " + ph(4) + ", " + ph(5) + ", 0, " + ph(6) + ")" +
		" ON CONFLICT (share_id, client, object_key) DO UPDATE SET etag = excluded.etag, last_start = excluded.last_start," +
		" resumes = 0, expires_at = excluded.expires_at"
}

// ShareDownloadUpsertArgs are the arguments of ShareDownloadUpsertSQL.
func ShareDownloadUpsertArgs(d meta.ShareDownload) []any {
	return []any{d.ShareID, d.Client, d.Key, d.ETag, d.Offset, ToNanos(d.Until)}
}

// ResumeShareDownloadSQL is the conditional UPDATE of
// meta.Store.ResumeShareDownload, with arguments ResumeShareDownloadArgs:
// it changes the download's row exactly when the resume is allowed.
func ResumeShareDownloadSQL(ph PH) string {
	return "UPDATE share_downloads SET last_start = " + ph(1) + ", resumes = resumes + 1, expires_at = " + ph(2) +
		" WHERE share_id = " + ph(3) + " AND client = " + ph(4) + " AND object_key = " + ph(5) + " AND etag = " + ph(6) +
		" AND expires_at > " + ph(7) + " AND last_start < " + ph(1) + " AND resumes < " + ph(8) +
		" AND EXISTS (SELECT 1 FROM shares WHERE id = " + ph(3) + " AND NOT revoked AND expires_at > " + ph(7) + ")"
}

// ResumeShareDownloadArgs are the arguments of ResumeShareDownloadSQL.
func ResumeShareDownloadArgs(d meta.ShareDownload, maxResumes int, now time.Time) []any {
	return []any{d.Offset, ToNanos(d.Until), d.ShareID, d.Client, d.Key, d.ETag, ToNanos(now), maxResumes}
}

// TouchShareSQL sets a share's last access (arguments now, id).
func TouchShareSQL(ph PH) string {
	return "UPDATE shares SET last_access = " + ph(1) + " WHERE id = " + ph(2)
}

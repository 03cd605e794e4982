package meta

import (
	"context"
	"time"
)

// Shares keeps the share links and the downloads counted through them.
type Shares interface {
	// CreateShare stores sh with Downloads 0, LastAccess zero and Revoked
	// false. A zero CreatedAt is set to now. InvalidArgument without an
	// ID, a hash, an owner, a bucket or an expiry, or with a negative
	// MaxDownloads; AlreadyExists if the ID or hash is taken.
	CreateShare(ctx context.Context, sh Share) error
	// GetShare returns the share with id; NotFound if none.
	GetShare(ctx context.Context, id string) (Share, error)
	// GetShareByHash returns the share whose token has hash; NotFound if
	// none.
	GetShareByHash(ctx context.Context, hash string) (Share, error)
	// ListShares returns the shares of ownerID, newest CreatedAt first
	// (ties by ID), revoked and expired ones included.
	ListShares(ctx context.Context, ownerID string) ([]Share, error)
	// SetShareExpiry sets the expiry of share id; NotFound if none.
	SetShareExpiry(ctx context.Context, id string, expires time.Time) (Share, error)
	// RevokeShare revokes share id; NotFound if none. Revoking a revoked
	// share succeeds.
	RevokeShare(ctx context.Context, id string) error
	// DeleteShare removes share id; NotFound if none. Its token is then
	// unknown.
	DeleteShare(ctx context.Context, id string) error
	// DeleteSpentGrants removes the grants (Share.Grant) of ownerID that
	// are not "active" at now (revoked, expired or used up) and returns
	// how many went.
	DeleteSpentGrants(ctx context.Context, ownerID string, now time.Time) (int, error)
	// UseShare records one access to share id at now: LastAccess = now,
	// and, with download true, one more download, taken only while the
	// share is "active" (Share.State) by a conditional update, so
	// concurrent downloads of the last one cannot both pass.
	// ErrShareUnavailable (with the state) if it is not active; NotFound if
	// there is no such share.
	UseShare(ctx context.Context, id string, download bool, now time.Time) error
	// StartShareDownload takes one download of share d.ShareID exactly as
	// UseShare(download true) does (the same conditional update, the same
	// refusals) and, in the same transaction, records d with Resumes 0,
	// replacing any download recorded for the same share, client and key.
	// InvalidArgument without a client or key, or with a zero Until.
	StartShareDownload(ctx context.Context, d ShareDownload, now time.Time) error
	// ResumeShareDownload continues the download recorded for d.ShareID,
	// d.Client and d.Key from d.Offset. It succeeds (true) only if that
	// record has ETag d.ETag, an Until after now, an Offset below d.Offset
	// and fewer than maxResumes resumes, and the share is neither revoked
	// nor expired at now (used up is no obstacle: the download was
	// counted). Then, by one conditional update (two concurrent resumes
	// from one offset cannot both pass), the record takes Offset d.Offset,
	// Until d.Until and one more resume, and the share LastAccess now.
	// Otherwise false, and nothing changes.
	ResumeShareDownload(ctx context.Context, d ShareDownload, maxResumes int, now time.Time) (bool, error)
	// DeleteExpiredShares removes the shares whose ExpiresAt is before t,
	// revoked and used-up ones included (every share expires), with the
	// downloads recorded for them, and returns how many went. Callers give
	// a t well before now (a grace), so that an owner still sees a link
	// that ended for a while, and may extend one that expired.
	DeleteExpiredShares(ctx context.Context, before time.Time) (int, error)
}

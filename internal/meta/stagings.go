package meta

import (
	"context"
	"time"
)

// Stagings keeps the uploads in flight and their quota reservations (see
// "Uploads in flight" in the package doc).
type Stagings interface {
	// Stage records s, an upload in flight, reserving between minBytes and
	// s.Bytes of the owner's quota: as many as fit, all of s.Bytes when
	// the owner has no quota. It returns the staging as stored (Bytes
	// granted, Credit set) and whether the owner has a quota (then a
	// writer of unknown length must GrowStaging before writing past the
	// reservation). QuotaExceeded, and nothing is stored, if minBytes do
	// not fit; AlreadyExists if the key is staged; NotFound if the owner
	// does not exist; InvalidArgument for a Declared staging (CreateUpload
	// makes those) or minBytes outside 0..s.Bytes.
	Stage(ctx context.Context, s Staging, minBytes int64) (Staging, bool, error)
	// GrowStaging raises the reservation of the live staging key to
	// between minBytes and maxBytes, as many as fit, and returns the bytes
	// now reserved (never fewer than before). QuotaExceeded, and nothing
	// changes, if minBytes do not fit; Unavailable with Detail["reason"] =
	// "staging_lease_lost" if the staging is gone or expired.
	GrowStaging(ctx context.Context, key string, minBytes, maxBytes int64) (int64, error)
	// RenewStaging sets the lease of every live staging among keys to
	// expires, and returns the keys it did not renew (gone or expired: an
	// expired staging is never revived).
	RenewStaging(ctx context.Context, keys []string, expires time.Time) ([]string, error)
	// Unstage deletes the stagings of keys (uploads that failed),
	// releasing their reservations. Unknown keys are ignored; declared
	// sizes go only with their upload.
	Unstage(ctx context.Context, keys []string) error
	// DeleteExpiredStaging deletes stagings that expired before t (their
	// writers died or stalled) and returns how many: their blobs become
	// orphans. Callers give a t well before now (the orphan grace), so
	// that clock skew between nodes cannot take a staging its writer
	// still believes live. A declared size goes when its upload expired.
	DeleteExpiredStaging(ctx context.Context, before time.Time) (int, error)
}

package meta

import (
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// The decisions of quotas, reservations and rates, once for every
// backend: a backend reads an owner's quota, usage and live reservations
// under the owner's lock (Room), and these say what fits.

// Room is an owner's quota as a transaction sees it under the owner's
// lock.
type Room struct {
	Quota    int64 // 0: unlimited
	Usage    int64
	Reserved int64 // by the owner's live stagings (metasql.ReservedQuery), except those the transaction releases
}

// CheckGrowth fails with QuotaExceeded unless usage may grow by delta:
// shrinking always passes; growth must leave usage + reservations within
// the quota.
func (r Room) CheckGrowth(delta int64) error {
	if delta <= 0 || r.Quota == 0 || r.Usage+r.Reserved+delta <= r.Quota {
		return nil
	}
	return r.exceeded(delta)
}

func (r Room) exceeded(needed int64) error {
	return &errcode.Error{
		Code:    errcode.QuotaExceeded,
		Message: "storage quota exceeded",
		Detail:  map[string]any{"quota_bytes": r.Quota, "usage_bytes": r.Usage, "reserved_bytes": r.Reserved, "needed_bytes": needed},
	}
}

// Reservation is one staging's place in its owner's reservations.
type Reservation struct {
	Own      int64 // the bytes it reserves now (0 for a new staging)
	Credit   int64 // of an object staging
	Upload   bool  // a part: it shares its upload's group
	Declared int64 // the group's declared bytes still due
	Parts    int64 // the bytes of the group's other parts in flight
}

func (s Reservation) of(b int64) int64 {
	if s.Upload {
		return max(s.Declared, s.Parts+b)
	}
	return max(0, b-s.Credit)
}

// Grant returns how many bytes in [minBytes, maxBytes] (and at least
// sh.Own) the staging may reserve: all when the owner has no quota, else
// the most with which usage + reservations stay within the quota.
// QuotaExceeded if not even minBytes fit. r.Reserved includes sh.Own's
// share.
func (r Room) Grant(sh Reservation, minBytes, maxBytes int64) (int64, error) {
	minBytes = max(minBytes, sh.Own)
	maxBytes = max(maxBytes, minBytes)
	if r.Quota == 0 {
		return maxBytes, nil
	}
	// What the staging's share may be: what is free, and at least what
	// it holds (a share that does not grow always fits, even over a
	// lowered quota, as shrinking usage always passes).
	room := max(r.Quota-r.Usage-(r.Reserved-sh.of(sh.Own)), sh.of(sh.Own))
	switch {
	case sh.of(minBytes) > room:
		return 0, r.exceeded(sh.of(minBytes) - sh.of(sh.Own))
	case sh.of(maxBytes) <= room:
		return maxBytes, nil
	case sh.Upload:
		return room - sh.Parts, nil // >= minBytes: of(minBytes) fits
	}
	return room + sh.Credit, nil
}

// Credit is the credit a new object staging takes of the object it
// replaces (size bytes, of which other live stagings take taken).
func Credit(size, taken int64) int64 { return max(size-taken, 0) }

// CheckReleased fails with ErrLeaseLost unless every key was released from
// a staging live at now: expires maps each released key to its expiry.
func CheckReleased(keys []string, expires map[string]time.Time, now time.Time) error {
	for _, k := range keys {
		if e, ok := expires[k]; !ok || !e.After(now) {
			return ErrLeaseLost()
		}
	}
	return nil
}

// DeclaredStaging is the staging of upload u's declared size, drawn on
// owner's quota until the upload goes (it expires with the upload).
func DeclaredStaging(u Upload, owner string) Staging {
	return Staging{
		BlobKey: DeclaredStagingKey(u.ID), OwnerID: owner, UploadID: u.ID, Declared: true,
		Bytes: u.Size, ExpiresAt: u.ExpiresAt,
	}
}

// Missing returns the keys not in have, in order.
func Missing(keys []string, have map[string]bool) []string {
	var out []string
	for _, k := range keys {
		if !have[k] {
			out = append(out, k)
		}
	}
	return out
}

// Granted is what a reservation of block got, given used after it.
func Granted(used, block, limit int64) int64 {
	return max(0, min(block, limit-(used-block)))
}

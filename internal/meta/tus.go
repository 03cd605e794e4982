package meta

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// TusUpload is the tus state of a multipart upload that a tus client
// drives (see internal/tus). The upload row holds the bucket, key and
// expiry; this holds what tus adds.
type TusUpload struct {
	UploadID string
	// Length is the declared total length, or -1 while deferred.
	Length int64
	// Info is the tus state the tus package keeps (JSON: metadata,
	// partial/final, the partial uploads of a final one).
	Info []byte
	// HashState is the marshalled running hash state of the first
	// HashOffset bytes (the tus package's format).
	HashOffset int64
	HashState  []byte
}

// TusLock is the outcome of TryLockTus.
type TusLock int

// TryLockTus outcomes.
const (
	TusLocked  TusLock = iota // the caller holds the lock now
	TusBusy                   // another holder has an unexpired lease
	TusMissing                // no such tus upload
)

// Tus keeps the tus state of the multipart uploads that tus clients drive
// (package tus), and their locks.
type Tus interface {
	// CreateTus stores t for its (existing) upload; NotFound if the upload
	// is gone, AlreadyExists if it has tus state already.
	CreateTus(ctx context.Context, t TusUpload) error
	// GetTus returns the tus state of upload id; NotFound if none.
	GetTus(ctx context.Context, id string) (TusUpload, error)
	// SetTusLength declares the length of an upload whose length was
	// deferred; InvalidArgument if it was declared already.
	SetTusLength(ctx context.Context, id string, length int64) error
	// SetTusHash records the running hash state after offset bytes.
	SetTusHash(ctx context.Context, id string, offset int64, state []byte) error
	// TryLockTus takes the lock of upload id for holder until until, if it
	// is free, expired or holder's already. When it is busy and
	// requestRelease is set, the holder is asked to let go (RenewTusLock
	// tells it).
	TryLockTus(ctx context.Context, id, holder string, until time.Time, requestRelease bool) (TusLock, error)
	// RenewTusLock extends holder's lease; it reports whether the lock is
	// still held and whether another request asked for its release.
	RenewTusLock(ctx context.Context, id, holder string, until time.Time) (held, releaseRequested bool, err error)
	// UnlockTus releases holder's lock (nothing if not held).
	UnlockTus(ctx context.Context, id, holder string) error
	// UnlockTusHash releases holder's lock and records the running hash
	// state after offset bytes (as SetTusHash) in one commit: a PATCH's
	// one tus write. If holder does not hold the lock, nothing changes
	// (the state is not recorded either: whoever holds it may have moved
	// the upload on). InvalidArgument for a negative offset (CheckTusHash).
	UnlockTusHash(ctx context.Context, id, holder string, offset int64, state []byte) error
}

// CheckTusHash checks the offset of a recorded hash state (UnlockTusHash).
func CheckTusHash(offset int64) error {
	if offset < 0 {
		return errcode.New(errcode.InvalidArgument, "a tus hash state's offset must not be negative")
	}
	return nil
}

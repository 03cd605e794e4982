package object

import (
	"context"
	"io"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/detach"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Uploads in flight
//
// Every blob is staged in the metadata store (meta.Stage) before its first
// byte is written, so every node sees it: the staging reserves the upload's
// bytes against the bucket owner's quota, and keeps the blob from any
// node's orphan collection. The node writing it renews the lease of all its
// stagings every StagingLease/3 in one statement; committing the blob
// deletes the staging in the same transaction as the object (or part)
// row, so the bytes move from reserved to used atomically. A node that
// dies leaves stagings that stop counting when their lease ends, and that
// the janitors delete.

// A body of unknown length reserves 1 byte before it arrives (so an owner
// with no room left is refused at once), then grows its reservation as
// bytes arrive, each time to what arrived plus half as much again (at most
// maxLookahead more): O(log n) metadata writes for n bytes, and at most
// half of what is staged reserved ahead, not yet received.
const maxLookahead = 16 << 20

// staging is one blob this node is writing or has written and not yet
// committed.
type staging struct {
	lost atomic.Bool // its lease could not be renewed: it will not commit
}

// beginStaging stages st (reserving between minBytes and st.Bytes) and
// keeps its lease renewed until endStaging.
func (s *core) beginStaging(ctx context.Context, st meta.Staging, minBytes int64) (meta.Staging, bool, *staging, error) {
	st.ExpiresAt = s.now().Add(s.cfg.StagingLease)
	got, limited, err := s.meta.Stage(ctx, st, minBytes)
	if err != nil {
		return meta.Staging{}, false, nil, err
	}
	e := &staging{}
	s.stagingMu.Lock()
	s.staging[st.BlobKey] = e
	if !s.renewing {
		s.renewing = true
		go s.renewStagings()
	}
	s.stagingMu.Unlock()
	return got, limited, e, nil
}

// endStaging stops renewing the leases of keys (committed or unstaged).
func (s *core) endStaging(keys ...string) {
	s.stagingMu.Lock()
	for _, k := range keys {
		delete(s.staging, k)
	}
	s.stagingMu.Unlock()
}

// unstage releases the stagings of blobs that will not be committed (their
// writes failed before anything could point at them), and reports whether
// it could (else the reservations lapse with their leases).
func (s *core) unstage(ctx context.Context, keys ...string) bool {
	if len(keys) == 0 {
		return true
	}
	s.endStaging(keys...)
	ctx, cancel := detach.Context(ctx)
	defer cancel()
	if err := s.meta.Unstage(ctx, keys); err != nil {
		s.log.WarnContext(ctx, "releasing upload reservations failed; they lapse with their lease", "blobs", keys, "err", err)
		return false
	}
	return true
}

// renewStagings renews the leases of this node's stagings every lease/3,
// until there are none.
func (s *core) renewStagings() {
	tick := time.NewTicker(s.cfg.StagingLease / 3)
	defer tick.Stop()
	for range tick.C {
		s.stagingMu.Lock()
		if len(s.staging) == 0 {
			s.renewing = false
			s.stagingMu.Unlock()
			return
		}
		keys := slices.Collect(maps.Keys(s.staging))
		s.stagingMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StagingLease/3)
		lost, err := s.renewOnce(ctx, keys)
		cancel()
		if err != nil {
			s.log.Warn("renewing upload leases failed; will retry", "count", len(keys), "err", err)
			continue
		}
		if len(lost) > 0 {
			s.log.Warn("upload leases lost; those uploads will fail", "blobs", lost)
		}
	}
}

// renewOnce renews the leases of keys and marks lost those whose staging
// is gone while this node still stages them. A staging that went with its
// commit while the renewal ran (one statement behind the writes that
// commit, on a busy store) is missing too, but no longer staged here: it
// is not lost, and not reported.
func (s *core) renewOnce(ctx context.Context, keys []string) ([]string, error) {
	missing, err := s.meta.RenewStaging(ctx, keys, s.now().Add(s.cfg.StagingLease))
	if err != nil {
		return nil, err
	}
	var lost []string
	s.stagingMu.Lock()
	defer s.stagingMu.Unlock()
	for _, k := range missing {
		if e := s.staging[k]; e != nil {
			e.lost.Store(true)
			lost = append(lost, k)
		}
	}
	return lost, nil
}

// StagedBytes returns the bytes this node has received into blobs that are
// not committed yet (a gauge: what uploads in flight hold in the blob
// store).
func (s *core) StagedBytes() int64 { return s.stagedBytes.Load() }

// reserver is the body of a staged blob as the blob store reads it: it
// counts the bytes it passes on (StagedBytes), fails once the staging's
// lease is lost, and, for an owner with a quota, passes on no byte beyond
// the reservation: it grows the reservation first (GrowStaging), and fails
// with QuotaExceeded when the quota cannot hold it.
type reserver struct {
	ctx     context.Context
	s       *core
	key     string
	e       *staging
	r       io.Reader
	grow    bool  // the owner has a quota and the length is unknown
	granted int64 // bytes reserved
	n       int64 // bytes passed on
}

func (rv *reserver) Read(p []byte) (int, error) {
	if rv.e.lost.Load() {
		return 0, meta.ErrLeaseLost()
	}
	n, err := rv.r.Read(p)
	if n > 0 && rv.grow && rv.n+int64(n) > rv.granted {
		need := rv.n + int64(n)
		g, gerr := rv.s.meta.GrowStaging(rv.ctx, rv.key, need, need+min(need/2, maxLookahead))
		if gerr != nil {
			return 0, gerr
		}
		rv.granted = g
	}
	rv.n += int64(n)
	rv.s.stagedBytes.Add(int64(n))
	return n, err
}

// done forgets the reserver's bytes in StagedBytes (committed or
// discarded).
func (rv *reserver) done() {
	rv.s.stagedBytes.Add(-rv.n)
	rv.n = 0
}

// writeStaged stages a fresh blob for st and streams r into it, within the
// reservation, encrypted by sl unless it is nil. It returns the plaintext
// size (what the reservation and quota count; the blob of an encrypted one
// is crypt.CiphertextSize of it). On failure nothing is left: no blob, no
// staging.
func (s *core) writeStaged(ctx context.Context, st meta.Staging, r io.Reader, size int64, sl *sealer) (*reserver, int64, error) {
	blobSize, err := sl.blobSize(size)
	if err != nil {
		return nil, 0, err
	}
	st.Bytes = size
	if size < 0 {
		st.Bytes = 1 // see maxLookahead
	}
	minBytes := st.Bytes
	got, limited, e, err := s.beginStaging(ctx, st, minBytes)
	if err != nil {
		return nil, 0, err
	}
	rv := &reserver{ctx: ctx, s: s, key: st.BlobKey, e: e, r: r, grow: limited && size < 0, granted: got.Bytes}
	info, err := s.blobs.Put(ctx, st.BlobKey, sl.encrypt(rv), blobSize)
	if err == nil {
		info.Size, err = sl.plainSize(info.Size)
	}
	if err != nil {
		rv.done()
		s.unstage(ctx, st.BlobKey) // (a blob written after all is an orphan)
		return nil, 0, err
	}
	return rv, info.Size, nil
}

// discardStaged drops staged blobs whose commit failed: it releases their
// stagings, then deletes those no row points at. (A commit whose outcome
// was unknown may have happened after all: then a row points at its blob,
// which stays.) If the stagings cannot be released the blobs are left to
// orphan collection.
func (s *core) discardStaged(ctx context.Context, keys []string) {
	if len(keys) == 0 || !s.unstage(ctx, keys...) {
		return // orphan collection takes the blobs once the leases lapse
	}
	ctx, cancel := detach.Context(ctx)
	defer cancel()
	ref, err := s.meta.ReferencedBlobs(ctx, keys)
	if err != nil {
		s.log.WarnContext(ctx, "checking discarded blobs failed; orphan collection will take them", "blobs", keys, "err", err)
		return
	}
	for _, k := range keys {
		if ref[k] {
			continue
		}
		if err := s.blobs.Delete(ctx, k); err != nil {
			s.log.WarnContext(ctx, "discarding blob failed; orphan collection will retry", "blob", k, "err", err)
		}
	}
}

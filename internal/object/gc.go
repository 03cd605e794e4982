package object

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
)

// CollectGarbage deletes blobs queued for reclamation longer than the grace
// period ago (GarbageGrace, or PressureGrace while the disk is short of
// space) and returns how many it reclaimed. Each is re-checked when it is
// taken from the queue (meta.ClaimGarbage): a blob that a row points at
// again is left alone, and so is one a reader of this process has open
// (it stays queued).
func (s *Service) CollectGarbage(ctx context.Context) (int, error) {
	grace := s.cfg.GarbageGrace
	if s.underPressure() {
		grace = min(grace, s.cfg.PressureGrace)
	}
	total := 0
	for {
		now := s.now()
		gs, err := s.meta.ClaimGarbage(ctx, now.Add(-grace), now, 500)
		if err != nil || len(gs) == 0 {
			return total, err
		}
		ids := make([]int64, 0, len(gs))
		for _, g := range gs {
			if s.reading.pinned(g.BlobKey) {
				continue
			}
			if err := s.blobs.Delete(ctx, g.BlobKey); err != nil {
				s.log.Warn("reclaiming blob failed; will retry", "blob", g.BlobKey, "err", err)
				continue
			}
			ids = append(ids, g.ID)
		}
		if len(ids) == 0 {
			return total, nil
		}
		if err := s.meta.DeleteGarbage(ctx, ids); err != nil {
			return total, err
		}
		total += len(ids)
		if len(gs) < 500 {
			return total, nil
		}
	}
}

// CollectOrphans deletes object blobs older than the orphan grace period
// that no metadata row points at (left by a crash between a blob's write and
// its commit) and returns how many it deleted. A blob being written or
// waiting for its commit, on any node, has a staging, which counts as a row
// (meta.ReferencedBlobs); stagings that expired more than the orphan grace
// ago (their writers died, or lost their lease and failed) are deleted
// first, so that their blobs become orphans.
func (s *Service) CollectOrphans(ctx context.Context) (int, error) {
	cutoff := s.now().Add(-s.cfg.OrphanGrace)
	if n, err := s.meta.DeleteExpiredStaging(ctx, cutoff); err != nil {
		return 0, err
	} else if n > 0 {
		s.log.Info("deleted expired upload leases (their writers died)", "count", n)
	}
	var batch []string
	deleted := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		ref, err := s.meta.ReferencedBlobs(ctx, batch)
		if err != nil {
			return err
		}
		for _, k := range batch {
			if ref[k] {
				continue
			}
			if err := s.blobs.Delete(ctx, k); err != nil {
				return err
			}
			deleted++
			s.log.Info("deleted orphan blob", "blob", k)
		}
		batch = batch[:0]
		return nil
	}
	err := s.blobs.List(ctx, "o/", func(info blob.Info) error {
		if info.ModTime.After(cutoff) {
			return nil
		}
		batch = append(batch, info.Key)
		if len(batch) == 500 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return deleted, err
}

// pressureProbe is how often the janitor asks Config.Pressure.
const pressureProbe = time.Second

// RunJanitor reclaims garbage every Config.JanitorInterval and orphans
// every Config.OrphanInterval until ctx is done; with Config.Pressure, it
// also reclaims garbage every second while the disk is short of space.
// Errors are logged, never fatal.
func (s *Service) RunJanitor(ctx context.Context) {
	tick := time.NewTicker(s.cfg.JanitorInterval)
	defer tick.Stop()
	var probe <-chan time.Time
	if s.cfg.Pressure != nil {
		t := time.NewTicker(pressureProbe)
		defer t.Stop()
		probe = t.C
	}
	lastOrphans := time.Time{}
	pressed := false
	for {
		s.collectGarbage(ctx, "")
		if n, err := s.CollectExpiredUploads(ctx); err != nil && ctx.Err() == nil {
			s.janitor.Failures.Add(1)
			s.log.Warn("aborting expired uploads failed", "err", err)
		} else if n > 0 {
			s.janitor.AbortedUploads.Add(int64(n))
			s.log.Info("aborted expired uploads", "count", n)
		}
		if time.Since(lastOrphans) >= s.cfg.OrphanInterval {
			lastOrphans = time.Now()
			n, err := s.CollectOrphans(ctx)
			s.janitor.Orphans.Add(int64(n))
			if err != nil && ctx.Err() == nil {
				s.janitor.Failures.Add(1)
				s.log.Warn("orphan collection failed", "err", err)
			}
		}
		s.janitor.LastRun.Store(s.now().Unix())
		for next := false; !next; {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				next = true
			case <-probe:
				if now := s.underPressure(); now != pressed {
					pressed = now
					if now {
						s.log.Warn("disk short of space: deleted files are reclaimed at once (--min-free-space)")
					} else {
						s.log.Info("disk space back: deleted files are reclaimed after the usual grace")
					}
				}
				if pressed {
					s.collectGarbage(ctx, " under disk pressure")
				}
			}
		}
	}
}

// collectGarbage is CollectGarbage, logged; when says when it runs.
func (s *Service) collectGarbage(ctx context.Context, when string) {
	n, err := s.CollectGarbage(ctx)
	s.janitor.Reclaimed.Add(int64(n))
	if err != nil && ctx.Err() == nil {
		s.janitor.Failures.Add(1)
		s.log.Warn("garbage collection"+when+" failed", "err", err)
	} else if n > 0 {
		s.log.Info("reclaimed blobs"+when, "count", n)
	}
}

// JanitorStats are this node's counters of the janitor's work (for
// metrics): blobs reclaimed from the garbage queue, orphan blobs deleted,
// expired uploads aborted, passes that failed, and when the last pass ended
// (unix seconds, 0 before the first).
type JanitorStats struct {
	Reclaimed, Orphans, AbortedUploads, Failures, LastRun atomic.Int64
}

// JanitorStats returns this node's janitor counters.
func (s *Service) JanitorStats() *JanitorStats { return &s.janitor }

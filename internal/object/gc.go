package object

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
)

// CollectGarbage deletes blobs queued for reclamation longer than the grace
// period ago and returns how many it reclaimed. Each is re-checked when it
// is taken from the queue (meta.ClaimGarbage): a blob that a row points at
// again is left alone.
func (s *Service) CollectGarbage(ctx context.Context) (int, error) {
	total := 0
	for {
		gs, err := s.meta.ClaimGarbage(ctx, s.now().Add(-s.cfg.GarbageGrace), 500)
		if err != nil || len(gs) == 0 {
			return total, err
		}
		ids := make([]int64, 0, len(gs))
		for _, g := range gs {
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

// RunJanitor reclaims garbage every Config.JanitorInterval and orphans
// every Config.OrphanInterval until ctx is done. Errors are logged, never
// fatal.
func (s *Service) RunJanitor(ctx context.Context) {
	interval, orphanInterval := s.cfg.JanitorInterval, s.cfg.OrphanInterval
	tick := time.NewTicker(interval)
	defer tick.Stop()
	lastOrphans := time.Time{}
	for {
		if n, err := s.CollectGarbage(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("garbage collection failed", "err", err)
		} else if n > 0 {
			s.log.Info("reclaimed blobs", "count", n)
		}
		if n, err := s.CollectExpiredUploads(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("aborting expired uploads failed", "err", err)
		} else if n > 0 {
			s.log.Info("aborted expired uploads", "count", n)
		}
		if time.Since(lastOrphans) >= orphanInterval {
			lastOrphans = time.Now()
			if _, err := s.CollectOrphans(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("orphan collection failed", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

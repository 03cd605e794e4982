package server

import (
	"context"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/exemap"
	"github.com/coffer-storage/coffer/internal/gcfloor"
)

// onIdle returns what the admission controller calls once the node has
// gone --idle-trim without a request (nil when it is 0: never). It gives
// back what a burst left behind and a quiet node does not need: SQLite's
// page caches (Stores.ReleaseMemory), the Go heap's free memory (two
// collections, then every free page returned to the OS at once rather
// than over minutes by the runtime's background scavenger), and this
// process's mappings of the executable's read-only pages (exemap.Release:
// the page cache keeps them, the next request maps back what it runs).
// Once per quiet period, in a goroutine of its own; the next request finds
// the caches cold (docs/operations.md, "Memory").
func (s *Server) onIdle() func() {
	if s.cfg.IdleTrim <= 0 {
		return nil
	}
	var running atomic.Bool
	return func() {
		if !running.CompareAndSwap(false, true) {
			return
		}
		go func() {
			defer running.Store(false)
			if s.stores.ReleaseMemory != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if err := s.stores.ReleaseMemory(ctx); err != nil {
					s.log.Debug("idle: release the metadata store's memory", "err", err)
				}
				cancel()
			}
			// The process's own GOGC for the collections below and
			// while idle: the next request arms the floor again.
			gcfloor.Disarm()
			// Twice: the first collection moves sync.Pools' contents to
			// their victim caches and shrinks the goroutine stacks a
			// burst grew, the second frees both; each returns the free
			// pages at once.
			debug.FreeOSMemory()
			debug.FreeOSMemory()
			// Last: the collections above read the executable's stack
			// maps, which this unmaps.
			if n, err := exemap.Release(); err != nil {
				s.log.Debug("idle: release the executable's pages", "released", n, "err", err)
			}
			s.idleTrims.Add(1)
		}()
	}
}

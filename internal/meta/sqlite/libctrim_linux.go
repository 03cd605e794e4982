//go:build linux && (amd64 || arm64 || loong64 || ppc64le || s390x || riscv64 || 386 || arm) && !libc.membrk && !libc.memgrind

package sqlite

import (
	"runtime/debug"
	"sync"
	_ "unsafe" // go:linkname

	"modernc.org/memory"
)

// SQLite's memory (modernc.org/libc's malloc) comes from one
// modernc.org/memory Allocator, which keeps the regions freed by a burst
// for reuse: up to 4 MiB of each size class stays committed (resident)
// and the pool is bounded only by 4 MiB plus the high-water mark of the
// live mapping. PRAGMA shrink_memory frees the page caches into that pool,
// so without a trim they stay in the RSS (1.4 MiB 60 s after a 20-s burst,
// docs/PERFORMANCE.md, "Issue 23, fourth pass: idle RSS after a burst").
// Allocator.Trim hands the pool back, but libc exports neither its
// allocator nor a malloc_trim: the two variables are reached by name, with
// the lock libc's malloc and free take (mem_musl.go, libc_musl.go; the
// build constraint above is theirs).
//
// A name that no longer exists would link to a fresh variable of ours (no
// error): a Trim of an empty allocator does nothing, but one under the
// wrong lock would race libc's malloc. So the trim runs only with the
// versions whose source was read (libcTrimVersions, checked against the
// binary's module list), and the tests check both names against the live
// libc and go.mod's versions against the list (TestTrimCHeap*).

//go:linkname libcAllocator modernc.org/libc.allocator
var libcAllocator memory.Allocator

//go:linkname libcAllocatorMu modernc.org/libc.allocatorMu
var libcAllocatorMu sync.Mutex

// libcTrimVersions are the module versions whose allocator and lock were
// read: a binary built with others does not trim, and
// TestTrimCHeapVersions fails on go.mod's, asking for them to be read
// again.
var libcTrimVersions = map[string]string{
	"modernc.org/libc":   "v1.79.0",
	"modernc.org/memory": "v1.12.1",
}

var libcTrimOK = sync.OnceValue(func() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	if len(bi.Deps) == 0 {
		// A test binary lists no modules: its versions are go.mod's,
		// which TestTrimCHeapVersions checks.
		return true
	}
	found := 0
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		if want, ok := libcTrimVersions[d.Path]; ok {
			if d.Version != want {
				return false
			}
			found++
		}
	}
	return found == len(libcTrimVersions)
})

// trimCHeap returns the regions SQLite's allocator retains for reuse to
// the OS (false: not with this build's libc).
func trimCHeap() (bool, error) {
	if !libcTrimOK() {
		return false, nil
	}
	libcAllocatorMu.Lock()
	defer libcAllocatorMu.Unlock()
	return true, libcAllocator.Trim()
}

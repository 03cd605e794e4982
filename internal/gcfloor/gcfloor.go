// Package gcfloor keeps the garbage collector's heap goal at or above a
// floor while the process is busy (issue 23, fifth pass: small GETs).
//
// With GOGC=100 the Go runtime collects when the heap reaches about twice
// what the previous collection found live (at least 4 MiB). A node
// serving small requests keeps a live heap of 3–4 MiB and allocates a few
// KiB a request, so at thousands of requests a second it collects several
// times a second: the collector's own work, the write barriers while it
// marks, and the goroutine stacks it halves each cycle (a connection's
// goroutine needs more than 16 KiB for an S3 GET and shrinks while it
// waits for the next request, which then copies it back) cost about a
// tenth of a small GET's CPU. Arm raises GOGC, after every collection,
// just enough that the next one starts when the heap reaches the floor;
// once the live heap is large enough that GOGC's own goal is above the
// floor, GOGC is the process's own again. So the floor bounds how far
// the heap may grow beyond its live part only while that is small, and a
// large live heap is collected exactly as without it. A memory limit
// (GOMEMLIMIT) still applies: the runtime collects before the limit
// whatever GOGC says.
//
// Disarm restores the process's GOGC: the server calls it from its idle
// trim (--idle-trim), before the collections that give the free memory
// back, and arms the floor again with the next request. So a node that
// has started but served nothing, and an idle one, keep the heap they
// had without the floor.
//
// The state is the process's (GOGC is): Arm and Disarm are safe for
// concurrent use, and the last Arm's floor holds.
package gcfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

var (
	// armed is Arm's fast path: the floor in force (0: disarmed).
	armed atomic.Uint64
	// off is set once the process's GOGC is known to be off: Arm then
	// returns at once.
	off atomic.Bool

	mu sync.Mutex
	// base is the process's own GOGC, read at the first Arm (-1: off,
	// then Arm does nothing).
	base  int
	known bool
	// percent is the GOGC last set while armed (base when disarmed).
	percent int
	// gen numbers the arming: a collection's callback of an earlier one
	// does nothing and is not renewed.
	gen uint64
	// cycles counts the collections the callback saw (tests).
	cycles atomic.Uint64
)

// Arm keeps the heap goal at least floor bytes from now on (0: Disarm).
// Its cost once armed with the same floor is one atomic load, so a server
// calls it for every request.
func Arm(floor uint64) {
	if armed.Load() == floor || off.Load() {
		return
	}
	if floor == 0 {
		Disarm()
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if armed.Load() == floor {
		return
	}
	if !known {
		base = debug.SetGCPercent(100)
		debug.SetGCPercent(base)
		percent, known = base, true
	}
	if base < 0 {
		off.Store(true) // GOGC=off: nothing to raise
		return
	}
	gen++
	armed.Store(floor)
	adjust(floor)
	watch(gen)
}

// Disarm gives the process its own GOGC back.
func Disarm() {
	if armed.Load() == 0 {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if armed.Load() == 0 {
		return
	}
	gen++
	armed.Store(0)
	if percent != base {
		debug.SetGCPercent(base)
		percent = base
	}
}

// Armed returns the floor in force (0: none).
func Armed() uint64 { return armed.Load() }

// Percent returns the GOGC the package last set (the process's own
// before the first Arm).
func Percent() int {
	mu.Lock()
	defer mu.Unlock()
	if !known {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	return percent
}

// sentinel is allocated once per collection watched; its cleanup runs
// after the collection that found it unreachable. It holds a pointer so
// that it is never a tiny allocation (those share a block and are freed
// together).
type sentinel struct{ _ *sentinel }

// watch asks for a call after the next collection.
func watch(g uint64) {
	runtime.AddCleanup(new(sentinel), collected, g)
}

// collected runs after each collection while the arming g holds: it sets
// the GOGC of the next cycle and watches for the one after.
func collected(g uint64) {
	cycles.Add(1)
	mu.Lock()
	defer mu.Unlock()
	if g != gen || armed.Load() == 0 {
		return
	}
	adjust(armed.Load())
	watch(g)
}

var samples = []metrics.Sample{
	{Name: "/gc/heap/live:bytes"},
	{Name: "/gc/scan/stack:bytes"},
	{Name: "/gc/scan/globals:bytes"},
}

// heapMinimum is the runtime's least heap goal at GOGC=100 (its
// defaultHeapMinimum, 4 MiB): the goal is never below heapMinimum ×
// GOGC/100.
const heapMinimum = 4 << 20

// maxPercent bounds the GOGC adjust sets (a live heap of a few KiB would
// ask for millions).
const maxPercent = 100_000

// adjust sets GOGC so that the next collection starts at floor bytes of
// heap, or base's goal if that is higher. The runtime's goal is the
// larger of live + (live + stacks + globals) × GOGC/100 (the GC pacer of
// Go 1.18 and later) and heapMinimum × GOGC/100. Called with mu held.
func adjust(floor uint64) {
	metrics.Read(samples)
	var live, roots uint64
	if samples[0].Value.Kind() == metrics.KindUint64 {
		live = samples[0].Value.Uint64()
	}
	roots = live
	for _, s := range samples[1:] {
		if s.Value.Kind() == metrics.KindUint64 {
			roots += s.Value.Uint64()
		}
	}
	p := base
	if live < floor {
		// The runtime also keeps the goal at least heapMinimum × GOGC/100:
		// capped there, a small live heap's goal is the floor itself, not
		// above it.
		want := uint64(maxPercent)
		if roots > 0 {
			want = (floor - live) * 100 / roots
		}
		p = int(min(want, floor*100/heapMinimum, maxPercent, math.MaxInt32))
		p = max(p, base)
	}
	if p != percent {
		debug.SetGCPercent(p)
		percent = p
	}
}

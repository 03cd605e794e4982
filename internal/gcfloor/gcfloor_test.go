package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// The tests change the process's GOGC: none runs in parallel, and each
// leaves the floor disarmed.

var sink []byte

// churn allocates n bytes of garbage in chunks of 4 KiB (a request's
// worth) and returns the collections that ran meanwhile.
func churn(n int) uint32 {
	var st runtime.MemStats
	runtime.ReadMemStats(&st)
	before := st.NumGC
	for i := 0; i < n; i += 4 << 10 {
		sink = make([]byte, 4<<10)
	}
	sink = nil
	runtime.ReadMemStats(&st)
	return st.NumGC - before
}

// settle runs a collection and waits until the floor's callback has seen
// it (it runs after the collection, on the runtime's cleanup goroutine).
func settle(t *testing.T) {
	t.Helper()
	n := cycles.Load()
	runtime.GC()
	for deadline := time.Now().Add(10 * time.Second); cycles.Load() == n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the collection's callback did not run")
		}
	}
}

func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestArmFewerCollections: with a small live heap, 64 MiB of 4 KiB
// garbage costs several collections at GOGC=100 (the goal is 4 MiB, and
// somewhat more: what is allocated while a collection marks counts as
// live) and at most one with a 256 MiB floor.
func TestArmFewerCollections(t *testing.T) {
	defer Disarm()
	Disarm()
	runtime.GC()
	n0 := churn(64 << 20)
	if n0 < 3 {
		t.Fatalf("disarmed: %d collections for 64 MiB (the test expects a small live heap)", n0)
	}
	Arm(256 << 20)
	if got := Armed(); got != 256<<20 {
		t.Fatalf("Armed() = %d", got)
	}
	settle(t)
	if n := churn(64 << 20); n > 1 {
		t.Errorf("armed at 256 MiB: %d collections for 64 MiB of garbage (disarmed: %d), want at most 1", n, n0)
	}
}

// TestGoalIsTheFloor: armed, a small live heap's goal is the floor (not
// above it: the runtime's minimum goal grows with GOGC), after every
// collection; disarmed, GOGC is the process's own again.
func TestGoalIsTheFloor(t *testing.T) {
	defer Disarm()
	Disarm()
	base := Percent()
	const floor = 32 << 20
	Arm(floor)
	for range 3 {
		settle(t)
		if g := heapGoal(); g > floor+floor/16 || g < floor-floor/4 {
			t.Fatalf("armed at %d: heap goal %d (GOGC %d)", floor, g, Percent())
		}
	}
	if p := Percent(); p <= base {
		t.Errorf("armed: GOGC %d, not above the process's %d", p, base)
	}
	Disarm()
	if p := debug.SetGCPercent(base); p != base {
		t.Errorf("disarmed: GOGC %d, want the process's %d", p, base)
	}
	settle(t)
	if g := heapGoal(); g >= floor-floor/4 {
		t.Errorf("disarmed: heap goal %d, still near the floor", g)
	}
}

// TestLargeLiveHeap: a live heap whose own goal is above the floor keeps
// the process's GOGC; once it is freed, the floor holds again.
func TestLargeLiveHeap(t *testing.T) {
	defer Disarm()
	Disarm()
	base := Percent()
	live := make([]byte, 24<<20)
	for i := range live {
		live[i] = 1
	}
	Arm(32 << 20)
	settle(t)
	if p := Percent(); p != base {
		t.Errorf("live heap of 24 MiB, floor 32 MiB: GOGC %d, want %d", p, base)
	}
	runtime.KeepAlive(live)
	live = nil
	settle(t)
	if p := Percent(); p <= base {
		t.Errorf("live heap freed: GOGC %d, want above %d", p, base)
	}
}

// TestArmZeroDisarms: Arm(0) is Disarm, and a new floor replaces the old.
func TestArmZeroDisarms(t *testing.T) {
	defer Disarm()
	base := Percent()
	Arm(16 << 20)
	Arm(64 << 20)
	if got := Armed(); got != 64<<20 {
		t.Fatalf("Armed() = %d, want the last floor", got)
	}
	Arm(0)
	if Armed() != 0 || Percent() != base {
		t.Fatalf("Arm(0): armed %d, GOGC %d (want 0, %d)", Armed(), Percent(), base)
	}
}

// BenchmarkArm is what every request pays once the floor is armed.
func BenchmarkArm(b *testing.B) {
	defer Disarm()
	Arm(32 << 20)
	b.ReportAllocs()
	for b.Loop() {
		Arm(32 << 20)
	}
}

// BenchmarkChurn allocates 4 KiB of garbage an op (about what a small S3
// GET allocates) with and without a 32 MiB floor, and reports the
// collections per million ops.
func BenchmarkChurn(b *testing.B) {
	for _, floor := range []uint64{0, 32 << 20} {
		name := "GOGC"
		if floor > 0 {
			name = "floor-32MiB"
		}
		b.Run(name, func(b *testing.B) {
			defer Disarm()
			Arm(floor)
			var st runtime.MemStats
			runtime.ReadMemStats(&st)
			before := st.NumGC
			b.ReportAllocs()
			for b.Loop() {
				sink = make([]byte, 4<<10)
			}
			runtime.ReadMemStats(&st)
			b.ReportMetric(float64(st.NumGC-before)*1e6/float64(b.N), "GCs/Mop")
		})
	}
}

// TestGOGCOff: with the collector off (GOGC=off) Arm changes nothing.
func TestGOGCOff(t *testing.T) {
	Disarm()
	forget := func() {
		mu.Lock()
		known = false
		off.Store(false)
		mu.Unlock()
	}
	forget()
	old := debug.SetGCPercent(-1)
	defer func() {
		debug.SetGCPercent(old)
		forget()
	}()
	Arm(32 << 20)
	Arm(32 << 20)
	if Armed() != 0 {
		t.Errorf("GOGC=off: armed at %d", Armed())
	}
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Errorf("GOGC=off: Arm set GOGC %d", p)
	}
}

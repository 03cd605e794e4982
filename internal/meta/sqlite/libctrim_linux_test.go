//go:build linux && (amd64 || arm64 || loong64 || ppc64le || s390x || riscv64 || 386 || arm) && !libc.membrk && !libc.memgrind

package sqlite

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"modernc.org/libc"
)

// TestTrimCHeapVersions: go.mod requires the libc and memory versions
// whose allocator and lock libctrim_linux.go names; after an upgrade, read
// mem_musl.go, libc_musl.go and memory.go again (the names, the lock,
// Trim) and update libcTrimVersions.
func TestTrimCHeapVersions(t *testing.T) {
	mod, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(l); len(f) >= 2 {
			if _, ok := libcTrimVersions[f[0]]; ok {
				got[f[0]] = f[1]
			}
		}
	}
	for p, v := range libcTrimVersions {
		if got[p] != v {
			t.Errorf("go.mod requires %s %q, the trim was written for %s", p, got[p], v)
		}
	}
	if !libcTrimOK() {
		t.Error("the trim is off in this build")
	}
}

// TestTrimCHeapHoldsLibcLock: libcAllocatorMu is the lock libc's malloc
// takes (a malloc waits while the test holds it), not a variable of ours
// that the name fell back to.
func TestTrimCHeapHoldsLibcLock(t *testing.T) {
	tls := libc.NewTLS()
	defer tls.Close()
	libcAllocatorMu.Lock()
	done := make(chan uintptr)
	go func() { done <- libc.Xmalloc(tls, 100) }()
	select {
	case p := <-done:
		libcAllocatorMu.Unlock()
		libc.Xfree(tls, p)
		t.Fatal("libc's malloc returned while libcAllocatorMu was held: not libc's lock")
	case <-time.After(200 * time.Millisecond):
	}
	libcAllocatorMu.Unlock()
	libc.Xfree(tls, <-done)
}

// TestTrimCHeapReturnsPool: regions SQLite's allocator retained after
// their frees (here 8 MiB of 100 KiB blocks, touched, then freed) stay
// resident until trimCHeap returns them: RssAnon falls by the 4 MiB the
// pool keeps committed.
func TestTrimCHeapReturnsPool(t *testing.T) {
	tls := libc.NewTLS()
	defer tls.Close()
	var ps []uintptr
	for range 80 {
		p := libc.Xmalloc(tls, 100<<10)
		if p == 0 {
			t.Fatal("malloc failed")
		}
		libc.Xmemset(tls, p, 1, 100<<10)
		ps = append(ps, p)
	}
	for _, p := range ps {
		libc.Xfree(tls, p)
	}
	before := rssAnon(t)
	ok, err := trimCHeap()
	if !ok || err != nil {
		t.Fatalf("trimCHeap: %v, %v", ok, err)
	}
	after := rssAnon(t)
	t.Logf("RssAnon %d KiB before the trim, %d KiB after", before>>10, after>>10)
	if before-after < 3<<20 {
		t.Errorf("the trim returned %d KiB; the pool kept 4 MiB committed", (before-after)>>10)
	}
}

func rssAnon(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n << 10
		}
	}
	t.Fatal("no RssAnon in /proc/self/status")
	return 0
}

// BenchmarkTrimCHeap: a trim of SQLite's allocator after 8 MiB of 100 KiB
// blocks were freed, and the mappings the next allocations then make
// again (what the first queries after an idle trim pay).
func BenchmarkTrimCHeap(b *testing.B) {
	tls := libc.NewTLS()
	defer tls.Close()
	ps := make([]uintptr, 80)
	b.ReportAllocs()
	for b.Loop() {
		for i := range ps {
			ps[i] = libc.Xmalloc(tls, 100<<10)
		}
		for _, p := range ps {
			libc.Xfree(tls, p)
		}
		if _, err := trimCHeap(); err != nil {
			b.Fatal(err)
		}
	}
}

//go:build linux

package exemap

import (
	"encoding/binary"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// residentReadOnly returns how many pages of the executable's read-only
// mappings are mapped (/proc/self/pagemap).
func residentReadOnly(t *testing.T) int {
	t.Helper()
	const page = 4096
	exe := exePath(t)
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	pm := open(t, "/proc/self/pagemap")
	n := 0
	for _, line := range strings.Split(string(maps), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 6 || fs[5] != exe || strings.Contains(fs[1], "w") {
			continue
		}
		lo, hi, _ := strings.Cut(fs[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		b := make([]byte, (end-start)/page*8)
		if _, err := pm.ReadAt(b, int64(start/page*8)); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(b); i += 8 {
			if binary.LittleEndian.Uint64(b[i:])>>63 == 1 {
				n++
			}
		}
	}
	return n
}

// TestReleaseUnmapsReadOnlyPages: Release unmaps the executable's
// read-only pages this process had mapped (the ones touched again right
// after, by the test itself, come back one at a time), and the program
// runs on, its writable data intact.
func TestReleaseUnmapsReadOnlyPages(t *testing.T) {
	if Report().Off {
		t.Skip("COFFER_EXEC_ADVICE=off")
	}
	dataCanary = 0x5eed
	before := residentReadOnly(t)
	released, err := Release()
	if err != nil {
		t.Fatalf("Release: %v", err)
	}
	after := residentReadOnly(t)
	t.Logf("read-only pages mapped: %d before, %d after; released %d KiB", before, after, released>>10)
	if before < 256 || released < int64(before)*4096/2 {
		t.Fatalf("released %d bytes of %d pages mapped", released, before)
	}
	if after > before/4 {
		t.Errorf("%d of %d read-only pages still mapped after Release", after, before)
	}
	if dataCanary != 0x5eed {
		t.Errorf("writable data changed: %#x", dataCanary)
	}
}

var dataCanary int

// TestReleaseKeepsPrivatePages: a page of a read-only mapping that was
// written through the private mapping (as a debugger sets a breakpoint)
// holds content the file does not; Release leaves its mapping alone rather
// than put the file's bytes back.
func TestReleaseKeepsPrivatePages(t *testing.T) {
	if Report().Off {
		t.Skip("COFFER_EXEC_ADVICE=off")
	}
	const page = 4096
	p := unsafe.Pointer(unsafe.StringData(patched))
	pg := unsafe.Add(p, -int(uintptr(p)&(page-1)))
	mem := unsafe.Slice((*byte)(pg), page)
	if err := syscall.Mprotect(mem, syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	b := unsafe.Slice((*byte)(p), len(patched))
	b[0] = 'P'
	if err := syscall.Mprotect(mem, syscall.PROT_READ); err != nil {
		t.Fatal(err)
	}
	if _, err := Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if patched[0] != 'P' {
		t.Fatalf("the page written through the private mapping reverted to the file's content: %q", patched)
	}
}

// patched is read-only data that TestReleaseKeepsPrivatePages overwrites
// in memory.
var patched = "unpatched read-only data of the test executable"

const sampleSmaps = `00400000-01b8a000 r-xp 00000000 fe:00 10526858                           /usr/local/bin/coffer
Size:              24104 kB
Rss:                9612 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me rr nh uw
01b8a000-01b8b000 r--p 0178a000 fe:00 10526858                           /usr/local/bin/coffer
Size:                  4 kB
Rss:                   4 kB
Anonymous:             4 kB
01b8b000-035e2000 r--p 0178b000 fe:00 10526858                           /usr/local/bin/coffer
Size:              27000 kB
Rss:               12748 kB
VmFlags: rd mr mw me rr nh uw
035e2000-036e7000 rw-p 031e2000 fe:00 10526858                           /usr/local/bin/coffer
Rss:                 916 kB
Anonymous:           288 kB
7f3796b48000-7f3796b6e000 r--p 00000000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 152 kB
Anonymous:             0 kB
`

// TestParseSmaps: each mapping of the executable with its Rss and
// Anonymous bytes; a mapping without an Anonymous line counts as holding
// anonymous pages (-1), so Release leaves it.
func TestParseSmaps(t *testing.T) {
	got := parseSmaps([]byte(sampleSmaps), "/usr/local/bin/coffer")
	want := []smapsMapping{
		{mapping{0x400000, 0x1b8a000, false}, 9612 << 10, 0},
		{mapping{0x1b8a000, 0x1b8b000, false}, 4 << 10, 4 << 10},
		{mapping{0x1b8b000, 0x35e2000, false}, 12748 << 10, -1},
		{mapping{0x35e2000, 0x36e7000, true}, 916 << 10, 288 << 10},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func FuzzParseSmaps(f *testing.F) {
	f.Add([]byte(sampleSmaps), "/usr/local/bin/coffer")
	f.Add([]byte("Rss: 4 kB\n1-2 r-xp 0 0 0 /a\nAnonymous: x kB\n:\n"), "/a")
	f.Fuzz(func(t *testing.T, b []byte, exe string) {
		for _, m := range parseSmaps(b, exe) {
			if m.end <= m.start || m.rss < 0 {
				t.Fatalf("%q: %+v", b, m)
			}
		}
	})
}

// TestReleaseAllocatesLittle: Release reads /proc/self/smaps outside the
// Go heap, which the idle trim has just collected and returned (through
// the heap it allocated several hundred KiB, resident until the next
// collection).
func TestReleaseAllocatesLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts: run without -short (scripts/test.sh: without the race detector, which changes them)")
	}
	if Report().Off {
		t.Skip("COFFER_EXEC_ADVICE=off")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Release(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<10 {
		t.Errorf("Release allocated %d KiB on the Go heap", got>>10)
	}
}

// BenchmarkRelease: what one idle trim's Release costs (reading
// /proc/self/smaps, one madvise a mapping), with the faults that bring
// back the pages the loop itself runs; -benchmem shows it allocates
// next to nothing.
func BenchmarkRelease(b *testing.B) {
	if Report().Off {
		b.Skip("COFFER_EXEC_ADVICE=off")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Release(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReleaseRefault: what a page of the executable costs to map back
// after Release (a minor fault from the page cache, one page per fault
// where fault-around is off): Release, then a read of one byte in each of
// 256 pages of the executable's read-only data; ns/page is the time of
// the reads divided by the pages.
func BenchmarkReleaseRefault(b *testing.B) {
	if Report().Off {
		b.Skip("COFFER_EXEC_ADVICE=off")
	}
	const page, pages = 4096, 256
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		b.Fatal(err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		b.Fatal(err)
	}
	var start uint64
	for _, line := range strings.Split(string(maps), "\n") {
		fs := strings.Fields(line)
		if len(fs) == 6 && fs[5] == exe && fs[1] == "r--p" {
			lo, hi, _ := strings.Cut(fs[0], "-")
			s, _ := strconv.ParseUint(lo, 16, 64)
			e, _ := strconv.ParseUint(hi, 16, 64)
			if e-s >= pages*page {
				start = s
				break
			}
		}
	}
	if start == 0 {
		b.Skip("no read-only mapping large enough")
	}
	base := unsafe.Pointer(unsafe.StringData(rodata))
	var reads time.Duration
	for b.Loop() {
		if _, err := Release(); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		for i := range pages {
			sink += *(*byte)(unsafe.Add(base, int(uintptr(start)+uintptr(i*page))-int(uintptr(base))))
		}
		reads += time.Since(t0)
	}
	b.ReportMetric(float64(reads.Nanoseconds())/float64(b.N*pages), "ns/page")
}

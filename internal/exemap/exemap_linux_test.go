//go:build linux

package exemap

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// exePath is the path of the test's executable as /proc/self/maps names it.
func exePath(t *testing.T) string {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// open opens path for reading until the test ends.
func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// smapsFlags returns the VmFlags of each mapping of the executable in
// /proc/self/smaps, with its permissions.
func smapsFlags(t *testing.T) map[string][]string {
	t.Helper()
	exe, f := exePath(t), open(t, "/proc/self/smaps")
	got := map[string][]string{}
	var cur string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		// A mapping's header: "start-end perms offset dev inode [path]".
		if fs := strings.Fields(line); len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			cur = ""
			if len(fs) == 6 && fs[5] == exe {
				cur = fs[0] + " " + fs[1]
			}
			continue
		}
		if cur != "" && strings.HasPrefix(line, "VmFlags:") {
			got[cur] = strings.Fields(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func has(flags []string, f string) bool {
	for _, x := range flags {
		if x == f {
			return true
		}
	}
	return false
}

// TestExecutableAdvised: the init advised every mapping of the executable
// (VmFlags "rr": MADV_RANDOM, "nh": MADV_NOHUGEPAGE) and, where the kernel
// allowed a userfaultfd, registered the read-only ones ("uw").
func TestExecutableAdvised(t *testing.T) {
	r := Report()
	maps := smapsFlags(t)
	if len(maps) < 2 || r.Mappings != len(maps) || r.Advised != len(maps) {
		t.Fatalf("Report %+v; the executable's mappings in smaps: %v", r, maps)
	}
	_, err := os.Stat("/sys/kernel/mm/transparent_hugepage")
	thp := err == nil
	for m, flags := range maps {
		if !has(flags, "rr") || (thp && !has(flags, "nh")) {
			t.Errorf("%s: VmFlags %v lack rr (MADV_RANDOM) or nh (MADV_NOHUGEPAGE)", m, flags)
		}
		if readOnly := !strings.Contains(strings.Fields(m)[1], "w"); readOnly && r.Lazy > 0 && !has(flags, "uw") {
			t.Errorf("%s: read-only, VmFlags %v lack uw (userfaultfd write-protect)", m, flags)
		}
	}
	if r.Lazy == 0 {
		t.Logf("no userfaultfd here (%s): fault-around stays on", r.Err)
	}
}

// TestExecAdviceOff: COFFER_EXEC_ADVICE=off leaves the kernel's defaults
// (a child process: the init runs before any test).
func TestExecAdviceOff(t *testing.T) {
	if os.Getenv("EXEMAP_CHILD") == "flags" {
		for m, flags := range smapsFlags(t) {
			fmt.Printf("%s %s\n", strings.ReplaceAll(m, " ", "_"), strings.Join(flags, ","))
		}
		return
	}
	out := child(t, "flags", "TestExecAdviceOff")
	if !strings.Contains(out, "r--p") {
		t.Fatalf("child printed no mapping:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if fs := strings.Fields(line); len(fs) == 2 && strings.Contains(fs[0], "-") {
			flags := strings.Split(fs[1], ",")
			if has(flags, "rr") || has(flags, "uw") {
				t.Errorf("COFFER_EXEC_ADVICE=off: %s advised anyway: %v", fs[0], flags)
			}
		}
	}
}

func child(t *testing.T, what, test string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), "EXEMAP_CHILD="+what, "COFFER_EXEC_ADVICE=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return string(out)
}

// TestOnlyTouchedPageMapped: a read of one page of the executable maps
// that page alone, not the 64 KiB around it that the page cache holds
// (the kernel's fault-around); a child with COFFER_EXEC_ADVICE=off shows
// that this kernel does fault around (else there is nothing to test).
func TestOnlyTouchedPageMapped(t *testing.T) {
	if os.Getenv("EXEMAP_CHILD") == "probe" {
		fmt.Printf("neighbours %d\n", probe(t))
		return
	}
	out := child(t, "probe", "TestOnlyTouchedPageMapped")
	i := strings.Index(out, "neighbours ")
	if i < 0 {
		t.Skipf("child found nothing to probe:\n%s", out)
	}
	var off int
	if _, err := fmt.Sscanf(out[i:], "neighbours %d", &off); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if off == 0 {
		t.Skip("this kernel maps no page around a fault (COFFER_EXEC_ADVICE=off): nothing to test")
	}
	if !userfaultfdAllowed() {
		t.Skipf("no userfaultfd here (%s): fault-around stays on", Report().Err)
	}
	if got := probe(t); got != 0 {
		t.Errorf("advised: a read of one page mapped %d other pages of its 64 KiB block (not advised: %d)", got, off)
	}
}

// probe finds a 64 KiB block of the executable's text or read-only data with no
// page mapped, makes sure the page cache holds it, reads one byte of it,
// and returns how many of the block's other pages got mapped.
func probe(t *testing.T) int {
	t.Helper()
	const page, block = 4096, 64 << 10
	exe := exePath(t)
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	pm, file := open(t, "/proc/self/pagemap"), open(t, exe)
	present := func(addr uintptr, n int) []bool {
		b := make([]byte, 8*n)
		if _, err := pm.ReadAt(b, int64(addr/page*8)); err != nil {
			t.Fatal(err)
		}
		p := make([]bool, n)
		for i := range p {
			p[i] = binary.LittleEndian.Uint64(b[8*i:])>>63 == 1
		}
		return p
	}
	for _, line := range strings.Split(string(maps), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 6 || fs[5] != exe || (fs[1] != "r--p" && fs[1] != "r-xp") {
			continue
		}
		lo, hi, _ := strings.Cut(fs[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		offset, _ := strconv.ParseUint(fs[2], 16, 64)
		for b := (start + block - 1) &^ (block - 1); b+block <= end; b += block {
			p := present(uintptr(b), block/page)
			clean := true
			for _, x := range p {
				clean = clean && !x
			}
			if !clean {
				continue
			}
			buf := make([]byte, block)
			if _, err := file.ReadAt(buf, int64(offset+b-start)); err != nil {
				t.Fatal(err)
			}
			target := uintptr(b) + 5*page
			// A pointer into the executable's read-only data (a string
			// constant), moved to the target.
			base := unsafe.Pointer(unsafe.StringData(rodata))
			sink += *(*byte)(unsafe.Add(base, int(target)-int(uintptr(base))))
			p = present(uintptr(b), block/page)
			if !p[5] {
				t.Fatalf("the page read at %#x is not mapped", target)
			}
			n := 0
			for i, x := range p {
				if x && i != 5 {
					n++
				}
			}
			return n
		}
	}
	t.Skip("no unmapped 64 KiB block in the executable's read-only data")
	return 0
}

var sink byte

const rodata = "a string constant, in the executable's read-only data"

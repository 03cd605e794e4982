//go:build linux

package main

import (
	"os"
	"strings"
	"testing"
)

// TestExecutableAdvised: main imports internal/exemap, whose init advised
// this executable's mappings (VmFlags "rr": MADV_RANDOM) before any other
// heavy init; without the import the coffer binary keeps the kernel's
// fault-around and read-ahead (docs/operations.md, "What to size").
func TestExecutableAdvised(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var mine, advised int
	ours := false
	for _, line := range strings.Split(string(smaps), "\n") {
		fs := strings.Fields(line)
		switch {
		case len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":"):
			ours = len(fs) == 6 && fs[5] == exe
			if ours {
				mine++
			}
		case ours && len(fs) > 0 && fs[0] == "VmFlags:":
			for _, f := range fs[1:] {
				if f == "rr" {
					advised++
				}
			}
		}
	}
	if mine == 0 || advised != mine {
		t.Errorf("%d of the executable's %d mappings advised MADV_RANDOM", advised, mine)
	}
}

//go:build linux

package exemap

import (
	"fmt"
	"testing"
)

const sampleMaps = `00400000-01b8a000 r-xp 00000000 fe:00 10526858                           /usr/local/bin/coffer
01b8a000-035e2000 r--p 0178a000 fe:00 10526858                           /usr/local/bin/coffer
035e2000-036e7000 rw-p 031e2000 fe:00 10526858                           /usr/local/bin/coffer
036e7000-0573b000 rw-p 00000000 00:00 0 
7f3796b48000-7f3796b6e000 r--p 00000000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
7ffd20cce000-7ffd20cef000 rw-p 00000000 00:00 0                          [stack]
7fcc42f43000-7fcc42f45000 r-xp 00000000 00:00 0                          /usr/local/bin/coffer (deleted)
`

// TestParseMaps: the executable's mappings and nothing else, by exact path.
func TestParseMaps(t *testing.T) {
	got := parseMaps([]byte(sampleMaps), "/usr/local/bin/coffer")
	want := []mapping{{0x400000, 0x1b8a000, false}, {0x1b8a000, 0x35e2000, false}, {0x35e2000, 0x36e7000, true}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := parseMaps([]byte(sampleMaps), "/usr/local/bin/coffer (deleted)"); len(got) != 1 || got[0].start != 0x7fcc42f43000 {
		t.Errorf("a path with a space: %v", got)
	}
	for _, bad := range []string{"", "\n\n", "zz-01 r-xp 0 0 0 /x", "01-zz r-xp 0 0 0 /x", "02-01 r-xp 0 0 0 /x", "0100 r-xp 0 0 0 /x",
		"00400000-01b8a000 r 0 0 0 /x", "11111111111111111-2 r-xp 0 0 0 /x", "00400000-01b8a000 r-xp 0 0 0"} {
		if got := parseMaps([]byte(bad), "/x"); len(got) != 0 {
			t.Errorf("%q: %v", bad, got)
		}
	}
}

func FuzzParseMaps(f *testing.F) {
	f.Add([]byte(sampleMaps), "/usr/local/bin/coffer")
	f.Add([]byte("1-2 rw 0 0 0 /a b\n"), "/a b")
	f.Fuzz(func(t *testing.T, b []byte, exe string) {
		for _, m := range parseMaps(b, exe) {
			if m.end <= m.start {
				t.Fatalf("%q: mapping %v ends before it starts", b, m)
			}
		}
	})
}

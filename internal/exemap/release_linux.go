//go:build linux

package exemap

import "syscall"

// Release drops this process's mappings of the executable's read-only
// pages (text, rodata, pclntab): MADV_DONTNEED on each read-only mapping
// of the executable that holds no private (anonymous) page. It returns the
// resident bytes those mappings held before (their Rss in
// /proc/self/smaps).
//
// The pages are clean copies of the file: the page cache keeps them (a
// private file mapping's MADV_DONTNEED only unmaps), and the next touch of
// one maps it back with a minor fault, one page at a time where the init
// turned fault-around off. Nothing is lost: a mapping with any anonymous
// page (a page written through a private mapping: a debugger's breakpoint,
// a relocation before RELRO made it read-only) is left alone, since
// MADV_DONTNEED would put the file's content back in its place, and
// writable mappings (the executable's data) are never touched. So after a
// burst, the code and data that only the burst ran stop counting in the
// process's RSS until they run again (docs/PERFORMANCE.md, "Issue 23,
// fourth pass: idle RSS after a burst").
//
// It does nothing (0, nil) with COFFER_EXEC_ADVICE=off.
func Release() (int64, error) {
	if result.Off {
		return 0, nil
	}
	ms, err := exeSmaps()
	if err != nil {
		return 0, err
	}
	var released int64
	var first error
	for _, m := range ms {
		if m.writable || m.anon != 0 {
			continue
		}
		if err := madvise(m.mapping, syscall.MADV_DONTNEED); err != nil {
			if first == nil {
				first = errno("madvise", err.(syscall.Errno))
			}
			continue
		}
		released += m.rss
	}
	return released, first
}

// exeSmaps returns the executable's mappings in /proc/self/smaps, read
// off the Go heap (readOffHeap); the mappings hold no part of the file.
func exeSmaps() ([]smapsMapping, error) {
	exe, err := readlink("/proc/self/exe")
	if err != nil {
		return nil, err
	}
	smaps, free, err := readOffHeap("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	defer free()
	return parseSmaps(smaps, exe), nil
}

// smapsMapping is one mapping of /proc/PID/smaps with its resident and
// anonymous bytes.
type smapsMapping struct {
	mapping
	rss, anon int64
}

// parseSmaps returns the mappings of /proc/PID/smaps whose path is exe,
// each with its "Rss:" and "Anonymous:" figures (kB in the file, bytes
// here). A mapping whose Anonymous line is missing counts as anonymous
// (-1): Release leaves what it cannot tell alone.
func parseSmaps(b []byte, exe string) []smapsMapping {
	var ms []smapsMapping
	cur := -1
	for len(b) > 0 {
		line := b
		if i := indexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		// A figure: "Name:  value kB" (without allocating: ~25 lines a
		// mapping); a header: "start-end perms offset dev inode [path]".
		if name, rest, ok := figure(line); ok {
			if cur < 0 {
				continue
			}
			switch string(name) { // no allocation: compared only
			case "Rss":
				if v, ok := decimal(rest); ok {
					ms[cur].rss = v << 10
				}
			case "Anonymous":
				if v, ok := decimal(rest); ok {
					ms[cur].anon = v << 10
				}
			}
			continue
		}
		cur = -1
		if p := parseMaps(line, exe); len(p) == 1 {
			ms = append(ms, smapsMapping{mapping: p[0], anon: -1})
			cur = len(ms) - 1
		}
	}
	return ms
}

// figure splits "Name:   value kB" into the name and the value's digits;
// ok is false for any other line (a mapping's header has no ':' in its
// first field).
func figure(line []byte) (name, value []byte, ok bool) {
	i := 0
	for i < len(line) && line[i] != ':' && line[i] != ' ' {
		i++
	}
	if i == 0 || i == len(line) || line[i] != ':' {
		return nil, nil, false
	}
	name = line[:i]
	v := line[i+1:]
	for len(v) > 0 && v[0] == ' ' {
		v = v[1:]
	}
	j := 0
	for j < len(v) && v[j] != ' ' {
		j++
	}
	return name, v[:j], true
}

func decimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// Resident returns the bytes of the executable's read-only mappings that
// this process has mapped (their Rss in /proc/self/smaps).
func Resident() (int64, error) {
	ms, err := exeSmaps()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, m := range ms {
		if !m.writable {
			n += m.rss
		}
	}
	return n, nil
}

// readOffHeap reads a /proc file into memory mapped for the purpose, not
// the Go heap: Release runs after the idle trim's last collection, and
// the ~100 KiB of /proc/self/smaps (read through a growing buffer, several
// times that) would stay in the heap, resident, until the next one. free
// unmaps it.
func readOffHeap(path string) (b []byte, free func(), err error) {
	for size := 256 << 10; ; size *= 2 {
		m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
		if err != nil {
			return nil, nil, err
		}
		n, err := readInto(path, m)
		if err != nil || n == len(m) {
			syscall.Munmap(m)
			if err != nil {
				return nil, nil, err
			}
			continue // it may not all have fitted: twice the room
		}
		return m[:n], func() { syscall.Munmap(m) }, nil
	}
}

// readInto reads path into b until the end of the file or of b.
func readInto(path string, b []byte) (int, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(fd)
	n := 0
	for n < len(b) {
		m, err := syscall.Read(fd, b[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

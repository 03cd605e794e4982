//go:build linux

package exemap

import (
	"syscall"
	"unsafe"
)

// Only syscall is imported, so that this init runs before the inits of
// the packages whose pages it is meant to keep from being mapped in blocks.

func init() {
	if v, _ := syscall.Getenv("COFFER_EXEC_ADVICE"); v == "off" {
		result.Off = true
		return
	}
	result = apply()
}

type mapping struct {
	start, end uintptr
	writable   bool
}

func apply() Result {
	var r Result
	exe, err := readlink("/proc/self/exe")
	if err != nil {
		r.Err = "readlink /proc/self/exe: " + err.Error()
		return r
	}
	maps, err := readFile("/proc/self/maps")
	if err != nil {
		r.Err = "read /proc/self/maps: " + err.Error()
		return r
	}
	ms := parseMaps(maps, exe)
	r.Mappings = len(ms)
	var ro []mapping
	for _, m := range ms {
		if madvise(m, syscall.MADV_RANDOM) != nil {
			continue
		}
		// Refused (EINVAL) by a kernel without transparent huge pages,
		// which then maps no 2 MiB page either.
		_ = madvise(m, syscall.MADV_NOHUGEPAGE)
		r.Advised++
		if !m.writable {
			ro = append(ro, m)
		}
	}
	n, err := lazy(ro)
	r.Lazy = n
	if err != nil {
		r.Err = err.Error()
	}
	return r
}

func madvise(m mapping, advice int) error {
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}

// parseMaps returns the mappings of /proc/PID/maps whose path is exe:
// "start-end perms offset dev inode path", addresses in hex.
func parseMaps(b []byte, exe string) []mapping {
	var ms []mapping
	for len(b) > 0 {
		line := b
		if i := indexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		f := fields(line, 6)
		if len(f) < 6 || string(f[5]) != exe {
			continue
		}
		dash := indexByte(f[0], '-')
		if dash < 0 {
			continue
		}
		start, ok1 := hex(f[0][:dash])
		end, ok2 := hex(f[0][dash+1:])
		if !ok1 || !ok2 || end <= start || len(f[1]) < 2 {
			continue
		}
		ms = append(ms, mapping{start: start, end: end, writable: f[1][1] == 'w'})
	}
	return ms
}

// fields splits line at runs of spaces into at most n fields; the last
// keeps the rest of the line (a path may hold spaces).
func fields(line []byte, n int) [][]byte {
	var f [][]byte
	for len(line) > 0 && len(f) < n {
		for len(line) > 0 && line[0] == ' ' {
			line = line[1:]
		}
		if len(line) == 0 {
			break
		}
		if len(f) == n-1 {
			f = append(f, line)
			break
		}
		i := indexByte(line, ' ')
		if i < 0 {
			i = len(line)
		}
		f = append(f, line[:i])
		line = line[i:]
	}
	return f
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func hex(b []byte) (uintptr, bool) {
	if len(b) == 0 || len(b) > 2*int(unsafe.Sizeof(uintptr(0))) {
		return 0, false
	}
	var v uintptr
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			return 0, false
		}
		v = v<<4 | uintptr(c)
	}
	return v, true
}

func readlink(path string) (string, error) {
	buf := make([]byte, 4096)
	n, err := syscall.Readlink(path, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// readFile reads a /proc file whose size stat does not tell.
func readFile(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	b := make([]byte, 0, 16<<10)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

package diskblob

import (
	"os"

	"golang.org/x/sys/unix"
)

// setDirect turns O_DIRECT on f on or off. It fails (EINVAL) where the
// file system cannot do direct I/O (tmpfs, some FUSE and network file
// systems): write then stays buffered.
func setDirect(f *os.File, on bool) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil {
			serr = err
			return
		}
		if on {
			fl |= unix.O_DIRECT
		} else {
			fl &^= unix.O_DIRECT
		}
		_, serr = unix.FcntlInt(fd, unix.F_SETFL, fl)
	}); err != nil {
		return err
	}
	return serr
}

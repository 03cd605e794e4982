//go:build linux && (amd64 || arm64)

package exemap

import (
	"syscall"
	"unsafe"
)

// The userfaultfd ABI (include/uapi/linux/userfaultfd.h); the ioctl
// numbers are _IOWR(0xAA, nr, struct) in the encoding of amd64 and arm64.
const (
	uffdUserModeOnly     = 1       // UFFD_USER_MODE_ONLY: allowed without CAP_SYS_PTRACE
	uffdAPI              = 0xAA    // UFFD_API
	uffdFeatureWPAsync   = 1 << 15 // UFFD_FEATURE_WP_ASYNC (Linux 6.7)
	uffdioAPI            = 0xC018AA3F
	uffdioRegister       = 0xC020AA00
	uffdioRegisterModeWP = 2
)

// lazy registers each read-only mapping in ms with a userfaultfd in
// asynchronous write-protect mode, which turns the kernel's fault-around
// off for it, and keeps the descriptor open. It returns how many it
// registered.
func lazy(ms []mapping) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	fd, _, e := syscall.Syscall(sysUserfaultfd, syscall.O_CLOEXEC|syscall.O_NONBLOCK|uffdUserModeOnly, 0, 0)
	if e != 0 {
		return 0, errno("userfaultfd", e)
	}
	api := struct{ api, features, ioctls uint64 }{api: uffdAPI, features: uffdFeatureWPAsync}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, uffdioAPI, uintptr(unsafe.Pointer(&api))); e != 0 {
		syscall.Close(int(fd))
		return 0, errno("UFFDIO_API", e)
	}
	n := 0
	var err error
	for _, m := range ms {
		reg := struct{ start, len, mode, ioctls uint64 }{start: uint64(m.start), len: uint64(m.end - m.start), mode: uffdioRegisterModeWP}
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, uffdioRegister, uintptr(unsafe.Pointer(&reg))); e != 0 {
			err = errno("UFFDIO_REGISTER", e)
			continue
		}
		n++
	}
	if n == 0 {
		syscall.Close(int(fd))
	}
	return n, err
}

func errno(op string, e syscall.Errno) error { return &opError{op, e} }

type opError struct {
	op string
	e  syscall.Errno
}

func (e *opError) Error() string { return e.op + ": " + e.e.Error() }

//go:build linux && (amd64 || arm64)

package exemap

import "syscall"

// userfaultfdAllowed reports whether this process may make a userfaultfd
// (a seccomp profile or an old kernel may refuse it).
func userfaultfdAllowed() bool {
	fd, _, e := syscall.Syscall(sysUserfaultfd, syscall.O_CLOEXEC|uffdUserModeOnly, 0, 0)
	if e != 0 {
		return false
	}
	syscall.Close(int(fd))
	return true
}

//go:build unix

package diskblob

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive, non-blocking flock on f, held until f is
// closed. It returns ErrLocked if another open file description holds it,
// in this process or another.
func lockFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB)
	}); err != nil {
		return err
	}
	if errors.Is(lerr, unix.EWOULDBLOCK) {
		return ErrLocked
	}
	return lerr
}

package diskblob

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteBack asks the kernel to start writing f's bytes [off, off+n)
// to the disk without waiting for it (sync_file_range with
// SYNC_FILE_RANGE_WRITE). It is a hint: the fsync at the end of the write
// stays the durability point, so a failure is ignored (the fsync reports
// what matters).
func startWriteBack(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}

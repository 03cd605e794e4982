package testbackend

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SmallFS is a small file system mounted for one test, to be filled.
type SmallFS struct {
	// Dir is where it is mounted.
	Dir string
	// Kind says what ran: "ext4 on a loop device" or "tmpfs" (when no
	// loop device could be set up).
	Kind string
}

// NewSmallFS mounts a file system of size bytes for the test and returns
// it: an ext4 file system (no blocks reserved for root, so that a test
// running as root fills it as anyone would) in an image file on a loop
// device, or, when loop devices are unavailable, a tmpfs of that size. It
// needs root; without root the test is skipped, unless
// COFFER_REQUIRE_BACKENDS=1, where it fails. The file system is unmounted
// and its loop device detached when the test ends, whether it passed or
// not.
func NewSmallFS(t testing.TB, size int64) *SmallFS {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "mounting a small file system needs root")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "mnt")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fs := &SmallFS{Dir: dir}
	img := filepath.Join(base, "fs.img")
	err := mountLoop(img, dir, size)
	fs.Kind = "ext4 on a loop device"
	if err != nil {
		t.Logf("no loop mount (%v): using tmpfs", err)
		if out, terr := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput(); terr != nil {
			if Required() {
				t.Fatalf("mount tmpfs: %v: %s", terr, out)
			}
			t.Skipf("neither a loop mount (%v) nor tmpfs (%v: %s) could be mounted", err, terr, out)
		}
		fs.Kind = "tmpfs"
	}
	t.Cleanup(func() { unmount(t, dir, img) })
	t.Logf("small file system: %s, %d bytes, at %s", fs.Kind, size, dir)
	return fs
}

// mountLoop makes an ext4 image of size bytes at img and mounts it on dir.
func mountLoop(img, dir string, size int64) error {
	f, err := os.Create(img)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", img).CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4: %v: %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, dir).CombinedOutput(); err != nil {
		return fmt.Errorf("mount -o loop: %v: %s", err, out)
	}
	return nil
}

// unmount unmounts dir, retrying while it is busy (a server process
// still exiting), then lazily; and detaches the loop devices of img that
// mount's autoclear did not.
func unmount(t testing.TB, dir, img string) {
	var out []byte
	var err error
	for i := 0; i < 50; i++ {
		if out, err = exec.Command("umount", dir).CombinedOutput(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Logf("umount %s: %v: %s; detaching lazily", dir, err, out)
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount -l %s: %v: %s", dir, err, out)
		}
	}
	if _, serr := os.Stat(img); errors.Is(serr, os.ErrNotExist) {
		return
	}
	out, err = exec.Command("losetup", "-j", img).Output()
	if err != nil {
		return // no losetup: nothing to detach by hand
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if dev, _, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(dev, "/dev/loop") {
			if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
				t.Errorf("losetup -d %s: %v: %s", dev, err, out)
			}
		}
	}
}

// Fill writes a file named name in the file system until the file system
// is full (ENOSPC) and returns its size. Other writers then find no room
// left until Free or Remove.
func (fs *SmallFS) Fill(t testing.TB, name string) int64 {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(fs.Dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for len(buf) > 0 {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", name, err)
			}
			buf = buf[:len(buf)/2] // top up the last partial blocks
		}
	}
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("sync %s: %v", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// Free returns the bytes available to unprivileged writers.
func (fs *SmallFS) Free(t testing.TB) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(fs.Dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

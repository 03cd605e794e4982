package diskblob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// residentPages reports how many of the file's pages are in the page cache.
func residentPages(t *testing.T, name string) (resident, pages int) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	ps := os.Getpagesize()
	vec := make([]byte, (len(m)+ps-1)/ps)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, len(vec)
}

// directCapable reports whether dir's file system takes O_DIRECT (tmpfs
// does not).
func directCapable(t *testing.T, dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, "probe"), os.O_WRONLY|os.O_CREATE|syscall.O_DIRECT, 0o600)
	if err != nil {
		if errors.Is(err, syscall.EINVAL) {
			return false
		}
		t.Fatal(err)
	}
	f.Close()
	os.Remove(f.Name())
	return true
}

// TestLargeBlobBypassesPageCache: from 4 MiB a blob is written with
// O_DIRECT, so right after Put its pages are not in the page cache (but
// for the unaligned tail, written buffered); below 4 MiB it is written
// through the page cache. The bytes read back are the body's, whatever
// the reads' sizes (odd ones leave an unaligned remainder held between
// direct writes).
func TestLargeBlobBypassesPageCache(t *testing.T) {
	dir := t.TempDir()
	if !directCapable(t, dir) {
		t.Skip("the temporary directory's file system does not take O_DIRECT")
	}
	s := open(t, dir)
	ctx := context.Background()
	for _, tc := range []struct {
		size, step int
		direct     bool
	}{
		{8<<20 + 12345, 64 << 10, true},
		{4<<20 + 1, 10007, true},
		{6 << 20, 4097, true},
		{1 << 20, 64 << 10, false},
	} {
		data := randBytes(tc.size, 11)
		key := "direct"
		if _, err := s.Put(ctx, key, &trickle{r: bytes.NewReader(data), step: tc.step}, int64(tc.size)); err != nil {
			t.Fatalf("Put %d bytes: %v", tc.size, err)
		}
		res, pages := residentPages(t, filepath.Join(dir, "blobs", key+".blob"))
		if tc.direct && res > 1 {
			t.Errorf("%d bytes in %d-byte reads: %d of %d pages in the page cache after Put, want at most the tail's 1", tc.size, tc.step, res, pages)
		}
		if !tc.direct && res != pages {
			t.Errorf("%d bytes: %d of %d pages in the page cache after Put, want all (buffered)", tc.size, res, pages)
		}
		got, err := io.ReadAll(get(t, s, key, 0, -1))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("blob of %d bytes in %d-byte reads reads back %d bytes (%v), not the body", tc.size, tc.step, len(got), err)
		}
	}
}

// TestDirectPutOnFullDisk: a direct write that runs out of space fails
// with StorageFull and leaves no temporary file, and the disk's space
// comes back (on tmpfs, where there is no loop device, the same through
// the buffered fallback); a blob that fits is then written whole.
func TestDirectPutOnFullDisk(t *testing.T) {
	sfs := testbackend.NewSmallFS(t, 16<<20)
	s := open(t, sfs.Dir)
	ctx := context.Background()
	data := randBytes(32<<20, 12)
	free := sfs.Free(t)
	if _, err := s.Put(ctx, "too-big", &trickle{r: bytes.NewReader(data), step: 64 << 10}, int64(len(data))); !errcode.Is(err, errcode.StorageFull) {
		t.Fatalf("Put of 32 MiB on a 16 MiB %s = %v, want StorageFull", sfs.Kind, err)
	}
	if ents, err := os.ReadDir(filepath.Join(sfs.Dir, "tmp")); err != nil || len(ents) != 0 {
		t.Fatalf("temporary files after the failed Put: %d (%v)", len(ents), err)
	}
	if got := sfs.Free(t); got < free-(1<<20) {
		t.Fatalf("%d bytes free after the failed Put, %d before", got, free)
	}
	small := data[:5<<20+3]
	if _, err := s.Put(ctx, "fits", &trickle{r: bytes.NewReader(small), step: 64 << 10}, int64(len(small))); err != nil {
		t.Fatalf("Put of 5 MiB after the failure: %v", err)
	}
	got, err := io.ReadAll(get(t, s, "fits", 0, -1))
	if err != nil || !bytes.Equal(got, small) {
		t.Fatalf("the 5 MiB blob reads back %d bytes (%v), not the body", len(got), err)
	}
}

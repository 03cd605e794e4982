// Package diskblob is the local-disk blob.Store: one file per blob under a
// directory that one Coffer process owns.
//
// # Layout
//
//	DIR/LOCK              flock'ed by the process that has the store open
//	DIR/tmp/<random>      writes in progress; emptied at Open
//	DIR/blobs/<seg>/.../<last seg>.blob
//
// Each slash-separated key segment is percent-encoded: every byte outside
// [A-Za-z0-9_-], including '.', '%' and every non-ASCII byte, becomes %XX
// with upper-case hex. Intermediate segments are directories named by their
// encoded segment and the last segment is a file named "<encoded>.blob".
// Since '.' is always encoded, no directory name contains one, so the key
// "a" (file a.blob) and the key "a/b" (directory a, file b.blob) never
// collide.
//
// # Durability
//
// Put writes to a temporary file in tmp/, fsyncs it, creates the parent
// directories (fsyncing the parent of each), renames the file into place
// and fsyncs its directory before it returns. A crash leaves at most a
// temporary file, removed at the next Open. Readers hold an open file, so
// a Delete (an unlink) never changes what they read.
//
// # Considerations
//
//   - An encoded segment longer than 240 bytes is errcode.InvalidArgument:
//     with ".blob" it must fit the 255-byte file name limit. A segment of
//     plain ASCII letters and digits may be 240 bytes long; one made of
//     multi-byte UTF-8 characters only 80 characters.
//   - The file system must be case-sensitive ("A" and "a" are distinct
//     keys); Open refuses a case-insensitive one.
//   - Every file operation goes through an os.Root on DIR: no key, and no
//     symlink planted inside DIR, can reach anything outside it. The store
//     never creates symlinks; List skips any it finds.
//   - Only one process may open DIR at a time (an flock on DIR/LOCK, Unix
//     only); a second Open fails with ErrLocked.
//   - Files are created with mode 0600 and directories 0700, explicitly
//     (a umask can only narrow those, never widen them); Open takes group and other access away from DIR, tmp/,
//     blobs/ and LOCK if they existed with it. (Directories deeper in
//     blobs/ are not walked: Coffer only ever created them 0700, and DIR
//     is owner-only.)
//   - Directories are never removed, since removing one would race with a
//     concurrent Put into it. Empty ones are harmless.
//   - List holds one directory's entries in memory at a time per level of
//     nesting, never the whole tree.
package diskblob

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// ErrLocked is returned (wrapped) by Open when another process, or another
// Store in this one, has the directory open.
var ErrLocked = errors.New("diskblob: the directory is in use by another Coffer process")

// bufSize is the size of the pooled copy buffers, and how much Put reads
// between checks of its context.
const bufSize = 256 << 10

// unitSlack is what a pooled buffer holds beyond bufSize: room for a body
// of whole units (blob.UnitReader: an encrypted stream's sealed segments,
// 64 KiB + 32 bytes) to fill four of them after the tail held back from
// the last direct write (< directAlign), so that no unit is split across
// two buffers (the reader would seal it into a buffer of its own and copy
// it: a quarter of an encrypted PUT's bytes; issue 23, fifth pass, in
// docs/PERFORMANCE.md). A plaintext body uses bufSize of it.
const unitSlack = 2 * directAlign

// maxDurableDirs bounds the cache of directories known to be durable.
const maxDurableDirs = 1 << 16

// Store is a blob.Store on a local directory. Open it with Open, and Close
// it when done.
type Store struct {
	dir  string
	root *os.Root
	lock *os.File
	bufs sync.Pool // *[]byte of bufSize + unitSlack

	noDirect bool // never O_DIRECT (benchmarks compare both ways)
	noUnits  bool // fill a blob.UnitReader's body as any other (benchmarks compare both ways)

	// durable holds directories under blobs/ whose entry in their parent
	// has been fsynced by this process, so Put syncs each parent once.
	durableMu sync.Mutex
	durable   map[string]struct{}

	closeOnce sync.Once
	closeErr  error

	minFree  int64        // Options.MinFree
	lastFull atomic.Int64 // when a write last found the disk full (Unix nanoseconds; 0: never)
}

// Options tunes a Store. The zero value is ready to use.
type Options struct {
	// MinFree is the space Put leaves free on the file system: a write
	// that would leave less (by its declared size, or as it goes when its
	// size is unknown) fails with errcode.StorageFull. The room kept is
	// for the metadata database beside the blobs (deletes must still
	// commit on a full disk) and for the janitor. 0: no reserve (writes
	// fail only when the file system says ENOSPC).
	MinFree int64
}

var (
	_ blob.Store  = (*Store)(nil)
	_ blob.Closer = (*Store)(nil)
)

// Open opens the store in dir, creating dir and its layout (mode 0700) if
// needed. It takes an exclusive lock on dir, failing with ErrLocked if
// another process holds it, and removes temporary files a crash left
// behind.
func Open(dir string) (*Store, error) { return OpenWith(dir, Options{}) }

// OpenWith is Open with options.
func OpenWith(dir string, o Options) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("diskblob: creating %s: %w", dir, err)
	}
	if err := ownerOnly(os.Stat, os.Chmod, dir); err != nil {
		return nil, fmt.Errorf("diskblob: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("diskblob: opening %s: %w", dir, err)
	}
	s := &Store{
		dir:     dir,
		root:    root,
		durable: make(map[string]struct{}),
		minFree: o.MinFree,
	}
	s.bufs.New = func() any {
		b := alignedBuf(bufSize + unitSlack)
		return &b
	}
	if err := s.open(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) open() error {
	lock, err := s.root.OpenFile(lockName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("diskblob: opening the lock file in %s: %w", s.dir, err)
	}
	s.lock = lock
	if err := lockFile(lock); err != nil {
		if errors.Is(err, ErrLocked) {
			return fmt.Errorf("%w (%s)", err, path.Join(s.dir, lockName))
		}
		return fmt.Errorf("diskblob: locking %s: %w", path.Join(s.dir, lockName), err)
	}
	if err := ownerOnly(s.root.Stat, s.root.Chmod, lockName); err != nil {
		return fmt.Errorf("diskblob: %s: %w", s.dir, err)
	}
	for _, d := range []string{tmpDir, blobsDir} {
		if err := s.root.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("diskblob: creating %s: %w", path.Join(s.dir, d), err)
		}
		if err := ownerOnly(s.root.Stat, s.root.Chmod, d); err != nil {
			return fmt.Errorf("diskblob: %s: %w", s.dir, err)
		}
	}
	if err := s.syncDir("."); err != nil {
		return fmt.Errorf("diskblob: syncing %s: %w", s.dir, err)
	}
	if err := s.cleanTmp(); err != nil {
		return err
	}
	return s.checkCaseSensitive()
}

// ownerOnly takes group and other access away from name, if it has any.
func ownerOnly(stat func(string) (fs.FileInfo, error), chmod func(string, fs.FileMode) error, name string) error {
	fi, err := stat(name)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		if err := chmod(name, perm&^0o077); err != nil {
			return fmt.Errorf("restricting the mode of %s: %w", name, err)
		}
	}
	return nil
}

// cleanTmp removes everything in tmp/: writes a crash interrupted.
func (s *Store) cleanTmp() error {
	d, err := s.root.Open(tmpDir)
	if err != nil {
		return fmt.Errorf("diskblob: opening %s: %w", path.Join(s.dir, tmpDir), err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("diskblob: reading %s: %w", path.Join(s.dir, tmpDir), err)
	}
	for _, name := range names {
		if err := s.root.RemoveAll(tmpDir + "/" + name); err != nil {
			return fmt.Errorf("diskblob: removing leftover %s: %w", path.Join(s.dir, tmpDir, name), err)
		}
	}
	return nil
}

// checkCaseSensitive fails if the file system folds case, which would make
// the keys "A" and "a" one file.
func (s *Store) checkCaseSensitive() error {
	name := tmpDir + "/case-probe-" + strings.ToLower(rand.Text())
	f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("diskblob: probing %s: %w", s.dir, err)
	}
	f.Close()
	defer s.root.Remove(name)
	_, err = s.root.Lstat(strings.ToUpper(name))
	switch {
	case err == nil:
		return fmt.Errorf("diskblob: %s is on a case-insensitive file system, which cannot hold keys that differ only in case", s.dir)
	case errors.Is(err, fs.ErrNotExist):
		return nil
	default:
		return fmt.Errorf("diskblob: probing %s: %w", s.dir, err)
	}
}

// Close releases the directory. Readers returned by Get stay usable.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.lock != nil {
			errs = append(errs, s.lock.Close()) // releases the flock
		}
		errs = append(errs, s.root.Close())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Put implements blob.Store. It returns once the blob is durable. Putting an
// existing key replaces it atomically.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) (blob.Info, error) {
	rel, err := blobPath(key)
	if err != nil {
		return blob.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, fmt.Errorf("diskblob: put %q: %w", key, err)
	}
	if err := s.Room(max(size, 0)); err != nil {
		return blob.Info{}, fmt.Errorf("diskblob: put %q: %w", key, err)
	}
	tmp := tmpDir + "/" + rand.Text()
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return blob.Info{}, s.full(classify(err, "create a temporary file for", ""))
	}
	info, err := s.write(ctx, f, r, size)
	if err == nil {
		err = s.commit(ctx, tmp, rel)
	}
	if err != nil {
		s.root.Remove(tmp)
		return blob.Info{}, fmt.Errorf("diskblob: put %q: %w", key, s.full(err))
	}
	info.Key = key
	return info, nil
}

// write copies r into f, enforcing size, then fsyncs and closes f. It
// always closes f.
func (s *Store) write(ctx context.Context, f *os.File, r io.Reader, size int64) (info blob.Info, err error) {
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = classify(cerr, "close", "")
		}
	}()
	bp := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(bp)
	buf := (*bp)[:bufSize]
	read := r.Read
	direct := false
	if size >= fillMinSize {
		read = func(p []byte) (int, error) { return fill(r, p) }
		if u, ok := r.(blob.UnitReader); ok && !s.noUnits && u.ReadUnit() > 0 && 4*u.ReadUnit()+directAlign <= len(*bp) {
			// Whole units only: four a fill, whatever tail was held
			// back (see unitSlack).
			unit := u.ReadUnit()
			buf = *bp
			read = func(p []byte) (int, error) { return fill(r, p[:len(p)/unit*unit]) }
		}
		// Large bodies bypass the page cache (see directAlign).
		direct = !s.noDirect && setDirect(f, true) == nil
	}
	// The flusher starts at the first full MiB of a body of unknown
	// length; it is done before f closes.
	var fl *flusher
	defer func() { fl.wait() }()
	var n int64
	held := 0 // bytes at the start of buf read but not yet written (direct only)
	for {
		if err := ctx.Err(); err != nil {
			return blob.Info{}, err
		}
		m, rerr := read(buf[held:])
		if size >= 0 && n+int64(m) > size {
			return blob.Info{}, errcode.New(errcode.TooLarge, "blob body is longer than the declared %d bytes", size)
		}
		if m > 0 {
			end := held + m
			w := end
			if direct {
				w = end &^ (directAlign - 1)
			}
			if w > 0 {
				if wn, err := f.Write(buf[:w]); err != nil {
					if !direct || wn != 0 || !errors.Is(err, syscall.EINVAL) {
						return blob.Info{}, classify(err, "write", "")
					}
					// The file system took O_DIRECT but refuses these
					// writes: stay buffered (nothing was written).
					if err := s.buffered(f); err != nil {
						return blob.Info{}, err
					}
					direct, w = false, end
					if _, err := f.Write(buf[:w]); err != nil {
						return blob.Info{}, classify(err, "write", "")
					}
				}
			}
			held = copy(buf, buf[w:end])
			if size < 0 && n/writeBackChunk != (n+int64(m))/writeBackChunk {
				// Flush what is written while the rest arrives, so that
				// the fsync below waits for the tail only (see flusher).
				if fl == nil {
					fl = startFlusher(f)
				}
				fl.upTo((n + int64(m)) / writeBackChunk * writeBackChunk)
			}
			if n/roomCheck != (n+int64(m))/roomCheck {
				// Other writes share the disk: keep the reserve as this
				// one grows.
				if err := s.Room(0); err != nil {
					return blob.Info{}, err
				}
			}
			n += int64(m)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return blob.Info{}, fmt.Errorf("reading the blob body: %w", rerr)
		}
	}
	if held > 0 {
		// The tail, shorter than directAlign, goes through the page cache.
		if err := s.buffered(f); err != nil {
			return blob.Info{}, err
		}
		if _, err := f.Write(buf[:held]); err != nil {
			return blob.Info{}, classify(err, "write", "")
		}
	}
	if size >= 0 && n < size {
		return blob.Info{}, errcode.New(errcode.IncompleteBody, "blob body ended after %d of the declared %d bytes", n, size)
	}
	if err := f.Sync(); err != nil {
		return blob.Info{}, classify(err, "sync", "")
	}
	fi, err := f.Stat()
	if err != nil {
		return blob.Info{}, classify(err, "stat", "")
	}
	return blob.Info{Size: n, ModTime: fi.ModTime()}, nil
}

// directAlign is the alignment of direct writes' buffers, lengths and
// offsets: the page size, a multiple of every logical block size in use.
// From fillMinSize write opens its file with O_DIRECT (Linux): the bytes go
// from its pooled buffer to the disk without a copy into the page cache,
// which cost this VM's kernel 1.4-1.6 ms per MiB buffered (0.6-0.8 direct)
// and was 28 % of a 10 MiB c16 PUT cell's CPU (issue 23, second pass, in
// docs/PERFORMANCE.md). The fsync stays: O_DIRECT does not make the
// file's metadata, nor the disk's cache, durable.
const directAlign = 4096

// alignedBuf returns n bytes starting at a multiple of directAlign.
func alignedBuf(n int) []byte {
	b := make([]byte, n+directAlign)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) & (directAlign - 1)); r != 0 {
		off = directAlign - r
	}
	return b[off : off+n : off+n]
}

// buffered turns f's O_DIRECT off, for a write shorter than directAlign.
func (s *Store) buffered(f *os.File) error {
	if err := setDirect(f, false); err != nil {
		return classify(err, "write", "")
	}
	return nil
}

// fillMinSize is the declared size from which write fills its buffer
// before each write: integrity's md5-simd lanes take bodies from 4 MiB
// (simdMinSize) and pay only with large pieces. Below it write passes on
// what each read yields: filling cost 1 MiB uploads at 200 VUs 10-17 %
// of their rate (issue 23 in docs/PERFORMANCE.md).
const fillMinSize = 4 << 20

// fill reads into buf until it is full or r ends or fails: a socket yields
// 16–64 KiB a read, and one write of a full buffer instead of one per read
// makes a 10 MiB upload 40 write calls instead of ~300, and the hashes
// above r get 256 KiB pieces: md5-simd's lanes (integrity) pay only with
// large ones (issue 23 in docs/PERFORMANCE.md).
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, nil // no progress: back to the caller's checks
		}
	}
	return n, nil
}

// commit moves the complete, synced temporary file tmp to rel and makes the
// move durable.
func (s *Store) commit(ctx context.Context, tmp, rel string) error {
	dir := path.Dir(rel)
	if err := s.ensureDir(dir); err != nil {
		return err
	}
	// Last chance to abort: after the rename the blob is visible.
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.root.Rename(tmp, rel); err != nil {
		return classify(err, "rename", "")
	}
	if err := s.syncDir(dir); err != nil {
		// Visible but perhaps not durable: take it back rather than
		// report a failed Put whose blob may survive.
		s.root.Remove(rel)
		return err
	}
	return nil
}

// writeBackChunk is how many bytes write lets accumulate in the page cache
// before it starts their write-back (startWriteBack): the fsync that ends
// a write then waits for at most about this much, not for the whole body.
// A tus PATCH's client waits for that fsync before it sends the next
// PATCH, so a flush of the whole 8 MiB PATCH at the end alternated with
// receiving (issue 23, second pass, in docs/PERFORMANCE.md).
const writeBackChunk = 1 << 20

// writeBack is startWriteBack (a variable for TestWriteBackWhileStreaming).
var writeBack = startWriteBack

// flusher starts the write-back of a file being written on a goroutine of
// its own: sync_file_range may wait for the disk's queue, and the writer
// must not (an in-line call made an 8 MiB streamed Put slower, not
// faster: BenchmarkPutStreamedFsync). Ranges asked for while it is busy
// are started together. write uses it for bodies of unknown length only
// (tus PATCHes, chunked uploads): a body of declared length is a PUT,
// whose client does not wait between pieces, and the write-back's kernel
// CPU would move from the kernel's flusher threads into the server (+3 %
// CPU per MiB of a 1 GiB PUT, issue 23 second pass in PERFORMANCE.md).
type flusher struct {
	f      *os.File
	target atomic.Int64
	wake   chan struct{}
	done   chan struct{}
}

func startFlusher(f *os.File) *flusher {
	fl := &flusher{f: f, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go fl.run()
	return fl
}

// upTo asks for the write-back of the file up to byte end.
func (fl *flusher) upTo(end int64) {
	fl.target.Store(end)
	select {
	case fl.wake <- struct{}{}:
	default: // it will see the new target
	}
}

func (fl *flusher) run() {
	defer close(fl.done)
	var from int64
	for range fl.wake {
		if to := fl.target.Load(); to > from {
			writeBack(fl.f, from, to-from)
			from = to
		}
	}
}

// wait waits for the flusher, if any, to finish (before the file closes).
func (fl *flusher) wait() {
	if fl != nil {
		close(fl.wake)
		<-fl.done
	}
}

// roomCheck is how many bytes Put writes between checks of the free space
// (with Options.MinFree).
const roomCheck = 8 << 20

// Room fails with errcode.StorageFull if writing n more bytes would leave
// less than Options.MinFree free. Without a reserve it never fails, nor
// when the free space cannot be read (the write then finds out). The
// object service asks it before an inline object (bytes in the metadata
// database, beside the blobs) too.
func (s *Store) Room(n int64) error {
	if s.minFree <= 0 {
		return nil
	}
	free, err := s.Free()
	if err != nil || free-n >= s.minFree {
		return nil
	}
	s.lastFull.Store(time.Now().UnixNano())
	return errcode.Wrap(errcode.StorageFull, fmt.Errorf("%d bytes free, %d kept free for metadata (--min-free-space)", free, s.minFree), "disk full")
}

// full returns err, noting when it says the disk is full (Pressure).
func (s *Store) full(err error) error {
	if errcode.Is(err, errcode.StorageFull) {
		s.lastFull.Store(time.Now().UnixNano())
	}
	return err
}

// Free returns the bytes of the store's file system available to it.
func (s *Store) Free() (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// Size returns the size of the store's file system in bytes (what
// unprivileged users could fill: free space for them plus what is used).
func (s *Store) Size() (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.dir, &st); err != nil {
		return 0, err
	}
	return (int64(st.Blocks) - int64(st.Bfree) + int64(st.Bavail)) * int64(st.Bsize), nil
}

// pressureHold is how long Pressure stays true after a write found the
// disk full.
const pressureHold = time.Minute

// Pressure reports whether the store's file system is short of space:
// less than twice Options.MinFree free, or a write found it full in the
// last minute. The janitor then reclaims deleted blobs at once
// (object.Config.Pressure).
func (s *Store) Pressure() bool {
	if t := s.lastFull.Load(); t != 0 && time.Since(time.Unix(0, t)) < pressureHold {
		return true
	}
	if s.minFree <= 0 {
		return false
	}
	free, err := s.Free()
	return err == nil && free < 2*s.minFree
}

// ensureDir creates dir (under blobs/) and its parents as needed and makes
// each one's entry in its parent durable. A directory found already present
// is synced too, once per process: it may have been created by a concurrent
// Put that has not synced it yet, or by a run that crashed.
func (s *Store) ensureDir(dir string) error {
	if dir == blobsDir || s.isDurable(dir) {
		return nil
	}
	parent := path.Dir(dir)
	if err := s.ensureDir(parent); err != nil {
		return err
	}
	if err := s.root.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return classify(err, "create a directory for", "")
	}
	if err := s.syncDir(parent); err != nil {
		return err
	}
	s.markDurable(dir)
	return nil
}

func (s *Store) isDurable(dir string) bool {
	s.durableMu.Lock()
	defer s.durableMu.Unlock()
	_, ok := s.durable[dir]
	return ok
}

func (s *Store) markDurable(dir string) {
	s.durableMu.Lock()
	defer s.durableMu.Unlock()
	if len(s.durable) >= maxDurableDirs {
		clear(s.durable)
	}
	s.durable[dir] = struct{}{}
}

func (s *Store) syncDir(dir string) error {
	d, err := s.root.Open(dir)
	if err != nil {
		return classify(err, "open a directory for", "")
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return classify(err, "sync a directory for", "")
	}
	return nil
}

// Get implements blob.Store. The reader reads from the open file, so a
// later Delete does not affect it. Its WriteTo hands the file itself to
// io.Copy, so copying it to a socket can use sendfile.
func (s *Store) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	rel, err := blobPath(key)
	if err != nil {
		return nil, err
	}
	if offset < 0 || length < -1 {
		return nil, errcode.New(errcode.InvalidArgument, "invalid range: offset %d, length %d", offset, length)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("diskblob: get %q: %w", key, err)
	}
	f, err := s.root.Open(rel)
	if err != nil {
		return nil, classify(err, "open", key)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, classify(err, "stat", key)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, errcode.New(errcode.NotFound, "blob %q not found", key)
	}
	size := fi.Size()
	if offset > size {
		f.Close()
		return nil, errcode.New(errcode.RangeNotSatisfiable, "range starts at %d, past the end of a %d-byte blob", offset, size)
	}
	n := size - offset
	if length >= 0 && length < n {
		n = length
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			f.Close()
			return nil, classify(err, "seek in", key)
		}
	}
	return &reader{f: f, n: n}, nil
}

// reader reads exactly n more bytes of f.
type reader struct {
	f *os.File
	n int64
}

func (r *reader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	n, err := r.f.Read(p)
	r.n -= int64(n)
	if err == io.EOF && r.n > 0 {
		err = io.ErrUnexpectedEOF // the file shrank: blobs are immutable, so it was tampered with
	}
	return n, err
}

// WriteTo copies the rest of the range to w. It passes the *os.File itself,
// under an io.LimitedReader, to io.Copy, so a w whose ReadFrom recognises
// files (a TCP connection, an http.ResponseWriter, another file) copies in
// the kernel with sendfile, splice or copy_file_range.
func (r *reader) WriteTo(w io.Writer) (int64, error) {
	lr := &io.LimitedReader{R: r.f, N: r.n}
	n, err := io.Copy(w, lr)
	r.n = lr.N
	if err == nil && r.n > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (r *reader) Close() error { return r.f.Close() }

// File returns the range's open file, positioned at the range's next
// byte, and how many bytes of the range are left: for a reader that
// checks the bytes with ReadAt before the kernel copies them
// (object/verify.go). Whoever takes it reads the rest of the range
// through it, not through r.
func (r *reader) File() (*os.File, int64) { return r.f, r.n }

// Stat implements blob.Store.
func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	rel, err := blobPath(key)
	if err != nil {
		return blob.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, fmt.Errorf("diskblob: stat %q: %w", key, err)
	}
	fi, err := s.root.Stat(rel)
	if err != nil {
		return blob.Info{}, classify(err, "stat", key)
	}
	if !fi.Mode().IsRegular() {
		return blob.Info{}, errcode.New(errcode.NotFound, "blob %q not found", key)
	}
	return blob.Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Delete implements blob.Store. It leaves the key's directories in place.
func (s *Store) Delete(ctx context.Context, key string) error {
	rel, err := blobPath(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("diskblob: delete %q: %w", key, err)
	}
	err = s.root.Remove(rel)
	if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	return classify(err, "delete", key)
}

// List implements blob.Store. It walks blobs/ depth first, sorting each
// directory's entries so that the walk yields keys in byte order, and skips
// directories that cannot hold a key with prefix. Names that are not the
// encoding of a valid key, and anything but directories and regular files,
// are skipped.
func (s *Store) List(ctx context.Context, prefix string, fn func(blob.Info) error) error {
	return s.walk(ctx, blobsDir, "", prefix, fn)
}

// entry is a directory entry ready for sorting: sortKey is the decoded
// segment, with a trailing "/" for a directory, since every key below it
// continues with one.
type entry struct {
	sortKey string
	name    string
	dir     bool
}

// walk lists dir, whose keys all start with keyPrefix ("" or ending in "/").
func (s *Store) walk(ctx context.Context, dir, keyPrefix, prefix string, fn func(blob.Info) error) error {
	d, err := s.root.Open(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return classify(err, "list", "")
	}
	des, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return classify(err, "list", "")
	}
	entries := make([]entry, 0, len(des))
	for _, de := range des {
		name := de.Name()
		switch {
		case de.IsDir():
			seg, ok := decodeSegment(name)
			if !ok || blob.ValidKey(seg) != nil {
				continue
			}
			sub := keyPrefix + seg + "/"
			if !strings.HasPrefix(sub, prefix) && !strings.HasPrefix(prefix, sub) {
				continue
			}
			entries = append(entries, entry{sortKey: seg + "/", name: name, dir: true})
		case de.Type().IsRegular():
			base, ok := strings.CutSuffix(name, blobExt)
			if !ok {
				continue
			}
			seg, ok := decodeSegment(base)
			if !ok || !strings.HasPrefix(keyPrefix+seg, prefix) {
				continue
			}
			entries = append(entries, entry{sortKey: seg, name: name})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.sortKey, b.sortKey) })

	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := dir + "/" + e.name
		if e.dir {
			if err := s.walk(ctx, rel, keyPrefix+e.sortKey, prefix, fn); err != nil {
				return err
			}
			continue
		}
		key := keyPrefix + e.sortKey
		if p, err := blobPath(key); err != nil || p != rel {
			continue // not a name this store would write for key
		}
		fi, err := s.root.Lstat(rel)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted since ReadDir
			}
			return classify(err, "list", "")
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		if err := fn(blob.Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
			return err
		}
	}
	return nil
}

// classify turns an OS error into an errcode error. op is what failed, for
// the message; key, when not empty, names the blob. A missing file is
// errcode.NotFound only for operations on a named key.
func classify(err error, op, key string) error {
	what := "blob"
	if key != "" {
		what = fmt.Sprintf("blob %q", key)
	}
	switch {
	case key != "" && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)):
		return errcode.Wrap(errcode.NotFound, err, "%s not found", what)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return errcode.Wrap(errcode.StorageFull, err, "disk full")
	case errors.Is(err, syscall.ENAMETOOLONG):
		return errcode.Wrap(errcode.InvalidArgument, err, "blob key too long for the file system")
	case errors.Is(err, os.ErrClosed):
		return errcode.Wrap(errcode.Unavailable, err, "blob store is closed")
	}
	return errcode.Wrap(errcode.Unknown, err, "failed to %s %s on disk", op, what)
}

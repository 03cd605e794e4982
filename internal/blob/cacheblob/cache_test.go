package cacheblob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/blobtest"
	"github.com/coffer-storage/coffer/internal/blob/memblob"
	"github.com/coffer-storage/coffer/internal/errcode"
)

const testChunk = 64 << 10

// countingStore counts the backend's Gets.
type countingStore struct {
	blob.Store
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key, off, n)
}

func newCache(t *testing.T, dir string, opts Options, fsys fileSystem) *Cache {
	t.Helper()
	opts.Dir = dir
	if opts.DiskBytes == 0 {
		opts.DiskBytes = 64 << 20
	}
	if opts.ChunkSize == 0 {
		opts.ChunkSize = testChunk
	}
	if fsys == nil {
		fsys = osFS{}
	}
	c, err := open(opts, fsys)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newStore(t *testing.T, opts Options, fsys fileSystem) (*Store, *countingStore) {
	t.Helper()
	back := &countingStore{Store: memblob.New()}
	c := newCache(t, t.TempDir(), opts, fsys)
	return New(back, c, nil).(*Store), back
}

// conformanceOptions are the cache's shapes the conformance suite runs on.
var conformanceOptions = []struct {
	name string
	opts Options
}{
	{"disk", Options{}},
	{"disk+memory", Options{MemoryBytes: 8 << 20, MemoryItemMax: 16 << 10}},
}

func TestConformance(t *testing.T) {
	for _, tt := range conformanceOptions {
		t.Run(tt.name, func(t *testing.T) {
			blobtest.Run(t, func(t *testing.T) blob.Store {
				s, _ := newStore(t, tt.opts, nil)
				return s
			})
		})
	}
}

func TestLargeStreamed(t *testing.T) {
	if testing.Short() {
		t.Skip("256 MiB object skipped in -short mode")
	}
	for _, tt := range conformanceOptions {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newStore(t, tt.opts, nil)
			blobtest.RunLarge(t, s)
		})
	}
}

func pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func put(t *testing.T, s blob.Store, key string, data []byte) {
	t.Helper()
	if _, err := s.Put(t.Context(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, s blob.Store, key string, off, n int64) []byte {
	t.Helper()
	rc, err := s.Get(t.Context(), key, off, n)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): %v", key, off, n, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading Get(%q, %d, %d): %v", key, off, n, err)
	}
	return b
}

func TestHitAfterFirstRead(t *testing.T) {
	for _, tt := range []struct {
		name string
		size int
		opts Options
	}{
		{"small-memory", 1 << 10, Options{MemoryBytes: 1 << 20}},
		{"small-disk", 1 << 10, Options{}},
		{"chunks", 5*testChunk + 7, Options{MemoryBytes: 1 << 20}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, back := newStore(t, tt.opts, nil)
			data := pattern(tt.size, 1)
			put(t, s, "o/k", data)
			if got := get(t, s, "o/k", 0, -1); !bytes.Equal(got, data) {
				t.Fatal("first read: other bytes")
			}
			first := back.gets.Load()
			if first == 0 {
				t.Fatal("first read made no backend read")
			}
			for range 3 {
				if got := get(t, s, "o/k", 0, -1); !bytes.Equal(got, data) {
					t.Fatal("cached read: other bytes")
				}
			}
			if got, want := back.gets.Load(), first; got != want {
				t.Errorf("backend Gets after 3 more reads = %d, want %d (all hits)", got, want)
			}
			st := s.Cache().Stats()
			if st.Hits == 0 || st.HitBytes < int64(3*tt.size) {
				t.Errorf("stats %+v: want hits and ≥ %d bytes served", st, 3*tt.size)
			}
		})
	}
}

// TestRanges checks ranges byte for byte against the blob, from a whole
// cached object, from chunks, cold and warm: first and last bytes, chunk
// boundaries, suffixes.
func TestRanges(t *testing.T) {
	for _, size := range []int{1000, testChunk, 3*testChunk + 1, 4 * testChunk} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			data := pattern(size, uint64(size))
			type rng struct{ off, n int64 }
			S := int64(size)
			ranges := []rng{
				{0, -1}, {0, 1}, {S - 1, 1}, {S - 1, -1}, {S, -1}, {S, 0}, {0, 0},
				{S - 10, 10}, {S - 10, 100}, {1, S - 2}, {testChunk - 1, 2}, {testChunk, 1},
				{testChunk - 1, -1}, {S / 2, S / 3}, {0, S + 5},
			}
			for _, warm := range []bool{false, true} {
				for _, r := range ranges {
					if r.off > S {
						continue
					}
					s, _ := newStore(t, Options{MemoryBytes: 1 << 20, MemoryItemMax: 2000}, nil)
					put(t, s, "k", data)
					if warm {
						get(t, s, "k", 0, -1)
					}
					end := S
					if r.n >= 0 {
						end = min(S, r.off+r.n)
					}
					if got, want := get(t, s, "k", r.off, r.n), data[r.off:end]; !bytes.Equal(got, want) {
						t.Errorf("warm=%v Get(%d, %d) = %d bytes, want %d (other bytes)", warm, r.off, r.n, len(got), len(want))
					}
					// The same range again, now from the cache.
					if got, want := get(t, s, "k", r.off, r.n), data[r.off:end]; !bytes.Equal(got, want) {
						t.Errorf("warm=%v again Get(%d, %d) = %d bytes, want %d (other bytes)", warm, r.off, r.n, len(got), len(want))
					}
				}
				// Past the end, cold and warm.
				s, _ := newStore(t, Options{}, nil)
				put(t, s, "k", data)
				if warm {
					get(t, s, "k", 0, -1)
				}
				for _, off := range []int64{S + 1, S + testChunk, 1 << 40} {
					if _, err := s.Get(t.Context(), "k", off, -1); errcode.Of(err) != errcode.RangeNotSatisfiable {
						t.Errorf("warm=%v Get(%d): %v, want RangeNotSatisfiable", warm, off, err)
					}
				}
			}
		})
	}
}

func TestEvictionUnderBound(t *testing.T) {
	dir := t.TempDir()
	back := &countingStore{Store: memblob.New()}
	const bound = 8 * testChunk
	c := newCache(t, dir, Options{DiskBytes: bound}, nil)
	s := New(back, c, nil)
	for i := range 40 {
		key := fmt.Sprintf("o/%d", i)
		put(t, s, key, pattern(testChunk, uint64(i)))
		get(t, s, key, 0, -1)
		get(t, s, key, 0, -1)
	}
	c.disk.CleanUp()
	c.removes.Wait()
	var onDisk int64
	var files int
	filepath.WalkDir(c.root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			info, _ := d.Info()
			onDisk += info.Size()
			files++
		}
		return nil
	})
	if onDisk > bound {
		t.Errorf("%d bytes in %d files on disk, want at most %d", onDisk, files, bound)
	}
	st := c.Stats()
	if st.Evictions == 0 || st.DiskBytes > bound {
		t.Errorf("stats %+v: want evictions and at most %d bytes", st, bound)
	}
	// The evicted and the kept still read right.
	for i := range 40 {
		if got := get(t, s, fmt.Sprintf("o/%d", i), 0, -1); !bytes.Equal(got, pattern(testChunk, uint64(i))) {
			t.Fatalf("o/%d: other bytes", i)
		}
	}
}

func TestRestartReloads(t *testing.T) {
	dir := t.TempDir()
	back := &countingStore{Store: memblob.New()}
	data := pattern(3*testChunk+5, 9)
	c1 := newCache(t, dir, Options{}, nil)
	s1 := New(back, c1, nil)
	put(t, s1, "k", data)
	get(t, s1, "k", 0, -1)
	c1.Close()
	// Debris of a crash: a fill in progress, a foreign file, a file of
	// another chunk size.
	os.WriteFile(filepath.Join(c1.root, "tmp", "fill-123"), []byte("partial"), 0o600)
	os.WriteFile(filepath.Join(c1.root, "junk"), []byte("x"), 0o600)
	os.MkdirAll(filepath.Join(dir, "c4096", "ab"), 0o700)

	before := back.gets.Load()
	c2 := newCache(t, dir, Options{}, nil)
	s2 := New(back, c2, nil)
	if got := get(t, s2, "k", 0, -1); !bytes.Equal(got, data) {
		t.Fatal("after restart: other bytes")
	}
	if got := back.gets.Load(); got != before {
		t.Errorf("after restart the read made %d backend Gets, want 0 (reloaded)", got-before)
	}
	for _, p := range []string{filepath.Join(c1.root, "tmp", "fill-123"), filepath.Join(c1.root, "junk"), filepath.Join(dir, "c4096")} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s survived the restart (%v)", p, err)
		}
	}
	// A changed chunk size starts empty, and reads right.
	c3 := newCache(t, dir, Options{ChunkSize: 2 * testChunk}, nil)
	if got := get(t, New(back, c3, nil), "k", 5, -1); !bytes.Equal(got, data[5:]) {
		t.Fatal("after a chunk size change: other bytes")
	}
	if _, err := os.Stat(c1.root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old chunk size's folder survived (%v)", err)
	}
}

func TestDeleteDropsEntry(t *testing.T) {
	s, back := newStore(t, Options{MemoryBytes: 1 << 20}, nil)
	for _, size := range []int{100, 2*testChunk + 1} {
		put(t, s, "k", pattern(size, 1))
		get(t, s, "k", 0, -1)
		if err := s.Delete(t.Context(), "k"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(t.Context(), "k", 0, -1); errcode.Of(err) != errcode.NotFound {
			t.Fatalf("Get after Delete: %v, want NotFound", err)
		}
		// otter applies invalidations to its weights asynchronously: settle
		// both tiers before reading their sizes.
		s.Cache().disk.CleanUp()
		s.Cache().mem.CleanUp()
		if st := s.Cache().Stats(); st.DiskFiles != 0 || st.MemoryBytes != 0 {
			t.Errorf("after Delete the cache holds %+v, want nothing", st)
		}
	}
	_ = back
}

// faultFS fails the operations it is told to.
type faultFS struct {
	osFS
	failCreate, failWrite, failRead, failOpen atomic.Bool
}

var errInjected = errors.New("injected I/O error")

func (f *faultFS) CreateTemp(dir string) (file, error) {
	if f.failCreate.Load() {
		return nil, &fs.PathError{Op: "create", Path: dir, Err: errInjected}
	}
	fl, err := f.osFS.CreateTemp(dir)
	if err != nil {
		return nil, err
	}
	return &faultFile{file: fl, fs: f}, nil
}

func (f *faultFS) Open(name string) (file, error) {
	if f.failOpen.Load() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errInjected}
	}
	fl, err := f.osFS.Open(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{file: fl, fs: f}, nil
}

type faultFile struct {
	file
	fs *faultFS
}

func (f *faultFile) Write(p []byte) (int, error) {
	if f.fs.failWrite.Load() {
		return 0, errors.New("no space left on device (injected)")
	}
	return f.file.Write(p)
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if f.fs.failRead.Load() {
		return 0, errInjected
	}
	return f.file.ReadAt(p, off)
}

func TestIOErrorPassesThrough(t *testing.T) {
	data := pattern(3*testChunk+11, 5)
	for _, tt := range []struct {
		name string
		warm bool
		set  func(*faultFS)
	}{
		{"create", false, func(f *faultFS) { f.failCreate.Store(true) }},
		{"disk-full", false, func(f *faultFS) { f.failWrite.Store(true) }},
		{"open", true, func(f *faultFS) { f.failOpen.Store(true) }},
		{"read", true, func(f *faultFS) { f.failRead.Store(true) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fsys := &faultFS{}
			s, _ := newStore(t, Options{}, fsys)
			put(t, s, "k", data)
			if tt.warm {
				get(t, s, "k", 0, -1)
			}
			tt.set(fsys)
			for _, r := range [][2]int64{{0, -1}, {testChunk + 3, 2 * testChunk}, {int64(len(data)) - 1, 1}} {
				end := int64(len(data))
				if r[1] >= 0 {
					end = min(end, r[0]+r[1])
				}
				if got := get(t, s, "k", r[0], r[1]); !bytes.Equal(got, data[r[0]:end]) {
					t.Fatalf("Get(%d, %d) with a failing cache: other bytes", r[0], r[1])
				}
			}
			if st := s.Cache().Stats(); st.PassThrough == 0 {
				t.Errorf("stats %+v: want pass-through errors counted", st)
			}
			// A read that has nothing cached while the disk tier is
			// bypassed also passes through.
			put(t, s, "k2", data[:100])
			if got := get(t, s, "k2", 0, -1); !bytes.Equal(got, data[:100]) {
				t.Fatal("k2: other bytes")
			}
		})
	}
}

// TestCoalescedMisses: concurrent readers of one cold chunk share one
// backend read.
func TestCoalescedMisses(t *testing.T) {
	gate := make(chan struct{})
	back := &gatedStore{Store: memblob.New(), gate: gate}
	c := newCache(t, t.TempDir(), Options{}, nil)
	s := New(back, c, nil)
	data := pattern(testChunk/2, 3)
	put(t, s, "k", data)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			rc, err := s.Get(t.Context(), "k", 0, -1)
			if err != nil {
				errs <- err
				return
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if err == nil && !bytes.Equal(b, data) {
				err = errors.New("other bytes")
			}
			if err != nil {
				errs <- err
			}
		})
	}
	// Let the readers pile up on the first backend read, then release it.
	for c.Stats().Misses < n {
		runtimeGosched()
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, want := back.gets.Load(), int64(1); got != want {
		t.Errorf("backend Gets = %d, want %d", got, want)
	}
	if st := c.Stats(); st.Coalesced < n-1 {
		t.Errorf("coalesced = %d, want ≥ %d", st.Coalesced, n-1)
	}
}

type gatedStore struct {
	blob.Store
	gate chan struct{}
	gets atomic.Int64
}

func (g *gatedStore) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	g.gets.Add(1)
	<-g.gate
	return g.Store.Get(ctx, key, off, n)
}

func TestParseName(t *testing.T) {
	h := strings.Repeat("ab", 16)
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{h + ".0.0000abcd", true},
		{h + ".12.ffffffff", true},
		{h + ".012.ffffffff", false},
		{h + ".-1.ffffffff", false},
		{h + ".1", false},
		{h[:30] + ".1.ffffffff", false},
		{strings.Repeat("zz", 16) + ".1.ffffffff", false},
		{h + ".1.fffffffff", false},
		{h + ".99999999999.ffffffff", false},
		{"", false},
	} {
		if _, _, ok := parseName(tt.name); ok != tt.ok {
			t.Errorf("parseName(%q) ok = %v, want %v", tt.name, ok, tt.ok)
		}
	}
}

func FuzzParseName(f *testing.F) {
	f.Add(strings.Repeat("ab", 16) + ".0.0000abcd")
	f.Add("x.y.z")
	f.Fuzz(func(t *testing.T, name string) {
		k, tag, ok := parseName(name)
		if !ok {
			return
		}
		c := &Cache{root: "/r"}
		if got := filepath.Base(c.path(k, tag)); got != name {
			t.Fatalf("parseName(%q) round-trips to %q", name, got)
		}
	})
}

func runtimeGosched() { runtime.Gosched() }

// TestMemoryTierHoldsWhatItCounts: a small blob in memory costs its size,
// not the fill's read buffer (which once stayed pinned: 256 KiB per 1 KiB
// blob, beyond the memory bound).
func TestMemoryTierHoldsWhatItCounts(t *testing.T) {
	s, _ := newStore(t, Options{MemoryBytes: 64 << 20, MemoryItemMax: 256 << 10, ChunkSize: 1 << 20}, nil)
	const n = 200
	for i := range n {
		put(t, s, fmt.Sprintf("k/%d", i), pattern(1<<10, uint64(i)))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		get(t, s, fmt.Sprintf("k/%d", i), 0, -1)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if st := s.Cache().Stats(); st.MemoryBytes < n<<10 {
		t.Fatalf("memory tier holds %d bytes, want the %d blobs", st.MemoryBytes, n)
	}
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	if limit := int64(16 << 20); grew > limit { // the old pinning: 200 × 256 KiB = 50 MiB
		t.Errorf("caching %d blobs of 1 KiB grew the heap by %d bytes, want at most %d", n, grew, limit)
	}
}

// copyingStore is a backend that copies blobs itself (as s3blob does),
// over memblob.
type copyingStore struct {
	blob.Store
	copies atomic.Int64
}

func (c *copyingStore) Copy(ctx context.Context, src, dst string) (blob.Info, error) {
	c.copies.Add(1)
	rc, err := c.Store.Get(ctx, src, 0, -1)
	if err != nil {
		return blob.Info{}, err
	}
	defer rc.Close()
	return c.Store.Put(ctx, dst, rc, -1)
}

// TestCopierPassesThrough: the Store over a backend that copies blobs
// copies in the backend (and forgets what it cached of the destination);
// over one that does not, it is no blob.Copier either.
func TestCopierPassesThrough(t *testing.T) {
	if _, ok := New(memblob.New(), newCache(t, t.TempDir(), Options{}, nil), nil).(blob.Copier); ok {
		t.Error("a Store over a backend without Copy is a blob.Copier")
	}
	back := &copyingStore{Store: memblob.New()}
	s := New(back, newCache(t, t.TempDir(), Options{MemoryBytes: 1 << 20}, nil), nil)
	cp, ok := s.(blob.Copier)
	if !ok {
		t.Fatal("a Store over a backend with Copy is no blob.Copier")
	}
	put(t, s, "src", pattern(100, 1))
	put(t, s, "dst", pattern(100, 2))
	get(t, s, "dst", 0, -1) // cached
	// Coffer never copies onto a key it wrote, but the contract allows it.
	if err := back.Store.Delete(t.Context(), "dst"); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Copy(t.Context(), "src", "dst"); err != nil || back.copies.Load() != 1 {
		t.Fatalf("Copy: %v, %d backend copies", err, back.copies.Load())
	}
	if got := get(t, s, "dst", 0, -1); !bytes.Equal(got, pattern(100, 1)) {
		t.Error("after Copy the cache serves the destination's old bytes")
	}
}

// TestOpenRefusesBadOptions: the sizes the server's settings govern
// (--cache-size, --cache-chunk) are required, not defaulted: a zero chunk
// size is refused like any size outside 64 KiB..64 MiB.
func TestOpenRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{
		{DiskBytes: 64 << 20},
		{DiskBytes: 64 << 20, ChunkSize: 32 << 10},
		{DiskBytes: 64 << 20, ChunkSize: 128 << 20},
		{ChunkSize: 1 << 20},
		{DiskBytes: 64 << 20, ChunkSize: 1 << 20, MemoryBytes: -1},
	} {
		o.Dir = t.TempDir()
		if c, err := Open(o); err == nil {
			c.Close()
			t.Errorf("Open(%+v) accepted", o)
		}
	}
}

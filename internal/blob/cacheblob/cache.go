// Package cacheblob is a read cache for a remote blob.Store (s3blob): a
// memory tier for small hot objects and a size-bounded disk tier in a
// folder of the node's own, in front of a store every read of which costs
// a network round trip.
//
// # Contract
//
// The cache holds bytes by an identity that names immutable content. For
// Coffer's own blobs that identity is the blob key: the object service
// writes every blob under a fresh key and never overwrites one (an
// overwrite of an object writes a new blob and swaps the pointer; the old
// blob is deleted later), so cached bytes never go stale. A store whose
// keys do not name immutable content (a gateway bucket, whose backend
// objects can be replaced by others) must derive an identity that changes
// with the content, e.g. the key and the backend's ETag, and read through
// Cache.Open with it; Store (the blob.Store decorator) takes the
// derivation as Options.Key.
//
// Whatever goes wrong in the cache itself — a full disk, an I/O error, a
// file gone missing — degrades the read to a pass-through read of the
// backend: it is counted (Stats.PassThrough) and logged, never an error
// for the client. Errors of the backend (a missing blob, a range past the
// end, an outage) reach the caller unchanged, and are never cached.
//
// # Layout
//
// Blobs are cached as aligned chunks of Options.ChunkSize bytes (chunk i
// holds bytes [i·C, (i+1)·C)); a blob no longer than a chunk is cached
// whole, in one chunk, and small ones (≤ Options.MemoryItemMax) are also
// kept in memory. A range is served from the chunks it covers, each fetched
// from the backend (one ranged GET) on a miss. Concurrent misses of one
// chunk share one backend read (singleflight): the first reader fills the
// chunk into a temporary file, fsyncs it and renames it into place, and
// every reader then serves it from the file. A file is only ever visible
// under its final name complete, so a crash never leaves a partial chunk
// that is served.
//
// The disk tier lives in Options.Dir/c<ChunkSize>/: <hh>/<hash>.<chunk>.<tag>
// files, <hh> the first byte of the hash in hex, <hash> 128 bits of
// SHA-256 of the identity, <tag> random (so a file evicted and filled
// again never shares a name with the old one); tmp/ holds fills in
// progress. The folder belongs to the cache: at start it removes tmp/ and
// every file it cannot parse, and reloads the index of the others (their
// sizes from the file system), so the disk tier survives a restart.
//
// # Bounds
//
// The disk tier holds at most Options.DiskBytes, each file counted at its
// size rounded up to 4 KiB; its index is in memory, about 200 bytes per
// file, so at most DiskBytes/4 KiB × 200 B (a 4 GiB tier of 1 KiB objects:
// 200 MiB; of 1 MiB chunks: 1 MiB). The memory tier holds at most
// Options.MemoryBytes of data (each item counted with 128 bytes of
// overhead). Eviction in both is W-TinyLFU (github.com/maypok86/otter/v2):
// a one-off scan of cold blobs does not flush the hot ones. A fill holds at
// most MemoryItemMax bytes in memory (the rest streams to its file), so
// memory also grows with concurrent misses by at most that much each.
package cacheblob

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
	"golang.org/x/sync/singleflight"

	"github.com/coffer-storage/coffer/internal/detach"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// Defaults of Options.
const (
	DefaultMemoryItemMax = 256 << 10
	// unhealthyFor is how long the disk tier stays bypassed after an I/O
	// error: reads pass through meanwhile instead of failing to fill.
	unhealthyFor = 10 * time.Second
	// fillTimeout bounds a fill, which runs detached from the reader that
	// started it (another reader may be waiting for it).
	fillTimeout = 2 * time.Minute
	blockSize   = 4 << 10
)

// Options configure a Cache.
type Options struct {
	// Dir is the disk tier's folder (required); the cache owns it.
	Dir string
	// DiskBytes bounds the disk tier (required, > 0).
	DiskBytes int64
	// MemoryBytes bounds the memory tier; 0 turns it off.
	MemoryBytes int64
	// MemoryItemMax is the largest blob kept in memory (default 256 KiB,
	// at most ChunkSize).
	MemoryItemMax int64
	// ChunkSize is the unit of caching and of backend reads on a miss
	// (required, 64 KiB to 64 MiB: the server's --cache-chunk).
	ChunkSize int64
	// Log receives the cache's I/O errors (default: discarded).
	Log *slog.Logger
}

// Fetcher reads bytes [off, off+n) of the content from the backend, with
// blob.Store.Get's contract (n -1: to the end; a range running past the
// end is truncated).
type Fetcher func(ctx context.Context, off, n int64) (io.ReadCloser, error)

// Stats are the cache's counters since it was opened (and its size now).
type Stats struct {
	Hits        int64 // chunk lookups served from memory or disk
	Misses      int64 // chunk lookups that read the backend (fills, coalesced waits and pass-throughs)
	HitBytes    int64 // bytes served from the cache
	Coalesced   int64 // misses that waited for another reader's fill instead of reading the backend
	Fills       int64 // chunks read from the backend into the cache
	Evictions   int64 // entries evicted for space, both tiers
	PassThrough int64 // reads that bypassed the cache after one of its own errors
	DiskBytes   int64 // bytes held on disk (as counted against DiskBytes)
	DiskFiles   int64
	MemoryBytes int64 // bytes held in memory (as counted against MemoryBytes)
}

// id is the cache's name for one identity: 128 bits of its SHA-256.
type id [16]byte

func idOf(identity string) id {
	sum := sha256.Sum256([]byte(identity))
	return id(sum[:16])
}

// chunkKey names one chunk of one identity.
type chunkKey struct {
	id  id
	idx uint32
}

// diskEntry is one file of the disk tier.
type diskEntry struct {
	size int64
	tag  uint32
}

// Cache is the two-tier cache. It is safe for concurrent use.
type Cache struct {
	opts    Options
	root    string // Dir/c<ChunkSize>
	fs      fileSystem
	log     *slog.Logger
	disk    *otter.Cache[chunkKey, diskEntry]
	mem     *otter.Cache[id, []byte] // whole small blobs
	flights singleflight.Group

	// objMu guards objs, the number of chunks on disk per identity and
	// the highest chunk index seen (so Forget finds them all). It is a
	// leaf lock, taken inside the disk index's atomic callbacks.
	objMu sync.Mutex
	objs  map[id]*objState

	// mu guards watches: the identities being read or filled, with a
	// generation Forget bumps, so that a fill that read the content
	// before it was deleted does not cache it after, and a reader of
	// several chunks never returns bytes of content written after it
	// opened.
	mu      sync.Mutex
	watches map[id]*watch
	removes sync.WaitGroup // file removals of evicted entries

	heads sync.Pool // *[]byte of MemoryItemMax+1 bytes: fills' first reads

	unhealthyUntil atomic.Int64 // unix nanos; disk tier bypassed until then
	wg             sync.WaitGroup

	hits, misses, hitBytes, coalesced, fillCount, evictions, passThrough atomic.Int64
}

type objState struct {
	n   int
	max uint32
}

type watch struct {
	refs int
	gen  uint64
}

// acquire watches h; release with release.
func (c *Cache) acquire(h id) (*watch, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.watches[h]
	if w == nil {
		w = &watch{}
		c.watches[h] = w
	}
	w.refs++
	return w, w.gen
}

func (c *Cache) release(h id, w *watch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.refs--; w.refs == 0 {
		delete(c.watches, h)
	}
}

// changed reports whether h was forgotten since gen.
func (c *Cache) changed(w *watch, gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return w.gen != gen
}

// Open opens (creating it if needed) the cache in opts.Dir and reloads the
// index of the chunks already there.
func Open(opts Options) (*Cache, error) {
	return open(opts, osFS{})
}

func open(opts Options, fsys fileSystem) (*Cache, error) {
	if opts.Dir == "" {
		return nil, errors.New("cacheblob: no folder")
	}
	if opts.DiskBytes <= 0 {
		return nil, errors.New("cacheblob: the disk tier's size must be positive")
	}
	if opts.ChunkSize < 64<<10 || opts.ChunkSize > 64<<20 {
		return nil, fmt.Errorf("cacheblob: chunk size %d outside 64 KiB..64 MiB", opts.ChunkSize)
	}
	if opts.MemoryItemMax == 0 {
		opts.MemoryItemMax = DefaultMemoryItemMax
	}
	opts.MemoryItemMax = min(opts.MemoryItemMax, opts.ChunkSize-1)
	if opts.MemoryBytes < 0 {
		return nil, errors.New("cacheblob: negative memory size")
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cache{
		opts: opts, fs: fsys, log: log,
		root:    filepath.Join(opts.Dir, "c"+strconv.FormatInt(opts.ChunkSize, 10)),
		objs:    map[id]*objState{},
		watches: map[id]*watch{},
	}
	c.heads.New = func() any {
		b := make([]byte, opts.MemoryItemMax+1)
		return &b
	}
	var err error
	c.disk, err = otter.New(&otter.Options[chunkKey, diskEntry]{
		MaximumWeight: uint64(opts.DiskBytes),
		Executor: func(fn func()) {
			c.removes.Add(1)
			go func() {
				defer c.removes.Done()
				fn()
			}()
		},
		Weigher: func(_ chunkKey, e diskEntry) uint32 { return uint32(diskWeight(e.size)) },
		OnAtomicDeletion: func(e otter.DeletionEvent[chunkKey, diskEntry]) {
			if e.Cause == otter.CauseReplacement {
				return
			}
			c.objMu.Lock()
			if o := c.objs[e.Key.id]; o != nil {
				if o.n--; o.n <= 0 {
					delete(c.objs, e.Key.id)
				}
			}
			c.objMu.Unlock()
		},
		OnDeletion: func(e otter.DeletionEvent[chunkKey, diskEntry]) {
			if e.Cause == otter.CauseReplacement {
				return
			}
			if e.WasEvicted() {
				c.evictions.Add(1)
			}
			c.fs.Remove(c.path(e.Key, e.Value.tag))
		},
	})
	if err != nil {
		return nil, fmt.Errorf("cacheblob: %w", err)
	}
	if opts.MemoryBytes > 0 {
		c.mem, err = otter.New(&otter.Options[id, []byte]{
			MaximumWeight: uint64(opts.MemoryBytes),
			Weigher:       func(_ id, b []byte) uint32 { return uint32(len(b) + 128) },
			OnDeletion: func(e otter.DeletionEvent[id, []byte]) {
				if e.WasEvicted() {
					c.evictions.Add(1)
				}
			},
		})
		if err != nil {
			return nil, fmt.Errorf("cacheblob: %w", err)
		}
	}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// diskWeight is what a file of size bytes counts against DiskBytes.
// An empty file costs a block too (and a weight of 0 would exempt the entry
// from eviction).
func diskWeight(size int64) int64 { return max(blockSize, (size+blockSize-1)/blockSize*blockSize) }

func (c *Cache) path(k chunkKey, tag uint32) string {
	h := hex.EncodeToString(k.id[:])
	return filepath.Join(c.root, h[:2], fmt.Sprintf("%s.%d.%08x", h, k.idx, tag))
}

// parseName parses a chunk file's name.
func parseName(name string) (chunkKey, uint32, bool) {
	parts := strings.Split(name, ".")
	// Only the canonical (lowercase hex) form: a name that parses but is
	// not the one the cache would write would be indexed under a file it
	// never opens.
	if len(parts) != 3 || len(parts[0]) != 32 || len(parts[2]) != 8 || !isLowerHex(parts[0]) || !isLowerHex(parts[2]) {
		return chunkKey{}, 0, false
	}
	var k chunkKey
	if _, err := hex.Decode(k.id[:], []byte(parts[0])); err != nil {
		return chunkKey{}, 0, false
	}
	idx, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil || strconv.FormatUint(idx, 10) != parts[1] {
		return chunkKey{}, 0, false
	}
	tag, err := strconv.ParseUint(parts[2], 16, 32)
	if err != nil {
		return chunkKey{}, 0, false
	}
	k.idx = uint32(idx)
	return k, uint32(tag), true
}

// reload rebuilds the disk index from the folder: fills in progress at a
// crash (tmp/) are removed, complete chunks (every file under its final
// name was fsync'd before its rename) are indexed again, and whatever is
// not a chunk file of this chunk size is removed. Folders of another chunk
// size (a changed Options.ChunkSize) are removed whole.
func (c *Cache) reload() error {
	if err := c.fs.MkdirAll(filepath.Join(c.root, "tmp")); err != nil {
		return fmt.Errorf("cacheblob: %w", err)
	}
	if others, err := c.fs.ReadDir(c.opts.Dir); err == nil {
		for _, d := range others {
			n := d.Name()
			if n != filepath.Base(c.root) && d.IsDir() && len(n) > 1 && n[0] == 'c' && isDigits(n[1:]) {
				c.fs.RemoveAll(filepath.Join(c.opts.Dir, n))
			}
		}
	}
	c.fs.RemoveAll(filepath.Join(c.root, "tmp"))
	if err := c.fs.MkdirAll(filepath.Join(c.root, "tmp")); err != nil {
		return fmt.Errorf("cacheblob: %w", err)
	}
	dirs, err := c.fs.ReadDir(c.root)
	if err != nil {
		return fmt.Errorf("cacheblob: %w", err)
	}
	for _, d := range dirs {
		if d.Name() == "tmp" {
			continue
		}
		dir := filepath.Join(c.root, d.Name())
		files, err := c.fs.ReadDir(dir)
		if err != nil {
			c.fs.RemoveAll(dir)
			continue
		}
		for _, f := range files {
			k, tag, ok := parseName(f.Name())
			info, ierr := f.Info()
			if !ok || ierr != nil || !info.Mode().IsRegular() || info.Size() > c.opts.ChunkSize ||
				hex.EncodeToString(k.id[:1]) != d.Name() {
				c.fs.RemoveAll(filepath.Join(dir, f.Name()))
				continue
			}
			if !c.insert(k, diskEntry{size: info.Size(), tag: tag}) {
				c.fs.Remove(filepath.Join(dir, f.Name())) // a duplicate of a chunk indexed already
			}
		}
	}
	return nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// insert indexes a chunk file unless the chunk is indexed already.
func (c *Cache) insert(k chunkKey, e diskEntry) bool {
	inserted := false
	c.disk.Compute(k, func(old diskEntry, found bool) (diskEntry, otter.ComputeOp) {
		if found {
			return old, otter.CancelOp
		}
		inserted = true
		c.objMu.Lock()
		o := c.objs[k.id]
		if o == nil {
			o = &objState{}
			c.objs[k.id] = o
		}
		o.n++
		o.max = max(o.max, k.idx)
		c.objMu.Unlock()
		return e, otter.WriteOp
	})
	return inserted
}

// Forget drops everything cached for identity, and keeps fills of it in
// progress from caching what they read.
func (c *Cache) Forget(identity string) {
	h := idOf(identity)
	c.mu.Lock()
	if w := c.watches[h]; w != nil {
		w.gen++
	}
	c.mu.Unlock()
	if c.mem != nil {
		c.mem.Invalidate(h)
	}
	c.objMu.Lock()
	o := c.objs[h]
	var last uint32
	found := o != nil
	if found {
		last = o.max
	}
	c.objMu.Unlock()
	if !found {
		return
	}
	for i := uint32(0); i <= last; i++ {
		c.disk.Invalidate(chunkKey{h, i})
	}
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	s := Stats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), HitBytes: c.hitBytes.Load(),
		Coalesced: c.coalesced.Load(), Fills: c.fillCount.Load(), Evictions: c.evictions.Load(),
		PassThrough: c.passThrough.Load(),
		DiskBytes:   int64(c.disk.WeightedSize()), DiskFiles: int64(c.disk.EstimatedSize()),
	}
	if c.mem != nil {
		s.MemoryBytes = int64(c.mem.WeightedSize())
	}
	return s
}

// Close waits for fills in progress (they run detached from their readers).
// The files stay for the next Open.
func (c *Cache) Close() error {
	c.wg.Wait()
	c.disk.CleanUp()
	c.removes.Wait()
	return nil
}

func (c *Cache) healthy() bool { return time.Now().UnixNano() >= c.unhealthyUntil.Load() }

// failed records an error of the cache's own, which makes the read pass
// through, and bypasses the disk tier for a while.
func (c *Cache) failed(op string, err error) {
	c.passThrough.Add(1)
	c.unhealthyUntil.Store(time.Now().Add(unhealthyFor).UnixNano())
	c.log.Warn("blob cache: I/O error, reading past the cache", "op", op, "err", err)
}

// chunk is one chunk ready to serve: in memory, or a file open on disk;
// pass means "read it from the backend".
type chunk struct {
	data []byte
	f    file
	n    int64
	pass bool
	hit  bool // found in the cache (not filled by this read)
}

// fillResult is what a fill hands every reader that waited for it.
type fillResult struct {
	data []byte     // a whole small blob, when kept in memory
	ent  *diskEntry // the chunk's file, when cached on disk
	pass bool       // the cache failed: read the backend
}

// lookup returns chunk idx of h, from the cache or filled from the backend.
func (c *Cache) lookup(ctx context.Context, h id, idx uint32, fetch Fetcher) (chunk, error) {
	k := chunkKey{h, idx}
	if idx == 0 && c.mem != nil {
		if b, ok := c.mem.GetIfPresent(h); ok {
			c.hits.Add(1)
			return chunk{data: b, n: int64(len(b)), hit: true}, nil
		}
	}
	if e, ok := c.disk.GetIfPresent(k); ok {
		f, err := c.fs.Open(c.path(k, e.tag))
		if err == nil {
			c.hits.Add(1)
			return chunk{f: f, n: e.size, hit: true}, nil
		}
		// Gone (evicted as we looked): drop the entry if it is still this
		// one, and fill again.
		c.disk.ComputeIfPresent(k, func(old diskEntry) (diskEntry, otter.ComputeOp) {
			if old == e {
				return old, otter.InvalidateOp
			}
			return old, otter.CancelOp
		})
		if !errors.Is(err, fs.ErrNotExist) {
			c.failed("open", err)
			c.misses.Add(1)
			return chunk{pass: true}, nil
		}
	}
	c.misses.Add(1)
	if !c.healthy() {
		c.passThrough.Add(1)
		return chunk{pass: true}, nil
	}
	leader := false
	ch := c.startFill(ctx, k, fetch, &leader)
	var res singleflight.Result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return chunk{}, errcode.Wrap(errcode.Canceled, ctx.Err(), "waiting for the blob cache")
	}
	if !leader {
		c.coalesced.Add(1)
	}
	if res.Err != nil {
		return chunk{}, res.Err
	}
	r := res.Val.(fillResult)
	switch {
	case r.data != nil:
		return chunk{data: r.data, n: int64(len(r.data))}, nil
	case r.ent != nil:
		f, err := c.fs.Open(c.path(k, r.ent.tag))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				c.failed("open", err)
			}
			return chunk{pass: true}, nil
		}
		return chunk{f: f, n: r.ent.size}, nil
	default:
		return chunk{pass: true}, nil
	}
}

// startFill fills chunk k, or joins the fill of it in progress; *leader
// is set if this call started it. The fill runs detached from ctx (other
// readers may wait for it), bounded by fillTimeout.
func (c *Cache) startFill(ctx context.Context, k chunkKey, fetch Fetcher, leader *bool) <-chan singleflight.Result {
	flight := string(k.id[:]) + strconv.FormatUint(uint64(k.idx), 10)
	// Close waits for every fill. The count is taken here, before the fill
	// can start (an Add inside the detached fill could come after Close's
	// Wait returned, and the fill would write into a cache folder being
	// removed), and given back when this caller's result arrives, which is
	// when the fill it started or joined has ended.
	c.wg.Add(1)
	ch := c.flights.DoChan(flight, func() (any, error) {
		*leader = true
		fctx, cancel := detach.WithTimeout(ctx, fillTimeout)
		defer cancel()
		return c.fill(fctx, k, fetch)
	})
	out := make(chan singleflight.Result, 1)
	go func() {
		r := <-ch
		c.wg.Done()
		out <- r
	}()
	return out
}

// prefetch starts filling chunk k in the background unless it is cached
// or being filled, so that a reader streaming a large blob finds the next
// chunk ready, or on its way, when it gets there (one chunk ahead).
func (c *Cache) prefetch(ctx context.Context, k chunkKey, fetch Fetcher) {
	if !c.healthy() {
		return
	}
	if _, ok := c.disk.GetIfPresent(k); ok {
		return
	}
	var leader bool
	c.startFill(ctx, k, fetch, &leader) // the result is dropped (its channel is buffered)
}

// errWrite marks an error of the cache's file, as opposed to the backend's.
type errWrite struct{ err error }

func (e errWrite) Error() string { return e.err.Error() }

type fileWriter struct{ f file }

func (w fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		return n, errWrite{err}
	}
	return n, nil
}

// fill reads chunk k from the backend into the cache. A backend error is
// returned as is; an error of the cache makes the result pass-through.
func (c *Cache) fill(ctx context.Context, k chunkKey, fetch Fetcher) (fillResult, error) {
	w, gen := c.acquire(k.id)
	defer c.release(k.id, w)
	st := fillGen{w, gen}
	// Filled by a fill that ended just before this one started (a reader
	// that missed as a read-ahead completed): nothing to fetch.
	if k.idx == 0 && c.mem != nil {
		if b, ok := c.mem.GetIfPresent(k.id); ok {
			return fillResult{data: b}, nil
		}
	}
	if e, ok := c.disk.GetIfPresent(k); ok {
		return fillResult{ent: &e}, nil
	}

	C := c.opts.ChunkSize
	rc, err := fetch(ctx, int64(k.idx)*C, C)
	if err != nil {
		return fillResult{}, err
	}
	defer rc.Close()
	c.fillCount.Add(1)

	// A whole small blob is read into memory first (into a pooled buffer,
	// then copied to its exact size: a cached item must not pin the
	// buffer).
	var head []byte
	if k.idx == 0 && c.mem != nil {
		bp := c.heads.Get().(*[]byte)
		defer c.heads.Put(bp)
		buf := *bp
		n, err := io.ReadFull(rc, buf)
		switch err {
		case nil:
			head = buf[:n] // more follows: not a small blob
		case io.EOF, io.ErrUnexpectedEOF:
			head = bytes.Clone(buf[:n])
			if head == nil {
				head = []byte{}
			}
			if c.commit(k, st, func() { c.mem.Set(k.id, head) }) {
				// Cached in memory; on disk too, best effort, for the
				// next start and for when memory evicts it.
				c.writeFile(ctx, k, st, head, eofReader{})
			}
			return fillResult{data: head}, nil
		default:
			return fillResult{}, err
		}
	}
	ent, werr, err := c.writeFile(ctx, k, st, head, rc)
	if err != nil {
		return fillResult{}, err
	}
	if werr != nil || ent == nil {
		return fillResult{pass: true}, nil
	}
	return fillResult{ent: ent}, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// fillGen is the generation of its identity a fill started in.
type fillGen struct {
	w   *watch
	gen uint64
}

// commit runs fn (which caches the fill's result) unless the identity was
// forgotten since the fill started.
func (c *Cache) commit(_ chunkKey, st fillGen, fn func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.w.gen != st.gen {
		return false
	}
	fn()
	return true
}

// writeFile writes head and the rest of r into the chunk's file: a
// temporary file, fsync'd, renamed into place, then indexed. werr is an
// error of the cache (the chunk is not cached); err an error reading r.
// ent is nil when the identity was forgotten meanwhile.
func (c *Cache) writeFile(ctx context.Context, k chunkKey, st fillGen, head []byte, r io.Reader) (ent *diskEntry, werr, err error) {
	tmp, err := c.fs.CreateTemp(filepath.Join(c.root, "tmp"))
	if err != nil {
		c.failed("create", err)
		return nil, err, nil
	}
	name := tmp.Name()
	done := false
	defer func() {
		if !done {
			tmp.Close()
			c.fs.Remove(name)
		}
	}()
	n := int64(len(head))
	if _, err := tmp.Write(head); err != nil {
		c.failed("write", err)
		return nil, err, nil
	}
	m, err := io.Copy(fileWriter{tmp}, r)
	n += m
	if err != nil {
		var we errWrite
		if errors.As(err, &we) {
			c.failed("write", we.err)
			return nil, we.err, nil
		}
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := tmp.Sync(); err != nil {
		c.failed("sync", err)
		return nil, err, nil
	}
	if err := tmp.Close(); err != nil {
		c.failed("close", err)
		return nil, err, nil
	}
	e := diskEntry{size: n, tag: randTag()}
	final := c.path(k, e.tag)
	if err := c.fs.MkdirAll(filepath.Dir(final)); err != nil {
		c.failed("mkdir", err)
		return nil, err, nil
	}
	if err := c.fs.Rename(name, final); err != nil {
		c.failed("rename", err)
		return nil, err, nil
	}
	done = true
	ok := false
	c.commit(k, st, func() { ok = c.insert(k, e) })
	if !ok {
		// Forgotten meanwhile, or filled by another reader: this copy goes.
		c.fs.Remove(final)
		if e2, found := c.disk.GetIfPresent(k); found && !c.changed(st.w, st.gen) {
			return &e2, nil, nil
		}
		return nil, nil, nil
	}
	return &e, nil, nil
}

func randTag() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:])
}

// Open returns a reader over bytes [off, off+length) of the content named
// identity (length -1: to the end), with blob.Store.Get's contract, reading
// through the cache; fetch reads the backend. The first chunk is looked up
// before Open returns, so a missing blob or a range past its end is an
// error of Open.
func (c *Cache) Open(ctx context.Context, identity string, fetch Fetcher, off, length int64) (io.ReadCloser, error) {
	if off < 0 || length < -1 {
		return nil, errcode.New(errcode.InvalidArgument, "bad range: offset %d, length %d", off, length)
	}
	r := &reader{c: c, ctx: ctx, h: idOf(identity), fetch: fetch, pos: off, end: -1}
	if length >= 0 {
		r.end = off + length
	}
	r.w, r.gen = c.acquire(r.h)
	if err := r.next(true); err != nil {
		c.release(r.h, r.w)
		return nil, err
	}
	return r, nil
}

// reader serves a range chunk after chunk.
type reader struct {
	c     *Cache
	ctx   context.Context
	h     id
	fetch Fetcher
	pos   int64 // next byte to return
	end   int64 // -1: to the end of the blob

	cur     io.Reader // the current chunk from pos, nil before the next
	curFile file
	curLast bool          // the current chunk ends the blob
	curHit  bool          // the current chunk came from the cache
	pass    io.ReadCloser // the backend, for the rest of the range
	eof     bool
	w       *watch
	gen     uint64
	closed  bool
}

// errChanged fails a read whose next chunk would come from content written
// after it opened (the blob was deleted and its key written again).
var errChanged = errcode.New(errcode.Unavailable, "the blob was deleted while being read")

// next opens the chunk pos lies in.
func (r *reader) next(first bool) error {
	if r.end >= 0 && r.pos >= r.end && !first {
		r.eof = true
		return nil
	}
	if !first && r.c.changed(r.w, r.gen) {
		return errChanged
	}
	C := r.c.opts.ChunkSize
	idx := r.pos / C
	if idx > int64(^uint32(0)) {
		return r.passThrough()
	}
	ch, err := r.c.lookup(r.ctx, r.h, uint32(idx), r.fetch)
	if err != nil {
		return err
	}
	if ch.pass {
		return r.passThrough()
	}
	within := r.pos - idx*C
	if within > ch.n {
		if ch.f != nil {
			ch.f.Close()
		}
		return errcode.New(errcode.RangeNotSatisfiable, "offset %d beyond blob of %d bytes", r.pos, idx*C+ch.n)
	}
	stop := ch.n
	if r.end >= 0 {
		stop = min(stop, r.end-idx*C)
	}
	r.curLast = ch.n < C
	r.curHit = ch.hit
	if !r.curLast && (r.end < 0 || r.end > (idx+1)*C) && idx+1 <= int64(^uint32(0)) {
		r.c.prefetch(r.ctx, chunkKey{r.h, uint32(idx + 1)}, r.fetch)
	}
	if ch.f != nil {
		r.curFile = ch.f
		r.cur = io.NewSectionReader(ch.f, within, max(stop-within, 0))
	} else {
		r.cur = &sliceReader{b: ch.data[within:max(stop, within)]}
	}
	return nil
}

// passThrough reads the rest of the range from the backend.
func (r *reader) passThrough() error {
	n := int64(-1)
	if r.end >= 0 {
		n = r.end - r.pos
	}
	rc, err := r.fetch(r.ctx, r.pos, n)
	if err != nil {
		return err
	}
	r.pass = rc
	return nil
}

func (r *reader) closeCur() {
	if r.curFile != nil {
		r.curFile.Close()
		r.curFile = nil
	}
	r.cur = nil
}

func (r *reader) Read(p []byte) (int, error) {
	for {
		if r.pass != nil {
			n, err := r.pass.Read(p)
			r.pos += int64(n)
			return n, err
		}
		if r.eof || (r.end >= 0 && r.pos >= r.end) {
			r.closeCur()
			return 0, io.EOF
		}
		if r.cur == nil {
			if err := r.next(false); err != nil {
				return 0, err
			}
			continue
		}
		n, err := r.cur.Read(p)
		r.pos += int64(n)
		if r.curHit {
			r.c.hitBytes.Add(int64(n))
		}
		switch {
		case err == io.EOF:
			r.closeCur()
			if r.curLast {
				r.eof = true
			}
			if n > 0 {
				return n, nil
			}
		case err != nil:
			// The cache's file failed: the rest comes from the backend.
			r.c.failed("read", err)
			r.closeCur()
			if r.c.changed(r.w, r.gen) {
				return n, errChanged
			}
			if perr := r.passThrough(); perr != nil {
				return n, perr
			}
			if n > 0 {
				return n, nil
			}
		default:
			return n, nil
		}
	}
}

func (r *reader) Close() error {
	r.closeCur()
	if !r.closed {
		r.closed = true
		r.c.release(r.h, r.w)
	}
	if r.pass != nil {
		return r.pass.Close()
	}
	return nil
}

type sliceReader struct{ b []byte }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// Package backup is coffer backup and coffer restore of the embedded shape
// (docs/backup.md): a consistent snapshot of the metadata (SQLite's VACUUM
// INTO, through meta.Snapshotter) taken beside the running server, then
// the blobs that snapshot points at, copied blob.Store to blob.Store,
// streamed, each once (a blob is immutable and named by its key, so later
// backups copy only new ones), and a manifest per backup, written last.
//
// # Layout of a destination (keys of its blob.Store)
//
//	blobs/<blob key>               every backup's blobs, shared, copied once
//	backups/<id>/meta.db           the metadata snapshot of backup id
//	backups/<id>/manifest.json     written last: a backup without one does not exist
//
// Key material (the server key, the local KMS keyring) never goes there:
// it goes to a destination of its own, as <id>/<file name>, or is left out.
//
// # The lease
//
// Blobs the snapshot points at and a write unlinks while the backup copies
// are held by a backup lease (meta.Reclamation.AcquireBackupLease),
// committed before the snapshot is read and renewed while the copy runs:
// the janitor claims no blob queued after its start. A killed backup's
// lease lapses after LeaseTTL. A backup whose lease lapsed fails (the
// janitor may have reclaimed what it held).
package backup

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Key prefixes and names inside a destination.
const (
	BlobsPrefix   = "blobs/"
	BackupsPrefix = "backups/"
	ManifestName  = "manifest.json"
	MetaName      = "meta.db"
)

// Format is the manifest format this package writes and reads.
const Format = 1

// LeaseMargin is how long before the backup starts its lease's since
// lies: a write that read its clock before the lease began may commit
// its queue entry after the snapshot was read (the entry's time is the
// writer's clock when it ran, not when it committed).
const LeaseMargin = time.Minute

// Manifest describes one backup.
type Manifest struct {
	Format int    `json:"format"`
	ID     string `json:"id"`
	// Version is the coffer version that wrote it.
	Version string `json:"coffer_version"`
	// StartedAt is when the backup began; SnapshotAt the snapshot point:
	// every write acknowledged before it is in the backup, and every
	// delete acknowledged before it is too. FinishedAt is when the
	// manifest was written.
	StartedAt  time.Time `json:"started_at"`
	SnapshotAt time.Time `json:"snapshot_at"`
	FinishedAt time.Time `json:"finished_at"`
	// Meta is the metadata snapshot (backups/<id>/meta.db).
	Meta File `json:"meta"`
	// Objects is how many object versions the snapshot holds.
	Objects int64 `json:"objects"`
	// Copied and Skipped count the blobs this backup copied and those
	// an earlier one had copied; CopiedBytes and Bytes their sizes (of
	// the copied ones, and of all).
	Copied      int64 `json:"blobs_copied"`
	Skipped     int64 `json:"blobs_skipped"`
	CopiedBytes int64 `json:"bytes_copied"`
	Bytes       int64 `json:"bytes"`
	// Keys are the names of the key material files saved to the keys
	// destination under <id>/ (none: left out).
	Keys []string `json:"keys"`
	// Missing are blobs the snapshot points at that the data folder did
	// not have (damage found, not made, by the backup: see coffer fsck).
	Missing []string `json:"missing,omitempty"`
	// Blobs are the blobs of the backup, by key.
	Blobs []File `json:"blobs"`
}

// File is a file of a backup: its key (a blob key, or the name of the
// metadata snapshot), size and SHA-256 of its stored bytes (hex).
type File struct {
	Key    string `json:"key"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// KeyFile is a file of key material in the data folder.
type KeyFile struct {
	Name, Path string
}

// Source is what a backup reads: the live metadata store's reclamation
// role (the lease) and snapshotter, and the data folder's blobs.
type Source struct {
	Meta  meta.Reclamation
	Snap  meta.Snapshotter
	Blobs blob.Store
	// TmpDir is a folder on the data folder's disk for the snapshot
	// file (removed afterwards).
	TmpDir string
	// Keys are the key material files to save (when Options.Keys is set).
	Keys []KeyFile
}

// Options tune a backup.
type Options struct {
	// Keys is the destination of the key material (nil: left out).
	Keys blob.Store
	// Parallel is how many blobs are copied at once (<= 0: 8).
	Parallel int
	// Version is the coffer version recorded in the manifest.
	Version string
	// LeaseTTL is how long the lease lasts unrenewed (<= 0: 2 minutes);
	// it is renewed every third of it.
	LeaseTTL time.Duration
	// Progress, if set, is called from one goroutine every second or so
	// while blobs are copied.
	Progress func(Progress)
	// now is the clock (tests); nil: time.Now.
	now func() time.Time
	// afterSnapshot, if set, is called once the snapshot is read (tests).
	afterSnapshot func()
	// renewed, if set, is called after each renewal of the lease by the
	// heartbeat, with the time it was renewed at (tests).
	renewed func(at time.Time)
}

// Progress is a backup's or a restore's progress.
type Progress struct {
	Total, Done     int64 // blobs
	Copied, Skipped int64
	Bytes           int64 // bytes copied
	Elapsed         time.Duration
}

// NewID returns a new backup ID: the UTC time to the millisecond, so
// that IDs sort by time, and a random suffix.
func NewID(t time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return t.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
}

func manifestKey(id string) string { return BackupsPrefix + id + "/" + ManifestName }
func metaKey(id string) string     { return BackupsPrefix + id + "/" + MetaName }

// Run takes a backup of src into dst and returns its manifest (also when
// it fails after copying, with the counts so far).
func Run(ctx context.Context, src Source, dst blob.Store, o Options) (m Manifest, err error) {
	now := o.now
	if now == nil {
		now = time.Now
	}
	ttl := o.LeaseTTL
	if ttl <= 0 {
		ttl = 2 * time.Minute
	}
	par := o.Parallel
	if par <= 0 {
		par = 8
	}
	start := now()
	m = Manifest{Format: Format, ID: NewID(start), Version: o.Version, StartedAt: start.UTC()}

	// What the destination has: the blobs of earlier backups, with the
	// checksums their manifests give.
	known, err := knownBlobs(ctx, dst)
	if err != nil {
		return m, err
	}

	// The lease, committed before the snapshot is read.
	if err := src.Meta.AcquireBackupLease(ctx, m.ID, start.Add(-LeaseMargin), start.Add(ttl)); err != nil {
		return m, fmt.Errorf("taking the backup lease: %w", err)
	}
	lctx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	var beat sync.WaitGroup
	stopBeat := make(chan struct{})
	beat.Go(func() {
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-stopBeat:
				return
			case <-t.C:
				n := now()
				if err := src.Meta.RenewBackupLease(lctx, m.ID, n.Add(ttl), n); err != nil {
					lost(fmt.Errorf("renewing the backup lease (blobs deleted since the snapshot may have been reclaimed): %w", err))
					return
				}
				if o.renewed != nil {
					o.renewed(n)
				}
			}
		}
	})
	finished := false
	defer func() {
		close(stopBeat)
		beat.Wait()
		if !finished {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			_ = src.Meta.ReleaseBackupLease(rctx, m.ID)
			cancel()
		}
	}()
	ctx = lctx

	tmp, err := os.MkdirTemp(src.TmpDir, ".backup-")
	if err != nil {
		return m, fmt.Errorf("making a temporary folder for the snapshot: %w", err)
	}
	defer os.RemoveAll(tmp)
	snap := filepath.Join(tmp, MetaName)
	m.SnapshotAt = now().UTC()
	if err := src.Snap.SnapshotTo(ctx, snap); err != nil {
		return m, fmt.Errorf("snapshot of the metadata: %w", cause(ctx, err))
	}
	if o.afterSnapshot != nil {
		o.afterSnapshot()
	}

	// Key material read after the snapshot: a keyring only grows, so it
	// holds every key the snapshot names.
	if o.Keys != nil {
		for _, k := range src.Keys {
			if err := putFile(ctx, o.Keys, m.ID+"/"+k.Name, k.Path); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				return m, fmt.Errorf("saving key material %s: %w", k.Name, err)
			}
			m.Keys = append(m.Keys, k.Name)
		}
	}

	type job struct {
		key    string
		staged bool
	}
	var jobs []job
	m.Objects, err = src.Snap.SnapshotBlobs(ctx, snap, func(key string, staged bool) error {
		jobs = append(jobs, job{key, staged})
		return nil
	})
	if err != nil {
		return m, fmt.Errorf("reading the snapshot: %w", cause(ctx, err))
	}

	// Copy, par at a time.
	var (
		mu       sync.Mutex
		files    = make([]File, 0, len(jobs))
		missing  []string
		done     atomic.Int64
		copied   atomic.Int64
		skipped  atomic.Int64
		bytes    atomic.Int64
		next     atomic.Int64
		firstErr error
	)
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for range min(par, max(len(jobs), 1)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) || cctx.Err() != nil {
					return
				}
				j := jobs[i]
				f, ok := known[j.key]
				switch {
				case ok:
					skipped.Add(1)
				default:
					var err error
					f, err = copyBlob(cctx, src.Blobs, dst, j.key, BlobsPrefix+j.key, nil, &bytes)
					if errcode.Is(err, errcode.NotFound) && cctx.Err() == nil {
						done.Add(1)
						if !j.staged { // a staged blob's write was not acknowledged: it may be gone
							mu.Lock()
							missing = append(missing, j.key)
							mu.Unlock()
						}
						continue
					}
					if err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("copying blob %s: %w", j.key, err)
						}
						mu.Unlock()
						cancel(err)
						return
					}
					copied.Add(1)
				}
				done.Add(1)
				mu.Lock()
				files = append(files, f)
				mu.Unlock()
			}
		})
	}
	progress := func() Progress {
		return Progress{Total: int64(len(jobs)), Done: done.Load(), Copied: copied.Load(), Skipped: skipped.Load(),
			Bytes: bytes.Load(), Elapsed: now().Sub(start)}
	}
	stopProgress := everySecond(o.Progress, progress)
	wg.Wait()
	stopProgress()
	m.Copied, m.Skipped, m.CopiedBytes = copied.Load(), skipped.Load(), bytes.Load()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = context.Cause(ctx)
	}
	if firstErr != nil {
		return m, firstErr
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Key, b.Key) })
	for _, f := range files {
		m.Bytes += f.Size
	}
	m.Blobs = files
	slices.Sort(missing)
	m.Missing = missing

	// The metadata snapshot.
	mf, err := os.Open(snap)
	if err != nil {
		return m, err
	}
	fi, err := mf.Stat()
	if err != nil {
		mf.Close()
		return m, err
	}
	h := sha256.New()
	_, err = dst.Put(ctx, metaKey(m.ID), io.TeeReader(mf, h), fi.Size())
	mf.Close()
	if err != nil {
		return m, fmt.Errorf("saving the metadata snapshot: %w", err)
	}
	m.Meta = File{Key: MetaName, Size: fi.Size(), SHA256: hex.EncodeToString(h.Sum(nil))}

	// The lease must have held until now: renew it once more (a lapsed
	// one fails), then write the manifest, last.
	n := now()
	if err := src.Meta.RenewBackupLease(ctx, m.ID, n.Add(ttl), n); err != nil {
		return m, fmt.Errorf("the backup lease lapsed while copying (blobs deleted since the snapshot may have been reclaimed): %w", err)
	}
	m.FinishedAt = now().UTC()
	body, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return m, err
	}
	if _, err := dst.Put(ctx, manifestKey(m.ID), strings.NewReader(string(body)), int64(len(body))); err != nil {
		return m, fmt.Errorf("writing the manifest: %w", err)
	}
	finished = true
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	if err := src.Meta.FinishBackup(rctx, m.ID, m.FinishedAt); err != nil {
		return m, fmt.Errorf("backup %s is complete, but recording it in the data folder failed: %w", m.ID, err)
	}
	if len(m.Missing) > 0 {
		return m, fmt.Errorf("backup %s is written, but %d blobs the metadata points at were missing from the data folder (first: %s); run coffer fsck", m.ID, len(m.Missing), m.Missing[0])
	}
	return m, nil
}

// copyBlob streams blob from from src to key in dst, hashing what it
// reads, and returns it as a File named from. The size (and want's
// SHA-256, if want is set) is checked at EOF, which fails the Put's reader
// so that dst keeps nothing; a store that stopped reading at the size
// before EOF has its copy checked after the Put, and removed on a
// mismatch.
func copyBlob(ctx context.Context, src, dst blob.Store, from, key string, want *File, n *atomic.Int64) (File, error) {
	info, err := src.Stat(ctx, from)
	if err != nil {
		return File{}, err
	}
	r, err := src.Get(ctx, from, 0, -1)
	if err != nil {
		return File{}, err
	}
	defer r.Close()
	cr := &checkReader{r: r, h: sha256.New(), size: info.Size, want: want, key: from, n: n}
	if _, err := dst.Put(ctx, key, cr, info.Size); err != nil {
		return File{}, err
	}
	// A store that read exactly size bytes may not have read to EOF.
	if err := cr.finish(); err != nil {
		if derr := dst.Delete(context.WithoutCancel(ctx), key); derr != nil {
			return File{}, fmt.Errorf("%w (and removing the copy failed: %v)", err, derr)
		}
		return File{}, err
	}
	return File{Key: from, Size: info.Size, SHA256: hex.EncodeToString(cr.h.Sum(nil))}, nil
}

// checkReader hashes what it reads and, at EOF, checks it against want
// (if set), failing the read on a mismatch.
type checkReader struct {
	r    io.Reader
	h    hash.Hash
	size int64
	got  int64
	want *File
	key  string
	n    *atomic.Int64
	err  error

	checked bool
}

func (c *checkReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.h.Write(p[:k])
	c.got += int64(k)
	if c.n != nil {
		c.n.Add(int64(k))
	}
	if err == io.EOF {
		if err := c.finish(); err != nil {
			return k, err
		}
	}
	return k, err
}

// finish checks what was read (once): the size, and want's checksum.
func (c *checkReader) finish() error {
	if c.checked {
		return c.err
	}
	c.checked = true
	if c.got != c.size {
		c.err = errcode.New(errcode.Internal, "blob %s: read %d bytes, want %d", c.key, c.got, c.size)
	} else if c.want != nil && (c.want.Size != c.got || hex.EncodeToString(c.h.Sum(nil)) != c.want.SHA256) {
		c.err = ErrChecksum(c.key)
	}
	return c.err
}

// cause is err, or why ctx ended if it did (a lapsed lease).
func cause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
		return c
	}
	return err
}

// ErrChecksum is the error of a blob whose bytes differ from its manifest.
func ErrChecksum(key string) error {
	return errcode.New(errcode.Internal, "blob %s: size or SHA-256 differs from the manifest", key)
}

// putFile saves the local file path to key in dst.
func putFile(ctx context.Context, dst blob.Store, key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	_, err = dst.Put(ctx, key, f, fi.Size())
	return err
}

// knownBlobs returns the blobs in dst that a manifest in dst describes
// (with its size and checksum): those a backup may skip. A blob in
// blobs/ that no manifest names (left by a failed backup) is copied again.
func knownBlobs(ctx context.Context, dst blob.Store) (map[string]File, error) {
	present := map[string]int64{}
	err := dst.List(ctx, BlobsPrefix, func(i blob.Info) error {
		present[strings.TrimPrefix(i.Key, BlobsPrefix)] = i.Size
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the destination: %w", err)
	}
	ms, err := List(ctx, dst)
	if err != nil {
		return nil, err
	}
	known := map[string]File{}
	for _, m := range ms {
		for _, f := range m.Blobs {
			if size, ok := present[f.Key]; ok && size == f.Size {
				known[f.Key] = f
			}
		}
	}
	return known, nil
}

// List returns the manifests in dst, oldest first.
func List(ctx context.Context, dst blob.Store) ([]Manifest, error) {
	var ids []string
	err := dst.List(ctx, BackupsPrefix, func(i blob.Info) error {
		rest := strings.TrimPrefix(i.Key, BackupsPrefix)
		if id, ok := strings.CutSuffix(rest, "/"+ManifestName); ok && !strings.Contains(id, "/") {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the backups: %w", err)
	}
	slices.Sort(ids)
	out := make([]Manifest, 0, len(ids))
	for _, id := range ids {
		m, err := Load(ctx, dst, id)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Load reads the manifest of backup id.
func Load(ctx context.Context, dst blob.Store, id string) (Manifest, error) {
	var m Manifest
	if id == "" || strings.Contains(id, "/") {
		return m, errcode.New(errcode.InvalidArgument, "bad backup id %q", id)
	}
	r, err := dst.Get(ctx, manifestKey(id), 0, -1)
	if errcode.Is(err, errcode.NotFound) {
		return m, errcode.New(errcode.NotFound, "there is no backup %s (no %s)", id, manifestKey(id))
	}
	if err != nil {
		return m, err
	}
	defer r.Close()
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return m, fmt.Errorf("reading the manifest of backup %s: %w", id, err)
	}
	if m.Format != Format || m.ID != id {
		return m, fmt.Errorf("the manifest of backup %s is not one this coffer reads (format %d, id %q)", id, m.Format, m.ID)
	}
	return m, nil
}

// Latest returns the newest backup's manifest in dst.
func Latest(ctx context.Context, dst blob.Store) (Manifest, error) {
	ms, err := List(ctx, dst)
	if err != nil {
		return Manifest{}, err
	}
	if len(ms) == 0 {
		return Manifest{}, errcode.New(errcode.NotFound, "there is no backup there (no backups/<id>/manifest.json)")
	}
	return ms[len(ms)-1], nil
}

package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
)

// RestoreMeta writes backup m's metadata snapshot from src to the new file
// path, checking its SHA-256 (a mismatch leaves no file), durably.
func RestoreMeta(ctx context.Context, src blob.Store, m Manifest, path string) error {
	r, err := src.Get(ctx, metaKey(m.ID), 0, -1)
	if err != nil {
		return fmt.Errorf("reading the metadata snapshot of backup %s: %w", m.ID, err)
	}
	defer r.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(f, io.TeeReader(r, h))
	if err == nil && (n != m.Meta.Size || hex.EncodeToString(h.Sum(nil)) != m.Meta.SHA256) {
		err = ErrChecksum(metaKey(m.ID))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// RestoreBlobs copies backup m's blobs from src (blobs/<key>) into dst
// (<key>), par at a time (<= 0: 8), checking each one's size and SHA-256
// as it streams (a mismatch fails the restore, naming the blob, and
// leaves no copy of it).
func RestoreBlobs(ctx context.Context, src, dst blob.Store, m Manifest, par int, progress func(Progress)) (Progress, error) {
	if par <= 0 {
		par = 8
	}
	start := time.Now()
	var (
		next, done, bytes atomic.Int64
		mu                sync.Mutex
		firstErr          error
	)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for range min(par, max(len(m.Blobs), 1)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(m.Blobs) || ctx.Err() != nil {
					return
				}
				f := m.Blobs[i]
				if _, err := copyBlobTo(ctx, src, dst, BlobsPrefix+f.Key, f.Key, &f, &bytes); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("restoring blob %s: %w", f.Key, err)
					}
					mu.Unlock()
					cancel(err)
					return
				}
				done.Add(1)
			}
		})
	}
	snap := func() Progress {
		return Progress{Total: int64(len(m.Blobs)), Done: done.Load(), Copied: done.Load(), Bytes: bytes.Load(), Elapsed: time.Since(start)}
	}
	stopProgress := everySecond(progress, snap)
	wg.Wait()
	stopProgress()
	return snap(), firstErr
}

// copyBlobTo is copyBlob with the destination key apart from the
// source's, the File named by the destination key.
func copyBlobTo(ctx context.Context, src, dst blob.Store, from, to string, want *File, n *atomic.Int64) (File, error) {
	f, err := copyBlob(ctx, src, dst, from, to, want, n)
	f.Key = to
	return f, err
}

// RestoreKeys writes the key material of backup m from keys (<id>/<name>)
// into the folder dir, each file with mode 0600, and returns the names.
func RestoreKeys(ctx context.Context, keys blob.Store, m Manifest, dir string) ([]string, error) {
	var names []string
	for _, name := range m.Keys {
		if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
			return names, fmt.Errorf("bad key file name %q in the manifest", name)
		}
		r, err := keys.Get(ctx, m.ID+"/"+name, 0, -1)
		if err != nil {
			return names, fmt.Errorf("reading key material %s of backup %s: %w", name, m.ID, err)
		}
		err = writeFile(filepath.Join(dir, name), r)
		r.Close()
		if err != nil {
			return names, err
		}
		names = append(names, name)
	}
	return names, nil
}

// writeFile writes r to the new file path, 0600, durably.
func writeFile(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// Bad is a file of a backup that failed verification.
type Bad struct {
	Backup, Key string
	Err         error
}

// Verify re-reads every blob (and the metadata snapshot) of the backups
// ms from dst and checks its size and SHA-256 against the manifest; a blob
// shared by several is read once. It returns the bad ones; err is a
// failure to verify at all.
func Verify(ctx context.Context, dst blob.Store, ms []Manifest, par int, progress func(Progress)) ([]Bad, Progress, error) {
	if par <= 0 {
		par = 8
	}
	type item struct {
		backup, key, store string
		f                  File
	}
	seen := map[string]bool{}
	var items []item
	for _, m := range ms {
		items = append(items, item{m.ID, metaKey(m.ID), metaKey(m.ID), m.Meta})
		for _, f := range m.Blobs {
			if !seen[f.Key] {
				seen[f.Key] = true
				items = append(items, item{m.ID, f.Key, BlobsPrefix + f.Key, f})
			}
		}
	}
	start := time.Now()
	var (
		next, done, bytes atomic.Int64
		mu                sync.Mutex
		bad               []Bad
	)
	var wg sync.WaitGroup
	for range min(par, max(len(items), 1)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(items) || ctx.Err() != nil {
					return
				}
				it := items[i]
				err := check(ctx, dst, it.store, it.f, &bytes)
				done.Add(1)
				if err != nil && ctx.Err() == nil {
					mu.Lock()
					bad = append(bad, Bad{Backup: it.backup, Key: it.key, Err: err})
					mu.Unlock()
				}
			}
		})
	}
	snap := func() Progress {
		return Progress{Total: int64(len(items)), Done: done.Load(), Bytes: bytes.Load(), Elapsed: time.Since(start)}
	}
	stopProgress := everySecond(progress, snap)
	wg.Wait()
	stopProgress()
	slices.SortFunc(bad, func(a, b Bad) int { return strings.Compare(a.Key, b.Key) })
	return bad, snap(), ctx.Err()
}

// check reads key from dst whole and checks it against f.
func check(ctx context.Context, dst blob.Store, key string, f File, n *atomic.Int64) error {
	r, err := dst.Get(ctx, key, 0, -1)
	if err != nil {
		return err
	}
	defer r.Close()
	h := sha256.New()
	got, err := io.Copy(h, r)
	n.Add(got)
	if err != nil {
		return err
	}
	if got != f.Size || hex.EncodeToString(h.Sum(nil)) != f.SHA256 {
		return errors.New("size or SHA-256 differs from the manifest")
	}
	return nil
}

// Pruned is what Prune removed.
type Pruned struct {
	Backups []string
	Blobs   int64
	Bytes   int64
}

// Prune keeps the newest keep backups in dst and removes the others:
// first their manifests (so that each stops existing at once), then their
// other files, then the blobs no kept manifest names. A backup in progress
// (no manifest yet, newer than the newest kept one) is left alone, and so
// are blobs written after the newest kept backup began. Do not prune an
// S3 destination while a backup to it runs (a folder is locked by the
// backup).
func Prune(ctx context.Context, dst blob.Store, keep int) (Pruned, error) {
	var p Pruned
	if keep < 1 {
		return p, errcode.New(errcode.InvalidArgument, "--keep must be at least 1")
	}
	ms, err := List(ctx, dst)
	if err != nil {
		return p, err
	}
	if len(ms) <= keep {
		return p, nil
	}
	kept := ms[len(ms)-keep:]
	newest := kept[len(kept)-1]
	for _, m := range ms[:len(ms)-keep] {
		if err := dst.Delete(ctx, manifestKey(m.ID)); err != nil {
			return p, fmt.Errorf("removing the manifest of backup %s: %w", m.ID, err)
		}
		p.Backups = append(p.Backups, m.ID)
	}
	// The other files of removed backups, and of failed ones older than
	// the newest kept.
	keptIDs := map[string]bool{}
	for _, m := range kept {
		keptIDs[m.ID] = true
	}
	var stale []string
	err = dst.List(ctx, BackupsPrefix, func(i blob.Info) error {
		id, _, _ := strings.Cut(strings.TrimPrefix(i.Key, BackupsPrefix), "/")
		if !keptIDs[id] && id < newest.ID {
			stale = append(stale, i.Key)
		}
		return nil
	})
	if err != nil {
		return p, err
	}
	for _, k := range stale {
		if err := dst.Delete(ctx, k); err != nil {
			return p, err
		}
	}
	live := map[string]bool{}
	for _, m := range kept {
		for _, f := range m.Blobs {
			live[f.Key] = true
		}
	}
	var gone []blob.Info
	err = dst.List(ctx, BlobsPrefix, func(i blob.Info) error {
		if !live[strings.TrimPrefix(i.Key, BlobsPrefix)] && i.ModTime.Before(newest.StartedAt) {
			gone = append(gone, i)
		}
		return nil
	})
	if err != nil {
		return p, err
	}
	for _, i := range gone {
		if err := dst.Delete(ctx, i.Key); err != nil {
			return p, err
		}
		p.Blobs++
		p.Bytes += i.Size
	}
	return p, nil
}

// everySecond calls progress with snap() once a second (progress nil:
// never) until the returned stop is called, which waits for the last call.
func everySecond(progress func(Progress), snap func() Progress) (stop func()) {
	if progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var pw sync.WaitGroup
	pw.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				progress(snap())
			}
		}
	})
	return func() { close(done); pw.Wait() }
}

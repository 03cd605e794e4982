package replicate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/diskblob"
)

// RestoreOptions configure Restore.
type RestoreOptions struct {
	Log *slog.Logger
	// Progress, if set, is told after each blob copied.
	Progress func(blobs, bytes int64)
}

// Restored says what Restore restored.
type Restored struct {
	// Point is the time of the last change restored (the creation time of
	// the newest LTX file applied); TXID its transaction.
	Point time.Time
	TXID  uint64
	// Blobs and Bytes were copied into DIR/blobs.
	Blobs, Bytes int64
}

// Point picks the LTX files a restore to at applies (at zero: the newest
// point): the newest snapshot made before at, then the files that extend
// it, each made before at. It returns the restore plan's last file, whose
// creation time and TXID are the restored point; ErrNoPoint if the
// replica holds no point at or before at.
func Point(ctx context.Context, dest blob.Store, at time.Time) (*ltx.FileInfo, error) {
	c := &ltxClient{st: dest, log: slog.Default()}
	plan, err := litestream.CalcRestorePlan(ctx, c, 0, at, slog.New(slog.DiscardHandler))
	if errors.Is(err, litestream.ErrTxNotAvailable) || err == nil && len(plan) == 0 {
		return nil, ErrNoPoint
	} else if err != nil {
		return nil, err
	}
	last := plan[len(plan)-1]
	if at.IsZero() {
		// The plan's files carry the stores' times; the header's is the one
		// a point in time is chosen by.
		ts, err := c.headerTime(ctx, bi(last))
		if err != nil {
			return nil, err
		}
		last.CreatedAt = ts
	}
	return last, nil
}

// ErrNoPoint is a replica without a point in time at or before the one
// asked for.
var ErrNoPoint = errors.New("the replica holds no point in time at or before the one asked for")

// Restore makes the data folder dataDir (absent or empty) from the replica
// at src as it was at time at (zero: the newest point): meta.db as of the
// newest point made before at, and the replica's blobs (every blob a
// point names is there, see the package comment; blobs no point at or
// before at names are copied too, and the janitor's orphan sweep (coffer
// gc) reclaims them). The key material (server key, keyring) is not in a
// replica: the caller brings it.
func Restore(ctx context.Context, src, dataDir string, at time.Time, o RestoreOptions) (res Restored, err error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if err := emptyDir(dataDir); err != nil {
		return res, err
	}
	dest, err := OpenDest(ctx, src, true)
	if err != nil {
		return res, err
	}
	defer dest.Close()
	point, err := Point(ctx, dest, at)
	if err != nil {
		return res, err
	}
	res.Point, res.TXID = point.CreatedAt, uint64(point.MaxTXID)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return res, err
	}
	// meta.db is written under another name and renamed last: a folder
	// with a meta.db is a restored one.
	tmp := filepath.Join(dataDir, ".meta.db.restoring")
	_ = os.Remove(tmp)
	rep := litestream.NewReplicaWithClient(nil, &ltxClient{st: dest, log: o.Log})
	if err := rep.Restore(ctx, litestream.RestoreOptions{OutputPath: tmp, TXID: point.MaxTXID}); err != nil {
		_ = os.Remove(tmp)
		return res, fmt.Errorf("restoring meta.db: %w", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return res, err
	}
	local, err := diskblob.Open(filepath.Join(dataDir, "blobs"))
	if err != nil {
		return res, err
	}
	defer local.Close()
	err = dest.List(ctx, blobPrefix, func(i blob.Info) error {
		rc, err := dest.Get(ctx, i.Key, 0, -1)
		if err != nil {
			return err
		}
		defer rc.Close()
		if _, err := local.Put(ctx, i.Key[len(blobPrefix):], rc, i.Size); err != nil {
			return fmt.Errorf("copying %s: %w", i.Key, err)
		}
		res.Blobs++
		res.Bytes += i.Size
		if o.Progress != nil {
			o.Progress(res.Blobs, res.Bytes)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	for _, f := range []string{tmp + "-txid", tmp + "-wal", tmp + "-shm"} {
		_ = os.Remove(f)
	}
	if err := os.Rename(tmp, filepath.Join(dataDir, "meta.db")); err != nil {
		return res, err
	}
	d, err := os.Open(dataDir)
	if err == nil {
		err = d.Sync()
		_ = d.Close()
	}
	return res, err
}

// emptyDir refuses a folder that holds anything.
func emptyDir(dir string) error {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); err == nil {
		return fmt.Errorf("%s is not empty: coffer restore makes a new data folder", dir)
	} else if !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

package replicate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strings"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// ltxClient is litestream's ReplicaClient over a blob.Store (the
// destination, opened as --blob is): LTX files are blobs under
// meta/ltx/<level>/<minTXID>-<maxTXID>.ltx. Before any LTX file is written,
// barrier waits until every blob the data folder held when the file was
// made has reached the destination, so a metadata point on the replica
// never names a blob the replica lacks (see replicate.go).
type ltxClient struct {
	st      blob.Store
	barrier func(ctx context.Context) error // nil: none (restore)
	log     *slog.Logger
}

var _ litestream.ReplicaClient = (*ltxClient)(nil)

func (c *ltxClient) Type() string               { return "coffer" }
func (c *ltxClient) Init(context.Context) error { return nil }
func (c *ltxClient) SetLogger(l *slog.Logger)   { c.log = l }
func levelDir(level int) string                 { return fmt.Sprintf("%s%04d/", metaPrefix, level) }
func ltxKey(level int, lo, hi ltx.TXID) string  { return levelDir(level) + ltx.FormatFilename(lo, hi) }
func notExist(key string, err error) error {
	return fmt.Errorf("%s: %w (%w)", key, os.ErrNotExist, err)
}
func isNotFound(err error) bool { return errcode.Is(err, errcode.NotFound) }

// LTXFiles lists a level's files in TXID order (the names are fixed-width
// hex, so the store's lexicographic order is it), from seek on. With
// useMetadata (a restore to a point in time) each file's CreatedAt is the
// time in its header, when litestream made it from the WAL; otherwise the
// blob's modification time, when it reached the destination.
func (c *ltxClient) LTXFiles(ctx context.Context, level int, seek ltx.TXID, useMetadata bool) (ltx.FileIterator, error) {
	var infos []*ltx.FileInfo
	err := c.st.List(ctx, levelDir(level), func(bi blob.Info) error {
		lo, hi, err := ltx.ParseFilename(path.Base(bi.Key))
		if err != nil || lo < seek || strings.Contains(strings.TrimPrefix(bi.Key, levelDir(level)), "/") {
			return nil
		}
		infos = append(infos, &ltx.FileInfo{Level: level, MinTXID: lo, MaxTXID: hi, Size: bi.Size, CreatedAt: bi.ModTime.UTC()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if useMetadata {
		for _, fi := range infos {
			ts, err := c.headerTime(ctx, bi(fi))
			if err != nil {
				return nil, err
			}
			fi.CreatedAt = ts
		}
	}
	return ltx.NewFileInfoSliceIterator(infos), nil
}

func bi(fi *ltx.FileInfo) string { return ltxKey(fi.Level, fi.MinTXID, fi.MaxTXID) }

// headerTime reads the creation time in an LTX file's header.
func (c *ltxClient) headerTime(ctx context.Context, key string) (time.Time, error) {
	rc, err := c.st.Get(ctx, key, 0, ltx.HeaderSize)
	if err != nil {
		return time.Time{}, err
	}
	defer rc.Close()
	hdr, _, err := ltx.PeekHeader(rc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", key, err)
	}
	return time.UnixMilli(hdr.Timestamp).UTC(), nil
}

// OpenLTXFile reads size bytes (0: to the end) of a file from offset; a
// missing file is os.ErrNotExist, as litestream expects.
func (c *ltxClient) OpenLTXFile(ctx context.Context, level int, lo, hi ltx.TXID, offset, size int64) (io.ReadCloser, error) {
	key := ltxKey(level, lo, hi)
	length := int64(-1)
	if size > 0 {
		length = size
	}
	rc, err := c.st.Get(ctx, key, offset, length)
	if isNotFound(err) {
		return nil, notExist(key, err)
	}
	return rc, err
}

// WriteLTXFile stores an LTX file, streamed, after the blob barrier.
func (c *ltxClient) WriteLTXFile(ctx context.Context, level int, lo, hi ltx.TXID, r io.Reader) (*ltx.FileInfo, error) {
	if c.barrier != nil {
		if err := c.barrier(ctx); err != nil {
			return nil, fmt.Errorf("blobs before metadata %s: %w", ltx.FormatFilename(lo, hi), err)
		}
	}
	hdr, r, err := ltx.PeekHeader(r)
	if err != nil {
		return nil, fmt.Errorf("ltx header: %w", err)
	}
	key := ltxKey(level, lo, hi)
	info, err := c.st.Put(ctx, key, r, -1)
	if err != nil {
		return nil, err
	}
	return &ltx.FileInfo{Level: level, MinTXID: lo, MaxTXID: hi, Size: info.Size, CreatedAt: time.UnixMilli(hdr.Timestamp).UTC()}, nil
}

// DeleteLTXFiles deletes files litestream compacted or retired (never a
// blob of blobs/).
func (c *ltxClient) DeleteLTXFiles(ctx context.Context, a []*ltx.FileInfo) error {
	var errs []error
	for _, fi := range a {
		if err := c.st.Delete(ctx, bi(fi)); err != nil && !isNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DeleteAll deletes the LTX files (litestream calls it when the database
// was replaced); blobs stay.
func (c *ltxClient) DeleteAll(ctx context.Context) error {
	var keys []string
	if err := c.st.List(ctx, metaPrefix, func(i blob.Info) error { keys = append(keys, i.Key); return nil }); err != nil {
		return err
	}
	for _, k := range keys {
		if err := c.st.Delete(ctx, k); err != nil && !isNotFound(err) {
			return err
		}
	}
	return nil
}

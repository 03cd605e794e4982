package replicate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/diskblob"
	"github.com/coffer-storage/coffer/internal/blob/s3blob"
)

// Layout of a destination (a folder or an S3 URL, the syntax of --blob):
//
//	blobs/<blob key>     every blob of the data folder, copied once (the layout of coffer backup's)
//	meta/ltx/<level>/…   litestream's LTX files of meta.db (level 0: one per sync; higher: compactions)
const (
	blobPrefix = "blobs/"
	metaPrefix = "meta/ltx/"
)

// Dest is an opened destination.
type Dest struct {
	blob.Store
	// URL is the destination as given, without an S3 URL's query (for
	// logs).
	URL string
}

// Close releases the destination's store.
func (d *Dest) Close() error {
	if c, ok := d.Store.(blob.Closer); ok {
		return c.Close()
	}
	return nil
}

// OpenDest opens a destination: an s3://BUCKET[/PREFIX]?endpoint=… URL (as
// --blob) or a folder, made if missing unless readOnly. A folder is a
// diskblob store, locked by the one process writing it; readOnly opens it
// beside such a process, for reading only (coffer restore).
func OpenDest(ctx context.Context, u string, readOnly bool) (*Dest, error) {
	if u == "" {
		return nil, errors.New("replicate: no destination")
	}
	if strings.HasPrefix(u, "s3://") {
		opts, err := s3blob.ParseURL(u)
		if err != nil {
			return nil, err
		}
		st, err := s3blob.Open(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", bare(u), err)
		}
		return &Dest{Store: st, URL: bare(u)}, nil
	}
	if strings.Contains(u, "://") {
		return nil, fmt.Errorf("replicate: %q is neither a folder nor an s3:// URL", bare(u))
	}
	if readOnly {
		if _, err := os.Stat(u); err != nil {
			return nil, fmt.Errorf("replica folder %s: %w", u, err)
		}
		st, err := diskblob.OpenReadOnly(u)
		if err != nil {
			return nil, fmt.Errorf("opening replica folder %s: %w", u, err)
		}
		return &Dest{Store: st, URL: u}, nil
	}
	if err := os.MkdirAll(u, 0o700); err != nil {
		return nil, fmt.Errorf("replica folder: %w", err)
	}
	st, err := diskblob.Open(u)
	if err != nil {
		return nil, fmt.Errorf("opening replica folder %s: %w", u, err)
	}
	return &Dest{Store: st, URL: u}, nil
}

// bare is u without its query (which may name credentials files).
func bare(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}

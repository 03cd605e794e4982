package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/diskblob"
	"github.com/coffer-storage/coffer/internal/blob/s3blob"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/metrics"
)

// OpenLocation opens a backup destination or source (coffer backup
// --to, --keys-to; coffer restore --from, --keys-from), in the syntax of
// --blob: an s3:// URL (credentials from the standard AWS chain), else a
// folder. A folder opens locked (one process at a time: a second backup
// to it, or a prune, waits for none and fails), made if missing; with
// readOnly it opens unlocked, for reading only, and must exist. The
// caller closes it with the returned function.
func OpenLocation(ctx context.Context, loc string, readOnly bool) (blob.Store, func() error, error) {
	if loc == "" {
		return nil, nil, fmt.Errorf("no location given")
	}
	if strings.Contains(loc, "://") {
		opts, err := s3blob.ParseURL(loc)
		if err != nil {
			return nil, nil, err
		}
		s, err := s3blob.Open(ctx, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("opening %s: %w", loc, err)
		}
		return s, func() error { return nil }, nil
	}
	if readOnly {
		s, err := diskblob.OpenReadOnly(loc)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
	s, err := diskblob.Open(loc)
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// registerBackupMetrics exports when the last coffer backup of this data
// folder (or metadata store) finished, read from the store at scrape time
// (docs/backup.md).
func registerBackupMetrics(m *metrics.Metrics, r meta.Reclamation) {
	m.GaugeFunc("coffer_backup_last_success_timestamp_seconds", "When the last coffer backup of this data folder finished (Unix seconds; 0: none, or unknown).",
		func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			t, err := r.LastBackup(ctx)
			if err != nil || t.IsZero() {
				return 0
			}
			return float64(t.UnixNano()) / 1e9
		})
}

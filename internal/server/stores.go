package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/diskblob"
	"github.com/coffer-storage/coffer/internal/blob/s3blob"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
	"github.com/coffer-storage/coffer/internal/meta/postgres"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
	"github.com/coffer-storage/coffer/internal/metacache"
	"github.com/coffer-storage/coffer/internal/tracing"
)

// StoreOptions say what OpenStores opens, and how it may make the data
// folder.
type StoreOptions struct {
	// Meta and Blobs say which stores to open: the metadata store (by
	// role, through the cache of --meta-cache), the blob store (bare: the
	// blob read cache is coffer serve's).
	Meta, Blobs bool
	// PrepareData is called once, after the shared stores of the
	// scale-out shape opened and before anything is opened or made in
	// the data folder (SQLite's meta.db, the local disk's blobs/): it
	// makes the folder ready, or refuses (nil: nothing to do).
	PrepareData func() error
	// Bus carries the metadata cache's invalidations (nil: a new one).
	Bus *metacache.Bus
	// Trace traces every metadata operation (coffer serve with tracing
	// on: tracing.MetaHook; nil: nothing wrapped).
	Trace func(system string) metasql.Trace
	// Observe times every metadata operation (coffer serve: the histogram
	// coffer_meta_op_duration_seconds; nil: nothing).
	Observe metasql.Observe
	// ReadOnlyBlobs opens the local disk for reading only, beside the
	// process that holds it (diskblob.OpenReadOnly: coffer fsck while
	// coffer serve runs); an S3 store opens as always.
	ReadOnlyBlobs bool
}

// Stores are the stores a Config names, as OpenStores opened them.
type Stores struct {
	// Meta is the metadata store by role (zero unless StoreOptions.Meta).
	// Meta.Changes is set when other processes share the store
	// (PostgreSQL): coffer serve listens to it; an admin command only
	// announces its changes.
	Meta meta.Stores
	// Blobs is the blob store (nil unless StoreOptions.Blobs).
	Blobs blob.Store
	// MetaCache is the cache of bucket and object records in front of
	// Meta (nil: --meta-cache off, or no Meta).
	MetaCache *metacache.Store
	// Pool reports the PostgreSQL connection pool (nil: SQLite, or no
	// Meta).
	Pool func() postgres.Stats
	// ReleaseMemory frees what the metadata store caches in memory and
	// can read again (SQLite's page caches); nil when there is nothing to
	// free (PostgreSQL: its memory is the database server's).
	ReleaseMemory func(context.Context) error
	// Snapshot copies the metadata store consistently while it serves
	// (SQLite's; nil for PostgreSQL): coffer backup.
	Snapshot meta.Snapshotter

	closers []func() error
}

// OpenStores opens the stores cfg names, the one way coffer serve and
// every admin command open them: PostgreSQL (--meta, a pool of
// --meta-max-conns waiting at most --meta-wait) or SQLite in the data
// folder; an S3-compatible store (--blob) or the local disk in the data
// folder; the cache of bucket and object records in front of the
// metadata store when --meta-cache is on. The shared stores open first,
// so that a start that cannot reach them makes nothing locally (see New,
// "Starting, and failing to"). If one fails, what opened is closed.
func OpenStores(ctx context.Context, cfg config.Config, o StoreOptions) (_ *Stores, err error) {
	st := &Stores{}
	defer func() {
		if err != nil {
			st.Close()
		}
	}()
	var inner meta.Stores
	if o.Meta && cfg.Meta != "" {
		pg, err := postgres.Open(ctx, cfg.Meta, postgres.Options{MaxConns: cfg.MetaMaxConns, AcquireTimeout: cfg.MetaWait, Trace: o.trace("postgresql"), Observe: o.Observe})
		if err != nil {
			return nil, fmt.Errorf("opening metadata (PostgreSQL): %w", err)
		}
		st.closers = append(st.closers, pg.Close)
		inner, st.Pool = pg.Stores(), pg.Stats
	}
	if o.Blobs && cfg.Blob != "" {
		opts, err := s3blob.ParseURL(cfg.Blob)
		if err == nil {
			st.Blobs, err = s3blob.Open(ctx, opts)
		}
		if err != nil {
			return nil, fmt.Errorf("opening blob store: %w", err)
		}
		st.close(st.Blobs)
	}
	local := o.Meta && cfg.Meta == "" || o.Blobs && cfg.Blob == ""
	if local && o.PrepareData != nil {
		if err := o.PrepareData(); err != nil {
			return nil, err
		}
	}
	if o.Meta && cfg.Meta == "" {
		m, err := sqlite.Open(ctx, filepath.Join(cfg.Data, "meta.db"), sqlite.Options{Trace: o.trace("sqlite"), Observe: o.Observe})
		if err != nil {
			return nil, fmt.Errorf("opening metadata: %w", err)
		}
		st.closers = append(st.closers, m.Close)
		st.ReleaseMemory = m.ReleaseMemory
		st.Snapshot = m
		inner = m.Stores()
	}
	if o.Blobs && cfg.Blob == "" && o.ReadOnlyBlobs {
		if st.Blobs, err = diskblob.OpenReadOnly(filepath.Join(cfg.Data, "blobs")); err != nil {
			return nil, fmt.Errorf("opening blob store: %w", err)
		}
		st.close(st.Blobs)
	} else if o.Blobs && cfg.Blob == "" {
		if st.Blobs, err = diskblob.OpenWith(filepath.Join(cfg.Data, "blobs"), diskblob.Options{MinFree: cfg.MinFreeSpace}); err != nil {
			return nil, fmt.Errorf("opening blob store: %w", err)
		}
		st.close(st.Blobs)
	}
	if o.Meta && o.Trace != nil {
		// The operations each backend runs itself (metasql.Traced covers
		// the rest, at the statement).
		system := "sqlite"
		if cfg.Meta != "" {
			system = "postgresql"
		}
		inner = tracing.MetaRoles(inner, system)
	}
	st.Meta = inner
	if o.Meta && cfg.MetaCache == "on" {
		// Bucket and object records are cached in this process; every
		// write of one drops it here and, before it returns, in every
		// process listening to the store.
		bus := o.Bus
		if bus == nil {
			bus = metacache.NewBus()
		}
		st.MetaCache = metacache.NewStore(inner, bus, metacache.StoreOptions{
			Buckets: metacache.Options{MaxEntries: 100_000, MaxBytes: cfg.MetaCacheSize / 8, TTL: cfg.MetaCacheTTL},
			Objects: metacache.Options{MaxEntries: 1_000_000, MaxBytes: cfg.MetaCacheSize - cfg.MetaCacheSize/8, TTL: cfg.MetaCacheTTL},
		})
		st.Meta = st.MetaCache.Stores()
	}
	return st, nil
}

// trace is the metadata store's Trace for system (nil: none).
func (o StoreOptions) trace(system string) metasql.Trace {
	if o.Trace == nil {
		return nil
	}
	return o.Trace(system)
}

// close adds b's Close, if it has one, to what Close closes.
func (s *Stores) close(b blob.Store) {
	if c, ok := b.(blob.Closer); ok {
		s.closers = append(s.closers, c.Close)
	}
}

// Close closes what OpenStores opened, the last opened first.
func (s *Stores) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}

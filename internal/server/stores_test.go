package server

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/coffer-storage/coffer/internal/blob/diskblob"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

func TestMain(m *testing.M) { testbackend.Main(m) }

// wantRoles fails unless every role of m is set.
func wantRoles(t *testing.T, m meta.Stores) {
	t.Helper()
	if m.Accounts == nil || m.Sessions == nil || m.Invites == nil || m.AccessKeys == nil || m.Limits == nil ||
		m.Buckets == nil || m.Objects == nil || m.Uploads == nil || m.Stagings == nil || m.Reclamation == nil ||
		m.Shares == nil || m.Tus == nil || m.EncryptionJobs == nil || m.KeyGrants == nil || m.Cluster == nil {
		t.Fatalf("a role is missing: %+v", m)
	}
}

// TestOpenStoresEmbedded: the factory of coffer serve and the admin
// commands opens SQLite and the local disk in the data folder, only what
// it is asked for, after PrepareData; puts the metadata cache in front
// per --meta-cache; and closes what it opened.
func TestOpenStoresEmbedded(t *testing.T) {
	ctx := t.Context()
	cfg := config.Defaults()
	cfg.Data = filepath.Join(t.TempDir(), "data")
	prepared := 0
	prepare := func() error { prepared++; return os.MkdirAll(cfg.Data, 0o700) }

	// The metadata store only: no blobs/ is made.
	st, err := OpenStores(ctx, cfg, StoreOptions{Meta: true, PrepareData: prepare})
	if err != nil {
		t.Fatal(err)
	}
	wantRoles(t, st.Meta)
	if prepared != 1 || st.Blobs != nil || st.Pool != nil || st.Meta.Changes != nil {
		t.Errorf("prepared %d times, blobs %v, a pool %t, changes %v; want once, none, none, none", prepared, st.Blobs, st.Pool != nil, st.Meta.Changes)
	}
	if _, err := os.Stat(filepath.Join(cfg.Data, "blobs")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("opening the metadata store only made blobs/: %v", err)
	}
	if st.MetaCache == nil || st.Meta.Objects != st.MetaCache.Stores().Objects || st.Meta.Buckets != st.MetaCache.Stores().Buckets {
		t.Error("--meta-cache on: the object and bucket records are not the cache's")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Meta.Cluster.Ping(ctx); err == nil {
		t.Error("the metadata store answers after Close")
	}

	// Both, without the cache.
	cfg.MetaCache = "off"
	st, err = OpenStores(ctx, cfg, StoreOptions{Meta: true, Blobs: true, PrepareData: prepare})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.Meta.Objects.(*sqlite.Store); !ok || st.MetaCache != nil {
		t.Errorf("--meta-cache off: the object records are a %T, the cache %v", st.Meta.Objects, st.MetaCache)
	}
	if _, ok := st.Blobs.(*diskblob.Store); !ok {
		t.Errorf("the blob store is a %T, want the local disk", st.Blobs)
	}

	// A data folder refused: nothing is opened or made in it.
	cfg.Data = filepath.Join(t.TempDir(), "refused")
	refused := errors.New("no data folder")
	if _, err := OpenStores(ctx, cfg, StoreOptions{Meta: true, Blobs: true, PrepareData: func() error { return refused }}); !errors.Is(err, refused) {
		t.Fatalf("OpenStores with a refused data folder: %v", err)
	}
	if _, err := os.Stat(cfg.Data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused data folder was made: %v", err)
	}
}

// TestOpenStoresPostgres: on PostgreSQL the factory takes the pool size
// from the configuration (the admin commands ask for a small one that
// way), sets the change listener, and does not touch the data folder.
func TestOpenStoresPostgres(t *testing.T) {
	ctx := t.Context()
	cfg := config.Defaults()
	cfg.Data = filepath.Join(t.TempDir(), "data")
	cfg.Meta = testbackend.SharedPostgres(t).CreateDatabase(t)
	cfg.MetaMaxConns = 3
	st, err := OpenStores(ctx, cfg, StoreOptions{Meta: true, PrepareData: func() error {
		t.Error("PrepareData called for a store that lives outside the data folder")
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	wantRoles(t, st.Meta)
	if st.Pool == nil {
		t.Fatal("no pool")
	}
	if got, want := st.Pool().MaxConns, int32(3); got != want {
		t.Errorf("the pool has %d connections, want %d (--meta-max-conns)", got, want)
	}
	if st.Meta.Changes == nil {
		t.Error("PostgreSQL without a change listener")
	}
	if err := st.Meta.Cluster.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

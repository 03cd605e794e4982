package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/postgres"
	"github.com/coffer-storage/coffer/internal/metacache"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// BenchmarkCachedPut is the latency of one object write through the
// metadata cache when three nodes listen on one database (the scale-out
// shape): the announcements, the waits for the other nodes, and the
// write itself.
func BenchmarkCachedPut(b *testing.B) {
	db := testbackend.SharedPostgres(b).CreateDatabase(b)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	var ms []meta.Stores
	for range 3 {
		s := open(b, db, postgres.Options{})
		bus := metacache.NewBus()
		bus.SetListening(false)
		ms = append(ms, metacache.NewStore(s.Stores(), bus, metacache.StoreOptions{}).Stores())
		wg.Go(func() { s.ListenChanges(ctx, bus.Handler(nil)) })
		for !bus.Listening() {
			time.Sleep(10 * time.Millisecond)
		}
	}
	m := ms[0]
	if err := m.Accounts.CreateUser(ctx, meta.User{ID: "bob", Email: "bob@example.com", PasswordHash: "x"}, meta.Bucket{Name: "bob", OwnerID: "bob"}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := m.Objects.PutObjects(ctx, []meta.Put{{Object: meta.Object{Bucket: "bob", Key: "k", BlobKey: "v", ModTime: time.Now()}}}); err != nil {
			b.Fatal(err)
		}
	}
}

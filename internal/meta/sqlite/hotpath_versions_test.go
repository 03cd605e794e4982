package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
)

// The hot paths (hotpath_test.go) in a versioned bucket whose every key
// has 4 versions, and overwrites adding versions.

func versionedHotStore(b *testing.B) *Store {
	b.Helper()
	s := hotStore(b, func(s *Store) {
		if err := s.SetBucketVersioning(context.Background(), "alice", meta.VersioningEnabled); err != nil {
			b.Fatal(err)
		}
	})
	data := make([]byte, 4096)
	for range 3 {
		for i := range hotKeys {
			o := meta.Object{Bucket: "alice", Key: fmt.Sprintf("dir/k%05d", i), Size: 4096, ETag: "etag", Inline: data}
			if _, err := s.PutObjects(context.Background(), []meta.Put{{Object: o}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return s
}

func BenchmarkHotVersionedGetObject(b *testing.B)   { hotGet(b, versionedHotStore(b)) }
func BenchmarkHotVersionedListObjects(b *testing.B) { hotList(b, versionedHotStore(b)) }
func BenchmarkHotVersionedPut(b *testing.B)         { hotPut(b, versionedHotStore(b)) }

func BenchmarkHotVersionedListVersions(b *testing.B) {
	s := versionedHotStore(b)
	b.ResetTimer()
	for range b.N {
		p, err := s.ListObjectVersions(context.Background(), "alice", meta.VersionListOptions{Prefix: "dir/", Limit: 1000})
		if err != nil || len(p.Versions) != 1000 {
			b.Fatalf("%d versions, %v", len(p.Versions), err)
		}
	}
}

// BenchmarkTrashListing: a page of the deleted files (ListObjects with
// DeleteMarkers) of a versioned bucket of 100,000 files of which 10 are
// deleted, spread over the key range: the scan reads every latest row
// to find them.
func BenchmarkTrashListing(b *testing.B) {
	s, _ := setup(b, Options{})
	ctx := context.Background()
	if err := s.SetBucketVersioning(ctx, "alice", meta.VersioningEnabled); err != nil {
		b.Fatal(err)
	}
	const n = 100_000
	puts := make([]meta.Put, 0, 500)
	for i := range n {
		o := meta.Object{Bucket: "alice", Key: fmt.Sprintf("dir/k%06d", i), Size: 1, ETag: "etag", Inline: []byte{1}}
		if puts = append(puts, meta.Put{Object: o}); len(puts) == cap(puts) {
			if _, err := s.PutObjects(ctx, puts); err != nil {
				b.Fatal(err)
			}
			puts = puts[:0]
		}
	}
	for i := range 10 {
		if _, err := s.DeleteObject(ctx, "alice", fmt.Sprintf("dir/k%06d", i*n/10+7), meta.Cond{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		p, err := s.ListObjects(ctx, "alice", meta.ListOptions{DeleteMarkers: true, Limit: 1000})
		if err != nil || len(p.Objects) != 10 {
			b.Fatalf("%d deleted, %v", len(p.Objects), err)
		}
	}
}

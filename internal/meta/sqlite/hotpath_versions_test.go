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

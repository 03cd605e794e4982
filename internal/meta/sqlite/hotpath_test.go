package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
)

// The hot paths of the object rows, for a comparison before and after a
// change of their schema (docs/PERFORMANCE.md, "Versions"): a GET's
// lookup by key, a page of ListObjectsV2, and an overwrite of a small
// inline object, each over 1,000 keys.

const hotKeys = 1000

// hotStore is a store with hotKeys inline objects of 4 KiB in alice's
// bucket, set up with prepare (which may change the bucket) first.
func hotStore(b *testing.B, prepare func(*Store)) *Store {
	b.Helper()
	s, _ := setup(b, Options{})
	if prepare != nil {
		prepare(s)
	}
	data := make([]byte, 4096)
	puts := make([]meta.Put, 0, 100)
	for i := range hotKeys {
		o := meta.Object{Bucket: "alice", Key: fmt.Sprintf("dir/k%05d", i), Size: 4096, ETag: "etag", Inline: data}
		if puts = append(puts, meta.Put{Object: o}); len(puts) == cap(puts) {
			if _, err := s.PutObjects(context.Background(), puts); err != nil {
				b.Fatal(err)
			}
			puts = puts[:0]
		}
	}
	return s
}

func BenchmarkHotGetObject(b *testing.B)   { hotGet(b, hotStore(b, nil)) }
func BenchmarkHotListObjects(b *testing.B) { hotList(b, hotStore(b, nil)) }
func BenchmarkHotOverwrite(b *testing.B)   { hotPut(b, hotStore(b, nil)) }

// hotGet reads random keys of s, in parallel.
func hotGet(b *testing.B, s *Store) {
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.GetObject(context.Background(), "alice", fmt.Sprintf("dir/k%05d", rand.IntN(hotKeys))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// hotList lists every key of s in a page.
func hotList(b *testing.B, s *Store) {
	b.ResetTimer()
	for range b.N {
		p, err := s.ListObjects(context.Background(), "alice", meta.ListOptions{Prefix: "dir/", Limit: 1000})
		if err != nil || len(p.Objects) != hotKeys {
			b.Fatalf("%d objects, %v", len(p.Objects), err)
		}
	}
}

// hotPut writes the keys of s round robin, from 8 × GOMAXPROCS writers.
func hotPut(b *testing.B, s *Store) {
	data := make([]byte, 4096)
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			o := meta.Object{Bucket: "alice", Key: fmt.Sprintf("dir/k%05d", n.Add(1)%hotKeys), Size: 4096, ETag: "etag", Inline: data}
			if _, err := s.PutObjects(context.Background(), []meta.Put{{Object: o}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkListMultipartPage: a page of 100 multipart objects of one part
// each (the file API's default page, of files a direct upload made), with
// their parts read and without them (meta.ListOptions.NoParts, as the
// file API and S3 listings ask since issue 23's third pass).
func BenchmarkListMultipartPage(b *testing.B) {
	s, _ := setup(b, Options{})
	puts := make([]meta.Put, 0, 100)
	for i := range 100 {
		o := meta.Object{Bucket: "alice", Key: fmt.Sprintf("dir/k%05d", i), Size: 1 << 20, ETag: "etag-1",
			Parts: []meta.ObjectPart{{BlobKey: fmt.Sprintf("o/p%05d", i), Size: 1 << 20, ETag: "0123456789abcdef01234567"}}}
		puts = append(puts, meta.Put{Object: o})
	}
	if _, err := s.PutObjects(context.Background(), puts); err != nil {
		b.Fatal(err)
	}
	for _, noParts := range []bool{false, true} {
		b.Run(fmt.Sprintf("noparts=%v", noParts), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				p, err := s.ListObjects(context.Background(), "alice", meta.ListOptions{Prefix: "dir/", Limit: 100, NoParts: noParts})
				if err != nil || len(p.Objects) != 100 || (p.Objects[0].Parts == nil) != noParts {
					b.Fatalf("%d objects, %v", len(p.Objects), err)
				}
			}
		})
	}
}

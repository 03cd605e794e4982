package metatest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// The ListObjectVersions measurement of docs/PERFORMANCE.md ("Versioning
// (issue 20)"), the same on every backend: a bucket holding keys × perKey
// versions, and the latency of pages of 1,000 at the start, the middle
// and the end of the key space, in the middle of a key's versions, under
// a prefix, and rolled up by a delimiter. Each backend calls it from a
// benchmark of its own (BenchmarkListVersionPages).

// VersionBenchKeys is the number of keys of the measurement:
// COFFER_VERSIONS_BENCH_KEYS (100,000 for 1 M versions), default 2,000.
func VersionBenchKeys(b *testing.B) int {
	return benchKeys(b, "COFFER_VERSIONS_BENCH_KEYS", 2000, 1000)
}

// benchKeys is the number in the environment variable env, def if it is
// unset; a number below least fails b.
func benchKeys(b *testing.B, env string, def, least int) int {
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		b.Fatalf("%s=%q: a number ≥ %d", env, v, least)
	}
	return n
}

// VersionPageKey is the name of key i of the measurement: 100 folders of
// keys/100 keys each ("d042/k0042123").
func VersionPageKey(i int) string { return fmt.Sprintf("d%03d/k%07d", i/1000, i) }

// FillVersions makes bucket (an existing, empty bucket) hold keys ×
// perKey versions of 1,000 bytes each (versioning Enabled: perKey
// rounds over every key, in PutObjects batches of 1,000), unless it holds
// them already (a store kept from an earlier run). logf reports progress.
func FillVersions(ctx context.Context, s meta.Stores, bucket string, keys, perKey int, logf func(string, ...any)) error {
	b, err := s.Buckets.GetBucket(ctx, bucket)
	if err != nil {
		return err
	}
	if b.Objects == int64(keys*perKey) {
		logf("bucket %s holds %d versions already", bucket, b.Objects)
		return nil
	}
	if b.Objects != 0 {
		return fmt.Errorf("bucket %s holds %d versions, neither 0 nor %d", bucket, b.Objects, keys*perKey)
	}
	if err := s.Buckets.SetBucketVersioning(ctx, bucket, meta.VersioningEnabled); err != nil {
		return err
	}
	start := time.Now()
	puts := make([]meta.Put, 0, 1000)
	n := 0
	for round := range perKey {
		for i := range keys {
			o := meta.Object{Bucket: bucket, Key: VersionPageKey(i), Size: 1000, ETag: "0123456789abcdef0123456789abcdef",
				BlobKey: fmt.Sprintf("blob/%d/%d", i, round), ContentType: "application/octet-stream"}
			puts = append(puts, meta.Put{Object: o})
			if len(puts) == cap(puts) || i == keys-1 {
				if _, err := s.Objects.PutObjects(ctx, puts); err != nil {
					return err
				}
				n += len(puts)
				puts = puts[:0]
				if n%100_000 == 0 {
					logf("%d versions written in %v", n, time.Since(start).Round(time.Second))
				}
			}
		}
	}
	logf("filled: %d versions in %v", n, time.Since(start).Round(time.Second))
	return nil
}

// BenchVersionPages measures ListObjectVersions on a bucket FillVersions
// filled: a sub-benchmark per place, each reporting the p50, p95 and p99
// of its pages (run with -benchtime=Nx for N pages a place).
func BenchVersionPages(b *testing.B, s meta.Objects, bucket string, keys, perKey int) {
	ctx := context.Background()
	// A version in the middle of the middle key's versions.
	mid := VersionPageKey(keys / 2)
	p, err := s.ListObjectVersions(ctx, bucket, meta.VersionListOptions{Prefix: mid, Limit: perKey})
	if err != nil || len(p.Versions) != perKey {
		b.Fatalf("versions of %s: %d, %v", mid, len(p.Versions), err)
	}
	midVersion := p.Versions[perKey/2].VersionID
	perPage := 1000
	places := []struct {
		name string
		opts meta.VersionListOptions
		want int // entries a page holds
	}{
		{"start", meta.VersionListOptions{}, perPage},
		{"middle", meta.VersionListOptions{KeyMarker: mid}, perPage},
		{"middle-version", meta.VersionListOptions{KeyMarker: mid, VersionIDMarker: midVersion}, perPage},
		{"end", meta.VersionListOptions{KeyMarker: VersionPageKey(keys - perPage/perKey - 1)}, perPage},
		{"prefix", meta.VersionListOptions{Prefix: VersionPageKey(keys / 2)[:5]}, min(perPage, perKey*min(1000, keys))},
		{"delimiter", meta.VersionListOptions{Delimiter: "/"}, (keys + 999) / 1000},
	}
	for _, pl := range places {
		pl.opts.Limit = perPage
		b.Run(pl.name, func(b *testing.B) {
			var d []time.Duration
			for b.Loop() {
				t0 := time.Now()
				p, err := s.ListObjectVersions(ctx, bucket, pl.opts)
				d = append(d, time.Since(t0))
				if err != nil || len(p.Versions)+len(p.CommonPrefixes) != pl.want {
					b.Fatalf("%+v: %d versions, %d prefixes, %v; want %d", pl.opts, len(p.Versions), len(p.CommonPrefixes), err, pl.want)
				}
			}
			ReportQuantiles(b, d)
		})
	}
}

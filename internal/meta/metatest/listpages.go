package metatest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// The ListObjects measurement of docs/PERFORMANCE.md ("Issue 23: listing
// and soak"), the same on every backend: a bucket of keys objects in 100
// folders, and the latency of pages of 1,000 under a folder (its start,
// its middle, with a delimiter) and of the folders at the root (rolled up
// by a delimiter). Each backend calls it from a benchmark of its own
// (BenchmarkListPages), filling the bucket with FillList and a bulk copy
// of its own (BulkCopySQL): 1 M objects through PutObjects would take
// minutes on SQLite and a quarter of an hour on PostgreSQL.

// ListBenchKeys is the number of objects of the measurement:
// COFFER_LIST_BENCH_KEYS (1000000 for docs/PERFORMANCE.md), default
// 100,000 (folders of 1,000: full pages).
func ListBenchKeys(b *testing.B) int {
	n := benchKeys(b, "COFFER_LIST_BENCH_KEYS", 100_000, 10_000)
	if n%100 != 0 {
		b.Fatalf("COFFER_LIST_BENCH_KEYS=%d: a multiple of 100", n)
	}
	return n
}

// ListPageKey is object i of keys: 100 folders of keys/100 objects each
// ("d042/k0420123" with 1 M).
func ListPageKey(i, keys int) string { return fmt.Sprintf("d%03d/k%07d", i/(keys/100), i) }

// listRealEvery: one object in listRealEvery is written through
// PutObjects (with metadata, a checksum, a multipart one in ten of
// them); the bulk copy makes the others.
const listRealEvery = 1000

// BulkCopy inserts a copy of the objects row of bucket/template for every
// i in [0, keys) with i % every != 0, keyed ListPageKey(i, keys), with a
// blob key of its own. Each backend implements it with BulkCopySQL.
type BulkCopy func(ctx context.Context, bucket, template string, keys, every int) error

// BulkCopySQL is the statement of a BulkCopy on a table with columns
// cols: the rows come from a series ph(1) numbers long (series is the
// dialect's FROM clause of it, each number named i), keyed by keyExpr and
// blob-keyed by blobExpr, copying every other column of the template row
// (bucket ph(2), key ph(3)).
func BulkCopySQL(cols []string, series, keyExpr, blobExpr string, ph func(int) string, every int) string {
	sel := make([]string, len(cols))
	for i, c := range cols {
		switch c {
		case "key":
			sel[i] = keyExpr
		case "blob_key":
			sel[i] = blobExpr
		default:
			sel[i] = "t." + c
		}
	}
	return "INSERT INTO objects (" + strings.Join(cols, ", ") + ") SELECT " + strings.Join(sel, ", ") +
		" FROM " + series + " CROSS JOIN objects t WHERE t.bucket = " + ph(2) + " AND t.key = " + ph(3) +
		fmt.Sprintf(" AND i %% %d <> 0 ORDER BY i", every)
}

// FillList makes bucket (an existing, empty bucket, never versioned)
// hold keys objects of 1,000 bytes, unless it holds them already (a
// store kept from an earlier run): every listRealEvery-th through
// PutObjects, the rest by bulk. logf reports progress.
func FillList(ctx context.Context, s meta.Stores, bucket string, keys int, bulk BulkCopy, logf func(string, ...any)) error {
	b, err := s.Buckets.GetBucket(ctx, bucket)
	if err != nil {
		return err
	}
	if b.Objects == int64(keys) {
		logf("bucket %s holds %d objects already", bucket, b.Objects)
		return nil
	}
	if b.Objects != 0 {
		return fmt.Errorf("bucket %s holds %d objects, neither 0 nor %d", bucket, b.Objects, keys)
	}
	start := time.Now()
	var puts []meta.Put
	for i := 0; i < keys; i += listRealEvery {
		o := meta.Object{Bucket: bucket, Key: ListPageKey(i, keys), Size: 1000, ETag: "0123456789abcdef0123456789abcdef",
			SHA256:  "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			BlobKey: fmt.Sprintf("blob/real/%d", i), ContentType: "text/plain", ModTime: time.Now(),
			Metadata: map[string]string{"owner": "bench", "n": strconv.Itoa(i)},
			Checksum: meta.Checksum{Algorithm: "CRC32C", Type: "FULL_OBJECT", Value: "yZRlqg=="}}
		puts = append(puts, meta.Put{Object: o})
	}
	for len(puts) > 0 {
		n := min(len(puts), 1000)
		if _, err := s.Objects.PutObjects(ctx, puts[:n]); err != nil {
			return err
		}
		puts = puts[n:]
	}
	logf("%d objects written through PutObjects in %v", keys/listRealEvery, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := bulk(ctx, bucket, ListPageKey(0, keys), keys, listRealEvery); err != nil {
		return fmt.Errorf("bulk copy: %w", err)
	}
	if b, err = s.Buckets.GetBucket(ctx, bucket); err != nil {
		return err
	}
	if b.Objects != int64(keys) {
		return fmt.Errorf("bucket %s holds %d objects after the fill, want %d", bucket, b.Objects, keys)
	}
	logf("filled: %d objects by bulk copy in %v", keys-keys/listRealEvery, time.Since(start).Round(time.Millisecond))
	return nil
}

// ListPlace is one page the measurement reads, and how many entries it
// holds.
type ListPlace struct {
	Name string
	Opts meta.ListOptions
	Want int
}

// ListPlaces are the pages of the measurement in a bucket FillList
// filled with keys objects: a folder holds keys/100.
func ListPlaces(keys int) []ListPlace {
	f := keys / 100
	folder := ListPageKey(keys/2, keys)[:5] // "d050/"
	mid := ListPageKey(keys/2+f/2, keys)
	return []ListPlace{
		{"prefix", meta.ListOptions{Prefix: folder, Limit: 1000}, min(1000, f)},
		{"prefix-middle", meta.ListOptions{Prefix: folder, StartAfter: mid, Limit: 1000}, min(1000, f-f/2-1)},
		{"prefix-delimiter", meta.ListOptions{Prefix: folder, Delimiter: "/", Limit: 1000}, min(1000, f)},
		{"root-delimiter", meta.ListOptions{Delimiter: "/", Limit: 1000}, 100},
	}
}

// BenchListPages measures ListObjects on a bucket FillList filled: a
// sub-benchmark per place, each reporting the p50, p95 and p99 of its
// pages (run with -benchtime=Nx for N pages a place).
func BenchListPages(b *testing.B, s meta.Objects, bucket string, keys int) {
	ctx := context.Background()
	for _, pl := range ListPlaces(keys) {
		b.Run(pl.Name, func(b *testing.B) {
			b.ReportAllocs()
			var d []time.Duration
			cpu0 := processCPU()
			for b.Loop() {
				t0 := time.Now()
				p, err := s.ListObjects(ctx, bucket, pl.Opts)
				d = append(d, time.Since(t0))
				if err != nil || len(p.Objects)+len(p.CommonPrefixes) != pl.Want {
					b.Fatalf("%+v: %d objects, %d prefixes, %v; want %d", pl.Opts, len(p.Objects), len(p.CommonPrefixes), err, pl.Want)
				}
			}
			// The CPU of this process (SQLite runs in it; PostgreSQL's
			// server does not) a page: steadier than latency on a busy
			// machine.
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/1000/float64(len(d)), "cpu-ms/page")
			ReportQuantiles(b, d)
		})
	}
}

// processCPU is the user and system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportQuantiles reports the p50, p95 and p99 of d in milliseconds.
func ReportQuantiles(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	q := func(f float64) float64 {
		return float64(d[min(len(d)-1, int(f*float64(len(d))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.95), "p95-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

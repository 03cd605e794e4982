package httpapi

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/blob/memblob"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
	"github.com/coffer-storage/coffer/internal/object"
)

func TestZipName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a.txt", "a.txt"},
		{"dir/a.txt", "dir/a.txt"},
		{"/abs/a.txt", "abs/a.txt"},
		{"../../etc/passwd", "etc/passwd"},
		{"a/./b/../c", "a/b/c"},
		{"a//b", "a/b"},
		{`..\..\win.ini`, ".._.._win.ini"},
		{"..", ""},
		{"/", ""},
		{"%2e%2e/x", "%2e%2e/x"},
	} {
		if got := zipName(tc.in); got != tc.want {
			t.Errorf("zipName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzZipName(f *testing.F) {
	for _, s := range []string{"a", "../a", "a/../../b", `\..\`, "//", "./.", "a/b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := zipName(s)
		if strings.HasPrefix(n, "/") || strings.Contains(n, `\`) {
			t.Fatalf("zipName(%q) = %q: absolute or backslashed", s, n)
		}
		for seg := range strings.SplitSeq(n, "/") {
			if n != "" && (seg == "" || seg == "." || seg == "..") {
				t.Fatalf("zipName(%q) = %q: segment %q", s, n, seg)
			}
		}
	})
}

func TestZipPlanLimitsAndNames(t *testing.T) {
	p := newZipPlan(zipLimits{Entries: 3, Bytes: 100})
	o := func(key string, size int64) meta.Object { return meta.Object{Key: key, Size: size} }
	for _, tc := range []struct {
		key, name string
	}{{"a/x.txt", "x.txt"}, {"b/x.txt", "x.txt"}, {"a/x.txt", "again"}} {
		if err := p.add(o(tc.key, 10), tc.name); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, e := range p.entries {
		names = append(names, e.Name)
	}
	if got, want := strings.Join(names, ","), "x.txt,b/x.txt"; got != want {
		t.Errorf("names %s, want %s (a taken name falls back to the key; a key only once)", got, want)
	}
	if err := p.add(o("c", 81), "c"); !errcode.Is(err, errcode.TooLarge) {
		t.Errorf("over max bytes: %v, want TooLarge", err)
	}
	p = newZipPlan(zipLimits{Entries: 1, Bytes: 100})
	p.add(o("a", 1), "a")
	if err := p.add(o("b", 1), "b"); !errcode.Is(err, errcode.TooLarge) {
		t.Errorf("over max entries: %v, want TooLarge", err)
	}
}

// zeros is a generated object: n zero bytes, never stored.
type zeros struct{ n int64 }

func (z *zeros) Read(b []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	m := min(int64(len(b)), z.n)
	clear(b[:m])
	z.n -= m
	return int(m), nil
}
func (z *zeros) Close() error { return nil }

// headTail keeps the first and last bytes written and counts the rest:
// a zip of zeros is zeros between its first header and its data
// descriptor, so head, zeros and tail are the whole archive.
type headTail struct {
	head, tail []byte
	n          int64
	keep       int
}

func (h *headTail) Write(b []byte) (int, error) {
	if len(h.head) < h.keep {
		h.head = append(h.head, b[:min(len(b), h.keep-len(h.head))]...)
	}
	h.tail = append(h.tail, b...)
	if len(h.tail) > 2*h.keep {
		h.tail = append(h.tail[:0], h.tail[len(h.tail)-h.keep:]...)
	}
	h.n += int64(len(b))
	return len(b), nil
}

// ReadAt serves the archive: head, then zeros, then tail.
func (h *headTail) ReadAt(p []byte, off int64) (int, error) {
	tailStart := h.n - int64(len(h.tail))
	for i := range p {
		o := off + int64(i)
		switch {
		case o >= h.n:
			return i, io.EOF
		case o >= tailStart:
			p[i] = h.tail[o-tailStart]
		case o < int64(len(h.head)):
			p[i] = h.head[o]
		default:
			p[i] = 0
		}
	}
	return len(p), nil
}

// TestZip64OverFourGiB streams a generated 4 GiB + 1 MiB object through
// writeZip (nothing stored) and reads the archive back: the entry must
// be Zip64 with its true size and CRC.
func TestZip64OverFourGiB(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 4 GiB twice (write and check): -short skips it")
	}
	const size = 4<<30 + 1<<20
	out := &headTail{keep: 1 << 20}
	entries := []zipEntry{{Name: "small.txt", Key: "small", Size: 5}, {Name: "big.bin", Key: "big", Size: size}}
	open := func(_ context.Context, key string) (io.ReadCloser, error) {
		if key == "small" {
			return io.NopCloser(strings.NewReader("hello")), nil
		}
		return &zeros{n: size}, nil
	}
	if err := writeZip(t.Context(), out, entries, open, false); err != nil {
		t.Fatal(err)
	}
	if out.n < size {
		t.Fatalf("archive of %d bytes, want more than %d", out.n, int64(size))
	}
	// The small entry sits in the head; it must read back before the big one.
	zr, err := zip.NewReader(out, out.n)
	if err != nil {
		t.Fatalf("reading the archive back: %v", err)
	}
	if len(zr.File) != 2 {
		t.Fatalf("%d entries, want 2", len(zr.File))
	}
	big := zr.File[1]
	if big.Name != "big.bin" || big.UncompressedSize64 != size || big.CompressedSize64 != size || big.UncompressedSize != 0xffffffff {
		t.Errorf("big entry: %s %d/%d (32-bit %#x), want Zip64 with %d", big.Name, big.UncompressedSize64, big.CompressedSize64, big.UncompressedSize, int64(size))
	}
	crc := crc32.NewIEEE()
	io.Copy(crc, &zeros{n: size})
	if big.CRC32 != crc.Sum32() {
		t.Errorf("CRC %#x, want %#x", big.CRC32, crc.Sum32())
	}
	// Reading it back checks its CRC and size against the bytes.
	brc, err := big.Open()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, brc); err != nil || n != size {
		t.Errorf("reading the big entry back: %d bytes, %v", n, err)
	}
	rc, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(rc); string(b) != "hello" {
		t.Errorf("small entry = %q", b)
	}
}

// TestZipManyEntries writes more than 65,535 entries: the archive needs
// Zip64's end records, and every entry must read back.
func TestZipManyEntries(t *testing.T) {
	const n = 70_000
	entries := make([]zipEntry, n)
	for i := range entries {
		entries[i] = zipEntry{Name: fmt.Sprintf("d/%05d.txt", i), Key: fmt.Sprint(i), ModTime: time.Unix(0, 0)}
	}
	open := func(_ context.Context, key string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(key)), nil
	}
	var buf bytes.Buffer
	if err := writeZip(t.Context(), &buf, entries, open, false); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(zr.File); got != n {
		t.Fatalf("%d entries, want %d", got, n)
	}
	for _, i := range []int{0, 65_535, 65_536, n - 1} {
		rc, _ := zr.File[i].Open()
		b, _ := io.ReadAll(rc)
		if want := fmt.Sprint(i); string(b) != want || zr.File[i].Name != entries[i].Name {
			t.Errorf("entry %d: %s = %q, want %s", i, zr.File[i].Name, b, want)
		}
	}
}

// TestZipSkipsVanished: an object gone before its entry starts is left
// out and named in _errors.txt; one failing after its entry began makes
// writeZip fail (the caller cuts the connection).
func TestZipSkipsVanished(t *testing.T) {
	entries := []zipEntry{{Name: "a", Key: "a"}, {Name: "gone", Key: "gone"}, {Name: "b", Key: "b"}}
	open := func(_ context.Context, key string) (io.ReadCloser, error) {
		if key == "gone" {
			return nil, errcode.New(errcode.NotFound, "no such key %q", key)
		}
		return io.NopCloser(strings.NewReader("data " + key)), nil
	}
	var buf bytes.Buffer
	if err := writeZip(t.Context(), &buf, entries, open, true); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	if got, want := strings.Join(names, ","), "a,b,_errors.txt"; got != want {
		t.Fatalf("entries %s, want %s", got, want)
	}
	rc, _ := zr.File[2].Open()
	if b, _ := io.ReadAll(rc); !bytes.Contains(b, []byte("gone: no such key")) {
		t.Errorf("_errors.txt = %q", b)
	}

	failing := func(_ context.Context, key string) (io.ReadCloser, error) {
		return io.NopCloser(io.MultiReader(strings.NewReader("part"), errReader{})), nil
	}
	if err := writeZip(t.Context(), io.Discard, entries, failing, false); err == nil {
		t.Error("an object failing mid-entry: writeZip succeeded, want an error")
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errcode.New(errcode.Unavailable, "disk gone") }

// TestZipMemoryBounded streams 256 MiB through writeZip (Store and
// Deflate) and checks that the heap does not grow with it.
func TestZipMemoryBounded(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprint("compress=", compress), func(t *testing.T) {
			const size = 256 << 20
			entries := []zipEntry{{Name: "a.bin", Key: "a", Size: size}, {Name: "b.bin", Key: "b", Size: size / 4}}
			open := func(_ context.Context, key string) (io.ReadCloser, error) {
				if key == "a" {
					return &zeros{n: size}, nil
				}
				return &zeros{n: size / 4}, nil
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			peak := uint64(0)
			w := &peakWriter{every: 64, peak: &peak}
			if err := writeZip(t.Context(), w, entries, open, compress); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			t.Logf("peak heap in use %d KiB while streaming %d MiB", peak>>10, (size+size/4)>>20)
			if peak > before.HeapInuse+16<<20 {
				t.Errorf("heap in use peaked at %d MiB (before: %d MiB): not bounded", peak>>20, before.HeapInuse>>20)
			}
		})
	}
}

// peakWriter discards, sampling the heap every so many writes.
type peakWriter struct {
	n, every int
	peak     *uint64
}

func (p *peakWriter) Write(b []byte) (int, error) {
	if p.n++; p.n%p.every == 0 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		*p.peak = max(*p.peak, m.HeapInuse)
	}
	return len(b), nil
}

// BenchmarkZipStore measures writeZip's throughput (Store) over a
// generated 64 MiB object.
func BenchmarkZipStore(b *testing.B) {
	const size = 64 << 20
	entries := []zipEntry{{Name: "a.bin", Key: "a", Size: size}}
	open := func(context.Context, string) (io.ReadCloser, error) { return &zeros{n: size}, nil }
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if err := writeZip(context.Background(), io.Discard, entries, open, false); err != nil {
			b.Fatal(err)
		}
	}
}

// countingStore counts the listing work done on a metadata store's
// objects: List calls, the object rows they return, and single-object
// lookups.
type countingStore struct {
	meta.Objects
	lists, rows, lookups atomic.Int64
}

func (c *countingStore) ListObjects(ctx context.Context, bucket string, opts meta.ListOptions) (meta.ListPage, error) {
	page, err := c.Objects.ListObjects(ctx, bucket, opts)
	c.lists.Add(1)
	c.rows.Add(int64(len(page.Objects)))
	return page, err
}

func (c *countingStore) GetObject(ctx context.Context, bucket, key string) (meta.Object, error) {
	c.lookups.Add(1)
	return c.Objects.GetObject(ctx, bucket, key)
}

// zipEnv is the file API over SQLite and memory blobs, with user alice
// owning bucket "alice-bucket" holding n small objects d/NN/fNNNN.
func zipEnv(t *testing.T, n int, cfg Config) (*API, *countingStore) {
	t.Helper()
	ctx := context.Background()
	m, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	now := time.Now().UTC()
	if err := m.CreateUser(ctx, meta.User{ID: "alice", Email: "alice@x.io", CreatedAt: now},
		meta.Bucket{Name: "alice-bucket", OwnerID: "alice", Visibility: meta.Private, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Objects: m}
	st := object.StoresOf(m.Stores())
	st.Objects = cs
	svc := object.New(st, memblob.New(), object.ConfigFrom(config.Defaults()), nil)
	var g errgroup.Group
	g.SetLimit(8) // concurrent commits share SQLite's group commit
	for i := range n {
		g.Go(func() error {
			_, err := svc.Put(ctx, object.Actor{UserID: "alice"}, object.PutInput{Bucket: "alice-bucket",
				Key: fmt.Sprintf("d/%02d/f%04d", i%20, i), Body: strings.NewReader("x"), Size: 1})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return New(Services{Buckets: svc, Files: svc, Shares: svc}, cfg, nil), cs
}

// zipRequest calls the zip route's handler for alice with body.
func zipRequest(api *API, body string) (response, error) {
	r := httptest.NewRequest("POST", "/api/v1/buckets/alice-bucket/zip", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.SetPathValue("bucket", "alice-bucket")
	return api.files.zipFiles(r, auth.Principal{UserID: "alice"})
}

// TestZipPlanningIsBounded: the request shape — 200 duplicate
// and overlapping prefixes (and keys inside them) over a bucket of small
// objects — is planned with each object listed once: the listing work is
// that of the bucket, not 200 times it, and keys a prefix covers are not
// looked up.
func TestZipPlanningIsBounded(t *testing.T) {
	const n = 2000
	api, cs := zipEnv(t, n, testConfig(nil))
	var prefixes, keys []string
	for i := range 200 {
		switch i % 4 {
		case 0:
			prefixes = append(prefixes, "")
		case 1:
			prefixes = append(prefixes, "d/")
		case 2:
			prefixes = append(prefixes, fmt.Sprintf("d/%02d/", i%20))
		case 3:
			prefixes = append(prefixes, "d/0")
		}
		keys = append(keys, fmt.Sprintf("d/%02d/f%04d", i%20, i))
	}
	body, _ := json.Marshal(map[string]any{"prefixes": prefixes, "keys": keys})
	cs.lists.Store(0)
	cs.rows.Store(0)
	cs.lookups.Store(0)
	resp, err := zipRequest(api, string(body))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(resp.(*zipResponse).entries), n; got != want {
		t.Errorf("entries %d, want %d", got, want)
	}
	if got, max := cs.rows.Load(), int64(n); got > max {
		t.Errorf("planning read %d object rows for %d objects, want at most %d", got, n, max)
	}
	if got, max := cs.lists.Load(), int64(n/1000+1); got > max {
		t.Errorf("planning made %d List calls, want at most %d", got, max)
	}
	if got := cs.lookups.Load(); got != 0 {
		t.Errorf("planning looked up %d keys that a prefix covers, want 0", got)
	}
}

// TestZipPlanningRefusals: more than maxZipPrefixes prefixes that cover
// nothing of each other, more distinct keys than the entry limit, and a
// planning past ZipPlanTimeout are each a too_large problem, before any
// byte and, for the first two, before any lookup.
func TestZipPlanningRefusals(t *testing.T) {
	api, cs := zipEnv(t, 10, testConfig(func(c *Config) { c.MaxZipEntries = 50 }))
	reason := func(err error) string {
		if e := errcode.As(err); e != nil && e.Code == errcode.TooLarge {
			r, _ := e.Detail["reason"].(string)
			return r
		}
		return fmt.Sprint("not too_large: ", err)
	}
	var prefixes []string
	for i := range maxZipPrefixes + 1 {
		prefixes = append(prefixes, fmt.Sprintf("p%05d/", i))
	}
	body, _ := json.Marshal(map[string]any{"prefixes": append(prefixes, prefixes...)})
	cs.lists.Store(0)
	if _, err := zipRequest(api, string(body)); reason(err) != "zip_too_large" || errcode.As(err).Detail["max_prefixes"] != maxZipPrefixes {
		t.Errorf("%d distinct prefixes: %v", len(prefixes), err)
	}
	// Covered ones do not count: "" covers them all.
	body, _ = json.Marshal(map[string]any{"prefixes": append(prefixes, "")})
	if resp, err := zipRequest(api, string(body)); err != nil || len(resp.(*zipResponse).entries) != 10 {
		t.Errorf(`%d prefixes and "": %v`, len(prefixes), err)
	}
	var keys []string
	for i := range 51 {
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	cs.lookups.Store(0)
	body, _ = json.Marshal(map[string]any{"keys": keys})
	if _, err := zipRequest(api, string(body)); reason(err) != "zip_too_large" || cs.lookups.Load() != 0 {
		t.Errorf("51 keys over a 50-entry limit: %v after %d lookups", err, cs.lookups.Load())
	}
	// The same key many times is one key.
	body, _ = json.Marshal(map[string]any{"keys": slices.Repeat([]string{"d/00/f0000"}, 500)})
	if resp, err := zipRequest(api, string(body)); err != nil || len(resp.(*zipResponse).entries) != 1 || cs.lookups.Load() != 1 {
		t.Errorf("one key 500 times: %v, %d lookups", err, cs.lookups.Load())
	}
	// A planning deadline that has passed before the first listing.
	late := New(Services{Buckets: api.buckets.buckets, Files: api.files.files}, testConfig(func(c *Config) { c.ZipPlanTimeout = time.Nanosecond }), nil)
	if _, err := zipRequest(late, `{"prefixes": [""]}`); reason(err) != "zip_too_large" || errcode.As(err).Detail["plan_timeout_seconds"] == nil {
		t.Errorf("planning past its deadline: %v", err)
	}
}

func TestCoverPrefixes(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"a/", "a/", "a/b/", "ab", "a"}, []string{"a"}},
		{[]string{"b/", "a/c/", "a/b/", "a/b/x"}, []string{"a/b/", "a/c/", "b/"}},
		{[]string{"x", "", "y"}, []string{""}},
		{[]string{"a/", "a.", "a0"}, []string{"a.", "a/", "a0"}},
	} {
		got := coverPrefixes(tc.in)
		if !slices.Equal(got, tc.want) {
			t.Errorf("coverPrefixes(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	sorted := []string{"a.", "a/", "b/x"}
	for key, want := range map[string]bool{"a/1": true, "a.": true, "a": false, "a0": false, "b/": false, "b/xy": true, "c": false} {
		if got := covered(sorted, key); got != want {
			t.Errorf("covered(%q) = %v, want %v", key, got, want)
		}
	}
	if got, want := uncoveredKeys([]string{"z", "a/1", "z", "b/x", "q"}, sorted), []string{"z", "q"}; !slices.Equal(got, want) {
		t.Errorf("uncoveredKeys = %q, want %q", got, want)
	}
}

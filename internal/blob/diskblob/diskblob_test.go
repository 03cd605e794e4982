package diskblob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/blobtest"
	"github.com/coffer-storage/coffer/internal/blob/diskblob"
	"github.com/coffer-storage/coffer/internal/errcode"
)

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return open(t, t.TempDir()) })
}

func TestLargeStreamed(t *testing.T) {
	if testing.Short() {
		t.Skip("256 MiB object skipped in -short mode")
	}
	blobtest.RunLarge(t, open(t, t.TempDir()))
}

func open(t testing.TB, dir string) *diskblob.Store {
	t.Helper()
	s, err := diskblob.Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func put(t testing.TB, s blob.Store, key string, data []byte) {
	t.Helper()
	if _, err := s.Put(context.Background(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func randBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestLayout(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	put(t, s, "a", []byte("file a"))
	put(t, s, "a/b.c", []byte("file a/b.c"))
	for name, want := range map[string]string{
		"blobs/a.blob":       "file a",
		"blobs/a/b%2Ec.blob": "file a/b.c",
	} {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("reading %s: %v", name, err)
		} else if string(got) != want {
			t.Errorf("%s holds %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"blobs", "tmp", "blobs/a"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fi.Mode().Perm(), os.FileMode(0o700); got != want {
			t.Errorf("%s has mode %v, want %v", name, got, want)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "blobs", "a.blob"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Mode().Perm(), os.FileMode(0o600); got != want {
		t.Errorf("a.blob has mode %v, want %v", got, want)
	}
}

func TestReopenKeepsBlobs(t *testing.T) {
	dir := t.TempDir()
	s, err := diskblob.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "x/y", []byte("kept"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	s = open(t, dir)
	rc, err := s.Get(t.Context(), "x/y", 0, -1)
	if err != nil {
		t.Fatalf("Get after reopen: %v", err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); string(got) != "kept" {
		t.Errorf("Get after reopen = %q, want %q", got, "kept")
	}
}

func TestOpenTwiceFails(t *testing.T) {
	dir := t.TempDir()
	s1, err := diskblob.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := diskblob.Open(dir)
	if err == nil {
		s2.Close()
		s1.Close()
		t.Fatal("second Open of the same directory succeeded")
	}
	if !errors.Is(err, diskblob.ErrLocked) {
		t.Errorf("second Open: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("second Open: %q does not name the directory %s", err, dir)
	}
	// The failed Open must not have disturbed the first store.
	put(t, s1, "still", []byte("works"))
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, dir) // the lock is released by Close
}

func TestOpenRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	s, err := diskblob.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "k", []byte("blob"))
	s.Close()

	tmp := filepath.Join(dir, "tmp")
	for _, name := range []string{"ABCDEF", "other"} {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte("half a blob"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(tmp, "sub", "deeper"), 0o700); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	if names := readDirNames(t, tmp); len(names) != 0 {
		t.Errorf("after Open, tmp/ holds %q, want nothing", names)
	}
	if got, err := s.Stat(t.Context(), "k"); err != nil || got.Size != 4 {
		t.Errorf("Stat(k) after reopen = %+v, %v; want size 4", got, err)
	}
}

func readDirNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// cancelReader yields data and calls cancel once it has yielded at bytes.
type cancelReader struct {
	data   []byte
	pos    int
	at     int
	cancel func()
}

func (r *cancelReader) Read(p []byte) (int, error) {
	if r.pos >= r.at {
		r.cancel()
	}
	if r.pos >= len(r.data) {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 64<<10)], r.data[r.pos:])
	r.pos += n
	return n, nil
}

func TestFailedPutLeavesNoTempFile(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	tmp := filepath.Join(dir, "tmp")
	data := randBytes(2<<20, 1)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := &cancelReader{data: data, at: 700 << 10, cancel: cancel}
	if _, err := s.Put(ctx, "cancelled", r, int64(len(data))); err == nil {
		t.Fatal("Put cancelled mid-way succeeded")
	}
	if r.pos >= len(data) {
		t.Errorf("Put read all %d bytes despite the cancel at %d", r.pos, r.at)
	}
	if names := readDirNames(t, tmp); len(names) != 0 {
		t.Errorf("after a cancelled Put, tmp/ holds %q", names)
	}

	fails := []struct {
		name string
		r    io.Reader
		size int64
	}{
		{"short", bytes.NewReader(data), int64(len(data)) + 1},
		{"long", bytes.NewReader(data), int64(len(data)) - 1},
		{"reader-error", io.MultiReader(bytes.NewReader(data), errReader{}), -1},
	}
	for _, f := range fails {
		if _, err := s.Put(t.Context(), f.name, f.r, f.size); err == nil {
			t.Errorf("Put %s succeeded", f.name)
		}
		if names := readDirNames(t, tmp); len(names) != 0 {
			t.Errorf("after a failed Put (%s), tmp/ holds %q", f.name, names)
		}
	}
	if names := readDirNames(t, filepath.Join(dir, "blobs")); len(names) != 0 {
		t.Errorf("after failed Puts, blobs/ holds %q", names)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestSymlinksCannotEscape(t *testing.T) {
	outside := t.TempDir()
	secret := []byte("secret outside the store")
	if err := os.WriteFile(filepath.Join(outside, "secret.blob"), secret, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := open(t, dir)
	blobs := filepath.Join(dir, "blobs")
	relOutside, err := filepath.Rel(blobs, outside)
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"abs.blob": filepath.Join(outside, "secret.blob"),
		"rel.blob": filepath.Join(relOutside, "secret.blob"),
		"absdir":   outside,
		"reldir":   relOutside,
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(blobs, name)); err != nil {
			t.Fatal(err)
		}
	}
	put(t, s, "inside", []byte("in"))
	ctx := t.Context()

	for _, key := range []string{"abs", "rel", "absdir/secret", "reldir/secret"} {
		if rc, err := s.Get(ctx, key, 0, -1); err == nil {
			got, _ := io.ReadAll(rc)
			rc.Close()
			t.Errorf("Get(%q) through a symlink out of the store succeeded: %q", key, got)
		}
		if info, err := s.Stat(ctx, key); err == nil {
			t.Errorf("Stat(%q) through a symlink out of the store succeeded: %+v", key, info)
		}
		s.Delete(ctx, key) // may fail; must not remove the target
	}
	for _, key := range []string{"absdir/planted", "reldir/planted", "absdir/deeper/planted"} {
		if _, err := s.Put(ctx, key, strings.NewReader("planted"), 7); err == nil {
			t.Errorf("Put(%q) through a symlinked directory out of the store succeeded", key)
		}
	}
	// Writing a key whose file is a symlink replaces the link, not its target.
	for _, key := range []string{"abs", "rel"} {
		s.Put(ctx, key, strings.NewReader("new"), 3)
	}

	if got, want := readDirNames(t, outside), []string{"secret.blob"}; !slices.Equal(got, want) {
		t.Errorf("outside the store: %q, want %q", got, want)
	}
	if got, err := os.ReadFile(filepath.Join(outside, "secret.blob")); err != nil || !bytes.Equal(got, secret) {
		t.Errorf("the file outside the store now holds %q, %v", got, err)
	}
	var keys []string
	if err := s.List(ctx, "", func(info blob.Info) error {
		keys = append(keys, info.Key)
		return nil
	}); err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, k := range keys {
		if strings.Contains(k, "secret") {
			t.Errorf("List shows %q, found through a symlink", k)
		}
	}
}

func TestListSkipsForeignNames(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	put(t, s, "ok/a", []byte("a"))
	put(t, s, "ok.b", []byte("b"))
	blobs := filepath.Join(dir, "blobs")
	junkFiles := []string{
		"notes.txt", "no-ext", "%2e%2e.blob", "%41.blob", "a.b.blob", ".blob", "%.blob", "sp ace.blob",
		"%2E.blob",           // decodes to ".", an invalid segment
		"ok/%00.blob",        // decodes to NUL
		"ok/%FF.blob",        // decodes to invalid UTF-8
		"with.dot/x.blob",    // directory names never contain '.'
		"%2E%2E/x.blob",      // directory ".."
		"lower%c3%a9/x.blob", // lower-case hex
		"ok/" + strings.Repeat("z", 241) + ".blob",
	}
	for _, name := range junkFiles {
		p := filepath.Join(blobs, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(blobs, "dir.blob"), 0o700); err != nil { // a directory named like a file
		t.Fatal(err)
	}
	var keys []string
	if err := s.List(t.Context(), "", func(info blob.Info) error {
		keys = append(keys, info.Key)
		return nil
	}); err != nil {
		t.Fatalf("List: %v", err)
	}
	if want := []string{"ok.b", "ok/a"}; !slices.Equal(keys, want) {
		t.Errorf("List = %q, want %q", keys, want)
	}
}

// spyWriter records the reader io.Copy hands to its ReadFrom.
type spyWriter struct {
	bytes.Buffer
	src io.Reader
}

func (w *spyWriter) ReadFrom(r io.Reader) (int64, error) {
	w.src = r
	return w.Buffer.ReadFrom(r)
}

func TestGetWriteTo(t *testing.T) {
	s := open(t, t.TempDir())
	data := randBytes(3<<20+17, 2)
	put(t, s, "big", data)
	ranges := []struct{ off, length int64 }{
		{0, -1},
		{12345, 2<<20 + 7},
		{1, 1},
		{int64(len(data)) - 100, 1000},
		{int64(len(data)), -1},
		{500, 0},
	}
	for _, r := range ranges {
		end := int64(len(data))
		if r.length >= 0 && r.off+r.length < end {
			end = r.off + r.length
		}
		want := data[r.off:end]
		name := fmt.Sprintf("%d+%d", r.off, r.length)

		t.Run(name+"/ReadFrom-spy", func(t *testing.T) {
			rc := get(t, s, "big", r.off, r.length)
			if _, ok := rc.(io.WriterTo); !ok {
				t.Fatalf("the reader (%T) does not implement io.WriterTo", rc)
			}
			var w spyWriter
			n, err := io.Copy(&w, rc)
			if err != nil || n != int64(len(want)) {
				t.Fatalf("io.Copy = %d, %v; want %d bytes", n, err, len(want))
			}
			if !bytes.Equal(w.Bytes(), want) {
				t.Fatalf("io.Copy copied other bytes than [%d:%d]", r.off, end)
			}
			lr, ok := w.src.(*io.LimitedReader)
			if !ok {
				t.Fatalf("ReadFrom got a %T, want an *io.LimitedReader over the file", w.src)
			}
			if _, ok := lr.R.(*os.File); !ok {
				t.Errorf("ReadFrom got a LimitedReader over %T, want *os.File", lr.R)
			}
			// The range is used up.
			if n, err := rc.Read(make([]byte, 10)); n != 0 || err != io.EOF {
				t.Errorf("Read after WriteTo = %d, %v; want 0, EOF", n, err)
			}
		})

		t.Run(name+"/file", func(t *testing.T) {
			// *os.File.ReadFrom copies file to file in the kernel.
			rc := get(t, s, "big", r.off, r.length)
			dst, err := os.Create(filepath.Join(t.TempDir(), "dst"))
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			if _, err := dst.WriteString("pre"); err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(dst, rc)
			if err != nil || n != int64(len(want)) {
				t.Fatalf("io.Copy to a file = %d, %v; want %d bytes", n, err, len(want))
			}
			got, err := os.ReadFile(dst.Name())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append([]byte("pre"), want...)) {
				t.Fatalf("the file holds %d bytes other than \"pre\" + [%d:%d]", len(got), r.off, end)
			}
		})

		t.Run(name+"/http", func(t *testing.T) {
			// An http.ResponseWriter reaches sendfile on the TCP connection.
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				rc, err := s.Get(req.Context(), "big", r.off, r.length)
				if err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				defer rc.Close()
				io.Copy(w, rc)
			}))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET: status %d, %v", resp.StatusCode, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("HTTP body is %d bytes other than [%d:%d] (%d bytes)", len(got), r.off, end, len(want))
			}
		})
	}
}

func TestGetReadAfterPartialRead(t *testing.T) {
	s := open(t, t.TempDir())
	data := randBytes(1<<20, 3)
	put(t, s, "k", data)
	rc := get(t, s, "k", 100, 5000)
	head := make([]byte, 1000)
	if _, err := io.ReadFull(rc, head); err != nil {
		t.Fatal(err)
	}
	var rest bytes.Buffer
	if _, err := io.Copy(&rest, rc); err != nil { // WriteTo with the remainder
		t.Fatal(err)
	}
	if got := append(head, rest.Bytes()...); !bytes.Equal(got, data[100:5100]) {
		t.Errorf("Read then WriteTo gave %d bytes other than [100:5100]", len(got))
	}
}

func TestClassifiesClosedStore(t *testing.T) {
	s, err := diskblob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "k", []byte("x"))
	s.Close()
	if _, err := s.Stat(t.Context(), "k"); errcode.Of(err) != errcode.Unavailable {
		t.Errorf("Stat on a closed store: %v (code %v), want %v", err, errcode.Of(err), errcode.Unavailable)
	}
	if _, err := s.Put(t.Context(), "k2", strings.NewReader("x"), 1); errcode.Of(err) != errcode.Unavailable {
		t.Errorf("Put on a closed store: %v (code %v), want %v", err, errcode.Of(err), errcode.Unavailable)
	}
}

func get(t *testing.T, s blob.Store, key string, off, length int64) io.ReadCloser {
	t.Helper()
	rc, err := s.Get(t.Context(), key, off, length)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): %v", key, off, length, err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc
}

func BenchmarkPut(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20} {
		b.Run(sizeName(size), func(b *testing.B) {
			s := open(b, b.TempDir())
			data := randBytes(size, 4)
			ctx := context.Background()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				key := fmt.Sprintf("bench/%d", i)
				i++
				if _, err := s.Put(ctx, key, bytes.NewReader(data), int64(size)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20} {
		b.Run(sizeName(size), func(b *testing.B) {
			s := open(b, b.TempDir())
			put(b, s, "k", randBytes(size, 5))
			ctx := context.Background()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				rc, err := s.Get(ctx, "k", 0, -1)
				if err != nil {
					b.Fatal(err)
				}
				if n, err := io.Copy(io.Discard, rc); err != nil || n != int64(size) {
					b.Fatalf("io.Copy = %d, %v", n, err)
				}
				rc.Close()
			}
		})
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// trickle yields at most step bytes a Read, and (0, nil) every third
// call, as a slow socket can.
type trickle struct {
	r    io.Reader
	step int
	i    int
}

func (t *trickle) Read(p []byte) (int, error) {
	t.i++
	if t.i%3 == 0 {
		return 0, nil
	}
	return t.r.Read(p[:min(len(p), t.step)])
}

// TestPutFromSmallReads: a body that arrives in many small reads (and
// reads that yield nothing) is the blob, byte for byte, and a body longer
// than declared still fails, on both sides of fillMinSize.
func TestPutFromSmallReads(t *testing.T) {
	const bufSize = 256 << 10 // diskblob's buffer
	s := open(t, t.TempDir())
	ctx := context.Background()
	for _, size := range []int{0, 1, 16 << 10, bufSize - 1, bufSize, bufSize + 1, 3*bufSize + 12345, 4<<20 + 12345} {
		data := randBytes(size, 6)
		key := fmt.Sprintf("small-reads/%d", size)
		if _, err := s.Put(ctx, key, &trickle{r: bytes.NewReader(data), step: 16 << 10}, int64(size)); err != nil {
			t.Fatalf("Put %d bytes: %v", size, err)
		}
		got, err := io.ReadAll(get(t, s, key, 0, -1))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("blob of %d bytes reads back %d bytes (%v), not the body", size, len(got), err)
		}
	}
	data := randBytes(bufSize+10, 7)
	if _, err := s.Put(ctx, "small-reads/long", &trickle{r: bytes.NewReader(data), step: 16 << 10}, bufSize+9); !errcode.Is(err, errcode.TooLarge) {
		t.Fatalf("Put of a body longer than declared = %v, want TooLarge", err)
	}
}

// writtenFirst is a body that, on each Read after the first, reports how
// many bytes of the temporary file under dir/tmp are already written.
type writtenFirst struct {
	r       io.Reader
	dir     string
	reads   int
	written []int64 // the temporary file's size at each Read after the first
}

func (w *writtenFirst) Read(p []byte) (int, error) {
	w.reads++
	if w.reads > 1 {
		ents, _ := os.ReadDir(filepath.Join(w.dir, "tmp"))
		var n int64
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		w.written = append(w.written, n)
	}
	return w.r.Read(p[:min(len(p), 16<<10)])
}

// TestSmallBodyWrittenAsRead: below 4 MiB, Put writes what each read
// yields before it reads again, so a socket's bytes are not held back to
// fill a buffer (that cost 1 MiB uploads at 200 VUs 10-17 % of their
// rate); from 4 MiB it fills 256 KiB before each write, for md5-simd.
func TestSmallBodyWrittenAsRead(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	const size = 1 << 20
	body := &writtenFirst{r: bytes.NewReader(randBytes(size, 9)), dir: dir}
	if _, err := s.Put(context.Background(), "as-read", body, size); err != nil {
		t.Fatal(err)
	}
	if len(body.written) < 2 || body.written[0] != 16<<10 || body.written[1] != 32<<10 {
		t.Fatalf("bytes written before the 2nd and 3rd reads = %v, want 16 KiB and 32 KiB", body.written[:min(len(body.written), 2)])
	}
	dir = t.TempDir()
	s = open(t, dir)
	body = &writtenFirst{r: bytes.NewReader(randBytes(8<<20, 9)), dir: dir}
	if _, err := s.Put(context.Background(), "filled", body, 8<<20); err != nil {
		t.Fatal(err)
	}
	if body.written[0] != 0 || body.written[14] != 0 || body.written[15] != 256<<10 {
		t.Fatalf("an 8 MiB body: bytes written before reads 2, 16, 17 = %d, %d, %d, want 0, 0, 256 KiB", body.written[0], body.written[14], body.written[15])
	}
}

// BenchmarkPutFromSocket writes 10 MiB bodies that arrive in 64 KiB
// reads, as from a socket: the write calls per blob and the CPU per MiB,
// with direct writes (the default from 4 MiB) and through the page cache.
// Each blob is deleted at once, so the buffered case reuses warm page-cache
// pages: a server keeping gigabytes of fresh blobs pays more per MiB for
// them (issue 23, second pass, in docs/PERFORMANCE.md).
func BenchmarkPutFromSocket(b *testing.B) {
	for _, mode := range []string{"direct", "buffered"} {
		b.Run(mode, func(b *testing.B) {
			const size = 10 << 20
			s, data, ctx := benchPut(b, size)
			if mode == "buffered" {
				diskblob.NoDirect(s)
			}
			var ru0, ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			i := 0
			for b.Loop() {
				key := fmt.Sprintf("bench/%d", i)
				i++
				if _, err := s.Put(ctx, key, &trickle{r: bytes.NewReader(data), step: 64 << 10}, size); err != nil {
					b.Fatal(err)
				}
				s.Delete(ctx, key)
			}
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			mib := float64(b.N) * size / (1 << 20)
			b.ReportMetric(float64(ru1.Utime.Nano()-ru0.Utime.Nano())/1e6/mib, "user-ms/MiB")
			b.ReportMetric(float64(ru1.Stime.Nano()-ru0.Stime.Nano())/1e6/mib, "sys-ms/MiB")
		})
	}
}

// TestWriteBackWhileStreaming: for a body of unknown length (a tus PATCH)
// Put starts the write-back of each full MiB while the body still streams
// in, so the fsync at its end waits for the tail only (a tus client waits
// for that fsync before it sends the next PATCH); the blob is the body.
// The body stops after 3 MiB until a write-back has started (no timing:
// it fails only if none ever starts). A body of declared length (a PUT)
// is left to the kernel's own write-back.
func TestWriteBackWhileStreaming(t *testing.T) {
	var mu sync.Mutex
	var kicks [][2]int64
	started := make(chan struct{}, 1)
	t.Cleanup(diskblob.SetWriteBack(func(_ *os.File, off, n int64) {
		mu.Lock()
		kicks = append(kicks, [2]int64{off, n})
		mu.Unlock()
		select {
		case started <- struct{}{}:
		default:
		}
	}))
	s := open(t, t.TempDir())
	const size = 5<<20 + 12345
	data := randBytes(size, 10)
	for _, declared := range []int64{-1, size} {
		mu.Lock()
		kicks = nil
		mu.Unlock()
		select {
		case <-started:
		default:
		}
		key := fmt.Sprintf("write-back/%d", declared)
		at := int64(3 << 20)
		if declared >= 0 {
			at = -1
		}
		body := &waitAt{r: &trickle{r: bytes.NewReader(data), step: 16 << 10}, at: at, started: started, t: t}
		if _, err := s.Put(context.Background(), key, body, declared); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		var end int64
		for _, k := range kicks {
			if k[0] != end || k[1] <= 0 || k[1]%(1<<20) != 0 {
				t.Fatalf("size %d: write-back ranges %v, want contiguous whole MiBs from 0", declared, kicks)
			}
			end += k[1]
		}
		mu.Unlock()
		want := int64(5 << 20)
		if declared >= 0 {
			want = 0
		}
		if end != want {
			t.Fatalf("size %d: write-back started up to byte %d, want %d", declared, end, want)
		}
		got, err := io.ReadAll(get(t, s, key, 0, -1))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("size %d: blob reads back %d bytes (%v), not the body", declared, len(got), err)
		}
	}
}

// waitAt reads r, waiting after byte at until started has a value.
type waitAt struct {
	r       io.Reader
	at, n   int64
	started chan struct{}
	t       *testing.T
}

func (w *waitAt) Read(p []byte) (int, error) {
	if w.n >= w.at && w.at >= 0 {
		select {
		case <-w.started:
		case <-time.After(time.Minute):
			w.t.Error("no write-back started while the body was streaming")
		}
		w.at = -1
	}
	n, err := w.r.Read(p)
	w.n += int64(n)
	return n, err
}

// BenchmarkPutStreamedFsync writes 8 MiB bodies of unknown size (a tus
// PATCH) that arrive in 64 KiB reads, each hashed as the request path
// does. tail-ms/op is the time from the body's last byte to Put's return
// (the fsync, mostly): what a tus client waits for before its next PATCH,
// which write-back during the stream shortens.
func BenchmarkPutStreamedFsync(b *testing.B) {
	const size = 8 << 20
	s, data, ctx := benchPut(b, size)
	i := 0
	var tail time.Duration
	for b.Loop() {
		key := fmt.Sprintf("bench/%d", i)
		i++
		h := sha256.New()
		body := &lastByte{r: io.TeeReader(&trickle{r: bytes.NewReader(data), step: 64 << 10}, h)}
		if _, err := s.Put(ctx, key, body, -1); err != nil {
			b.Fatal(err)
		}
		tail += time.Since(body.eof)
		s.Delete(ctx, key)
	}
	b.ReportMetric(float64(tail.Microseconds())/1e3/float64(i), "tail-ms/op")
}

// lastByte notes when r ends.
type lastByte struct {
	r   io.Reader
	eof time.Time
}

func (l *lastByte) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if err == io.EOF && l.eof.IsZero() {
		l.eof = time.Now()
	}
	return n, err
}

// benchPut opens a store for a benchmark of Puts of size-byte bodies and
// returns it with a body.
func benchPut(b *testing.B, size int) (*diskblob.Store, []byte, context.Context) {
	s := open(b, b.TempDir())
	b.SetBytes(int64(size))
	b.ReportAllocs()
	return s, randBytes(size, 8), context.Background()
}

// BenchmarkPartFixedCost (issue 23, third pass) is what one growing blob
// per tus upload could save a PATCH in the blob store, before building
// it: a PATCH's part as a new blob (a temporary file, its fsync, the
// rename and the directory's fsync; a body of unknown length, as a
// PATCH's) against the same bytes appended to one open file and fsync'd,
// the least an append could cost. With a 4 KiB body the difference is the
// per-PATCH fixed cost (the bytes cost the same either way); the process's
// CPU per op, user and system, is reported with the time.
func BenchmarkPartFixedCost(b *testing.B) {
	const size = 4 << 10
	data := randBytes(size, 6)
	cpu := func(b *testing.B, run func()) {
		var ru0, ru1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		n := 0
		for b.Loop() {
			run()
			n++
		}
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		b.ReportMetric(float64(ru1.Utime.Nano()-ru0.Utime.Nano())/1e3/float64(n), "user-us/op")
		b.ReportMetric(float64(ru1.Stime.Nano()-ru0.Stime.Nano())/1e3/float64(n), "sys-us/op")
	}
	b.Run("new-blob", func(b *testing.B) {
		s := open(b, b.TempDir())
		ctx := context.Background()
		b.ReportAllocs()
		i := 0
		cpu(b, func() {
			key := fmt.Sprintf("o/%02x/%d", i%256, i)
			i++
			if _, err := s.Put(ctx, key, io.MultiReader(bytes.NewReader(data)), -1); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("append", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "growing"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.ReportAllocs()
		cpu(b, func() {
			if _, err := f.Write(data); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// unitBody is a blob.UnitReader as an encrypting stream is one: a Read
// into a buffer that holds a unit yields one unit, made there (crypt seals
// a segment straight into it); a Read into less makes the unit aside and
// copies out what fits (split counts those units).
type unitBody struct {
	r       io.Reader
	unit    int
	buf     []byte // the unit being served in pieces
	pending []byte // its rest
	split   int
}

func (u *unitBody) ReadUnit() int { return u.unit }

func (u *unitBody) Read(p []byte) (int, error) {
	if len(u.pending) == 0 {
		dst := p
		if len(p) < u.unit {
			if u.buf == nil {
				u.buf = make([]byte, u.unit)
			}
			dst = u.buf
		}
		n, err := io.ReadFull(u.r, dst[:u.unit])
		if n == 0 {
			if err == io.ErrUnexpectedEOF {
				err = io.EOF
			}
			return 0, err
		}
		if len(p) >= u.unit {
			return n, nil
		}
		u.split++
		u.pending = u.buf[:n]
	}
	n := copy(p, u.pending)
	u.pending = u.pending[n:]
	return n, nil
}

// TestPutWholeUnits: a body of units (blob.UnitReader, an encrypted
// stream's 64 KiB + 32-byte segments) of 4 MiB and more is asked for whole
// units only, four a fill, so none goes through the body's own buffer and
// a copy (with diskblob's 256 KiB buffer, one in four did); the blob is
// the body, byte for byte, at sizes around the units and around the tail
// held back between direct writes.
func TestPutWholeUnits(t *testing.T) {
	const unit = 64<<10 + 32
	s := open(t, t.TempDir())
	ctx := context.Background()
	for _, size := range []int{4 << 20, 10<<20 + 160*32, 64 * unit, 64*unit + 1, 64*unit - 1, 97*unit + 4095} {
		data := randBytes(size, 11)
		body := &unitBody{r: bytes.NewReader(data), unit: unit}
		key := fmt.Sprintf("units/%d", size)
		if _, err := s.Put(ctx, key, body, int64(size)); err != nil {
			t.Fatalf("Put %d bytes: %v", size, err)
		}
		if body.split > 0 {
			t.Errorf("%d bytes: %d of %d units read into less than a unit (copied)", size, body.split, (size+unit-1)/unit)
		}
		got, err := io.ReadAll(get(t, s, key, 0, -1))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("blob of %d bytes reads back %d bytes (%v), not the body", size, len(got), err)
		}
	}
	// Below 4 MiB a body is written as it is read: nothing to fill.
	body := &unitBody{r: bytes.NewReader(randBytes(1<<20, 12)), unit: unit}
	if _, err := s.Put(ctx, "units/small", body, 1<<20); err != nil || body.split > 0 {
		t.Fatalf("1 MiB: %v, %d split", err, body.split)
	}
}

// BenchmarkPutUnits: 10 MiB bodies of 64 KiB + 32-byte units (an encrypted
// PUT's ciphertext as crypt yields it: a unit read into less than a unit
// is made aside and copied, as sealReader seals such a segment into a
// pooled buffer) written as diskblob writes them, filling whole units
// ("units", the default) or its 256 KiB buffer ("split", before: one unit
// in four copied). split/op counts the copied units; the CPU per MiB
// (getrusage) includes the body's copies.
func BenchmarkPutUnits(b *testing.B) {
	const unit = 64<<10 + 32
	const size = 160 * unit
	for _, mode := range []string{"units", "split"} {
		b.Run(mode, func(b *testing.B) {
			s, data, ctx := benchPut(b, size)
			if mode == "split" {
				diskblob.NoUnits(s)
			}
			split, i := 0, 0
			var ru0, ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			for b.Loop() {
				key := fmt.Sprintf("bench/%d", i)
				i++
				body := &unitBody{r: bytes.NewReader(data), unit: unit}
				if _, err := s.Put(ctx, key, body, size); err != nil {
					b.Fatal(err)
				}
				split += body.split
				s.Delete(ctx, key)
			}
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			mib := float64(b.N) * size / (1 << 20)
			b.ReportMetric(float64(split)/float64(b.N), "split/op")
			b.ReportMetric(float64(ru1.Utime.Nano()-ru0.Utime.Nano())/1e6/mib, "user-ms/MiB")
			b.ReportMetric(float64(ru1.Stime.Nano()-ru0.Stime.Nano())/1e6/mib, "sys-ms/MiB")
		})
	}
}

// TestFreeAndSize: the file system's size and free space, as the metrics
// coffer_data_disk_size_bytes and coffer_data_disk_free_bytes report them
// (the disk-nearly-full alert divides one by the other).
func TestFreeAndSize(t *testing.T) {
	s, err := diskblob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	free, err := s.Free()
	if err != nil {
		t.Fatal(err)
	}
	size, err := s.Size()
	if err != nil {
		t.Fatal(err)
	}
	if free <= 0 || size < free {
		t.Errorf("free %d, size %d: want 0 < free <= size", free, size)
	}
}

package integrity

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
)

// The reference of issue 23: what the hashes an upload must compute cost
// a core, per byte (compare with `openssl speed md5 sha256`).
func BenchmarkHash(b *testing.B) {
	data := bytes.Repeat([]byte("coffer!"), (1<<20)/7+1)[:1<<20]
	for _, h := range []struct {
		name string
		new  func() hash.Hash
	}{{"md5", md5.New}, {"sha256", sha256.New}} {
		b.Run(h.name, func(b *testing.B) {
			d := h.new()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			defer cpuPerMiB(b, int64(len(data)))()
			for b.Loop() {
				d.Reset()
				d.Write(data)
				d.Sum(nil)
			}
		})
	}
}

// BenchmarkMD5Streams hashes streams 1 MiB objects at once, each written
// in 64 KiB pieces (what a socket read yields), with crypto/md5 and with
// md5-simd, to see from how many streams the vector lanes pay off here
// (simdFrom).
func BenchmarkMD5Streams(b *testing.B) {
	data := bytes.Repeat([]byte("coffer!"), (1<<20)/7+1)[:1<<20]
	for _, streams := range []int{1, 2, 4, 8, 12, 16} {
		for _, impl := range []string{"stdlib", "simd"} {
			b.Run(fmt.Sprintf("%s/streams=%d", impl, streams), func(b *testing.B) {
				if impl == "simd" {
					old := simdFrom
					simdFrom = -1 // every stream takes a lane (newMD5's reused hashers)
					defer func() { simdFrom = old }()
				}
				b.SetBytes(int64(len(data) * streams))
				b.ReportAllocs()
				defer cpuPerMiB(b, int64(len(data)*streams))()
				for b.Loop() {
					var wg sync.WaitGroup
					for range streams {
						wg.Add(1)
						go func() {
							defer wg.Done()
							h, done := md5.New(), func() {}
							if impl == "simd" {
								h, done = newMD5()
							}
							defer done()
							for p := data; len(p) > 0; p = p[64<<10:] {
								h.Write(p[:64<<10])
							}
							h.Sum(nil)
						}()
					}
					wg.Wait()
				}
			})
		}
	}
}

// BenchmarkReader is the integrity Reader over 1 MiB (SHA-256 and MD5 in
// one pass), read in 256 KiB pieces as diskblob reads it.
func BenchmarkReader(b *testing.B) {
	data := bytes.Repeat([]byte("coffer!"), (1<<20)/7+1)[:1<<20]
	buf := make([]byte, 256<<10)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer cpuPerMiB(b, int64(len(data)))()
	for b.Loop() {
		r := NewReader(bytes.NewReader(data), Options{Size: int64(len(data))})
		for {
			if _, err := r.Read(buf); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		r.MD5()
		r.SHA256()
	}
}

// cpuPerMiB reports the process's CPU time (user+system, all threads) per
// MiB hashed, when the returned func runs: a figure that survives a busy
// machine, where the ns/op of wall time does not.
func cpuPerMiB(b *testing.B, bytesPerOp int64) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			mib := float64(bytesPerOp) * float64(b.N) / (1 << 20)
			b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/mib, "cpu-ms/MiB")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestMD5Lanes hashes many streams at once, so that those past simdFrom
// take md5-simd lanes, with reads of odd sizes, some failing midway: every
// MD5 must be crypto/md5's, and every stream must give its hasher back
// (the count of streams hashing returns to 0).
func TestMD5Lanes(t *testing.T) {
	old, oldMin := simdFrom, simdMinSize
	simdFrom, simdMinSize = 2, 0
	t.Cleanup(func() { simdFrom, simdMinSize = old, oldMin })
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 24)
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := data[:len(data)-i*4099]
			want := md5.Sum(body)
			var src io.Reader = bytes.NewReader(body)
			if i%6 == 5 {
				src = io.MultiReader(bytes.NewReader(body[:1<<20]), iotest.ErrReader(errors.New("cut")))
			}
			r := NewReader(src, Options{Size: int64(len(body))})
			buf := make([]byte, 1000+i*3001)
			_, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf)
			switch {
			case i%6 == 5 && err == nil:
				errs <- fmt.Errorf("stream %d: a cut body read to the end", i)
			case i%6 != 5 && err != nil:
				errs <- fmt.Errorf("stream %d: %v", i, err)
			case i%6 != 5 && !bytes.Equal(r.MD5(), want[:]):
				errs <- fmt.Errorf("stream %d: MD5 %x, want %x", i, r.MD5(), want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if md5Server == nil {
		t.Error("no stream took a vector lane")
	}
	if n := md5Streams.Load(); n != 0 {
		t.Errorf("%d MD5 streams still counted after every Reader ended", n)
	}
}

// TestReaderAllocs keeps the Reader's allocations per 1 MiB upload (MD5
// and SHA-256, crypto/md5 path) from growing unnoticed.
func TestReaderAllocs(t *testing.T) {
	data := make([]byte, 1<<20)
	buf := make([]byte, 256<<10)
	br := bytes.NewReader(data)
	allocs := testing.AllocsPerRun(20, func() {
		br.Reset(data)
		r := NewReader(br, Options{Size: int64(len(data))})
		for {
			if _, err := r.Read(buf); err != nil {
				break
			}
		}
		r.MD5()
		r.SHA256()
	})
	if allocs > 10 {
		t.Errorf("%v allocations per 1 MiB read, want at most 10", allocs)
	}
	t.Logf("%v allocations per 1 MiB read", allocs)
}

// TestMD5LanesReused runs many more md5-simd streams, one after another,
// than the hashers that may exist: they are reused, never closed (a
// closed one stays in md5-simd's server for good and slows it: 50,000
// closed hashers stalled it for minutes), and every sum stays right after
// reuse, including after a stream dropped midway.
func TestMD5LanesReused(t *testing.T) {
	old := simdFrom
	simdFrom = -1 // every stream takes a lane
	t.Cleanup(func() { simdFrom = old })
	data := make([]byte, 200<<10+3)
	for i := range data {
		data[i] = byte(i * 31)
	}
	for i := range 20 * simdHashers {
		body := data[:len(data)-i]
		want := md5.Sum(body)
		r := NewReader(bytes.NewReader(body), Options{Size: -1})
		if i%5 == 4 {
			// Dropped after a piece: its hasher must come back clean.
			r.Read(make([]byte, 70000))
			r.md5Done()
			continue
		}
		if _, err := io.Copy(io.Discard, struct{ io.Reader }{r}); err != nil {
			t.Fatal(err)
		}
		if got := r.MD5(); !bytes.Equal(got, want[:]) {
			t.Fatalf("stream %d: MD5 %x, want %x", i, got, want)
		}
	}
	if n := md5Made.Load(); n < 1 || n > simdHashers {
		t.Errorf("%d md5-simd hashers made, want 1 to %d", n, simdHashers)
	}
	if n := md5Streams.Load(); n != 0 {
		t.Errorf("%d MD5 streams still counted", n)
	}
}

// TestSmallBodiesNoLane: a body announced below simdMinSize hashes with
// crypto/md5 even while many streams hash (GoVault's 1 MiB uploads were
// slower on lanes), and so never counts as a stream that could take one.
func TestSmallBodiesNoLane(t *testing.T) {
	old := simdFrom
	simdFrom = -1 // every eligible stream would take a lane
	t.Cleanup(func() { simdFrom = old })
	body := make([]byte, 1<<20)
	before := md5Streams.Load()
	r := NewReader(bytes.NewReader(body), Options{Size: int64(len(body))})
	if n := md5Streams.Load() - before; n != 0 {
		t.Fatalf("a 1 MiB body counts as %d md5-simd streams", n)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	if want := md5.Sum(body); !bytes.Equal(r.MD5(), want[:]) {
		t.Fatalf("MD5 %x, want %x", r.MD5(), want)
	}
}

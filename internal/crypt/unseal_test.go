package crypt

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/minio/sio"
)

// unsealBoth decrypts ct, whose first segment has index first, with sio's
// reader and with unsealReader, reading each with Reads of bufSize bytes
// from a source that yields chunk bytes a Read (0: all it is asked for).
func unsealBoth(t testing.TB, s *Stream, ct []byte, first uint32, bufSize, chunk int) (want, got []byte, wantErr, gotErr error) {
	src := func() io.Reader {
		var r io.Reader = bytes.NewReader(ct)
		if chunk > 0 {
			r = &chunkReader{r: r, n: chunk}
		}
		return r
	}
	sr, err := sio.DecryptReader(src(), s.config(first))
	if err != nil {
		t.Fatal(err)
	}
	want, wantErr = readAllBuf(sr, bufSize)
	ur := s.newUnsealReader(src(), first, int64(len(ct)))
	got, gotErr = readAllBuf(ur, bufSize)
	return want, got, wantErr, gotErr
}

// chunkReader yields at most n bytes a Read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// sameOutcome fails unless both readers accepted the same plaintext or both
// refused (having returned a correct prefix: one's output a prefix of the
// other's).
func sameOutcome(t testing.TB, want, got []byte, wantErr, gotErr error) {
	t.Helper()
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("sio: %d bytes, %v; unsealReader: %d bytes, %v", len(want), wantErr, len(got), gotErr)
	}
	if wantErr == nil && !bytes.Equal(want, got) {
		t.Fatalf("sio read %d bytes, unsealReader %d different ones", len(want), len(got))
	}
	if wantErr != nil {
		short, long := want, got
		if len(short) > len(long) {
			short, long = long, short
		}
		if !bytes.HasPrefix(long, short) {
			t.Fatalf("before their errors sio and unsealReader returned different bytes (%d, %d)", len(want), len(got))
		}
		if _, ok := gotErr.(*unsealError); !ok {
			t.Fatalf("unsealReader's error %v is no format error", gotErr)
		}
	}
}

// TestUnsealMatchesSio: the decrypting reader accepts exactly what sio's
// does, and yields the same plaintext: whole streams and streams from a
// later segment (range reads), both ciphers, caller buffers from 7 bytes to
// 256 KiB, sources yielding everything or a few bytes a Read; and every
// kind of damage (each header field, the payload, the tag, truncation at
// and inside segment borders, appended bytes, swapped and dropped
// segments, another stream's segment) is refused by both.
func TestUnsealMatchesSio(t *testing.T) {
	for _, c := range []Cipher{AES256GCM, ChaCha20Poly1305} {
		env := newEnvelope(t)
		env.Cipher = c
		dk := NewDataKey()
		s, err := NewStream(dk, &env, "o/ab/blob")
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{1, 100, SegmentSize - 1, SegmentSize, SegmentSize + 1, 3*SegmentSize + 5, 5 * SegmentSize} {
			plain := make([]byte, size)
			for i := range plain {
				plain[i] = byte(i*7 + i>>9)
			}
			ct, err := io.ReadAll(s.Encrypt(bytes.NewReader(plain)))
			if err != nil {
				t.Fatal(err)
			}
			other, err := io.ReadAll(s.Encrypt(bytes.NewReader(plain))) // another random nonce
			if err != nil {
				t.Fatal(err)
			}
			segs := (len(ct) + sealedSegment - 1) / sealedSegment
			cases := map[string][]byte{"intact": ct}
			flip := func(name string, i int) {
				if i >= 0 && i < len(ct) {
					b := bytes.Clone(ct)
					b[i] ^= 0x80
					cases[name] = b
				}
			}
			last := (segs - 1) * sealedSegment
			for _, at := range []struct {
				name string
				off  int
			}{{"first", 0}, {"last", last}} {
				for i, field := range []string{"version", "cipher", "length low", "length high", "nonce first byte (final flag)", "nonce", "nonce counter"} {
					flip(fmt.Sprintf("%s segment: %s", at.name, field), at.off+[]int{0, 1, 2, 3, 4, 9, 15}[i])
				}
				flip(at.name+" segment: payload", at.off+headerSize+1)
				flip(at.name+" segment: tag", min(at.off+sealedSegment, len(ct))-1)
			}
			cipherSwap := bytes.Clone(ct)
			cipherSwap[1] ^= 3 // AES (0) ↔ ChaCha (3 is no cipher; 0^3, 1^3)
			cases["first segment: other cipher id"] = cipherSwap
			for _, cut := range []int{1, headerSize, headerSize + tagSize, headerSize + tagSize + 1, sealedSegment - 1, sealedSegment, sealedSegment + 1} {
				if cut < len(ct) {
					cases[fmt.Sprintf("truncated to %d bytes", cut)] = ct[:cut]
					cases[fmt.Sprintf("cut by %d bytes", cut)] = ct[:len(ct)-cut]
				}
			}
			cases["appended byte"] = append(bytes.Clone(ct), 0)
			cases["appended segment"] = append(bytes.Clone(ct), ct[:min(len(ct), sealedSegment)]...)
			cases["empty"] = nil
			if segs > 1 {
				cases["first segment dropped"] = ct[sealedSegment:]
				fo := bytes.Clone(ct)
				copy(fo[sealedSegment:], other[sealedSegment:])
				cases["segment of another stream"] = fo
			}
			if segs > 2 {
				sw := bytes.Clone(ct)
				copy(sw, ct[sealedSegment:2*sealedSegment])
				copy(sw[sealedSegment:], ct[:sealedSegment])
				cases["swapped segments"] = sw
			}
			for name, b := range cases {
				firsts := []uint32{0}
				if segs > 1 && name == "intact" {
					firsts = append(firsts, 1)
				}
				for _, first := range firsts {
					b := b
					if first > 0 {
						b = b[int(first)*sealedSegment:]
					}
					for _, bufSize := range []int{7, 4096, SegmentSize, sealedSegment + 1, 256 << 10, 0} {
						for _, chunk := range []int{0, 1000} {
							t.Run(fmt.Sprintf("%v/%d/%s/from%d/buf%d/chunk%d", c, size, name, first, bufSize, chunk), func(t *testing.T) {
								if bufSize != 0 && bufSize < 4096 && size > 2*SegmentSize {
									t.Skip("slow")
								}
								want, got, wantErr, gotErr := unsealBoth(t, s, b, first, bufSize, chunk)
								sameOutcome(t, want, got, wantErr, gotErr)
								if name == "intact" && (gotErr != nil || !bytes.Equal(got, plain[int(first)*SegmentSize:])) {
									t.Fatalf("intact stream: %d bytes, %v", len(got), gotErr)
								}
							})
						}
					}
				}
			}
		}
	}
}

// FuzzUnsealMatchesSio: for any bytes, the decrypting reader accepts what
// sio's accepts, with the same plaintext, and refuses what it refuses.
func FuzzUnsealMatchesSio(f *testing.F) {
	env := newEnvelope(f)
	dk := bytes.Repeat([]byte{7}, KeySize)
	s, err := NewStream(dk, &env, "fuzz")
	if err != nil {
		f.Fatal(err)
	}
	for _, size := range []int{1, 300, SegmentSize + 40} {
		ct, err := io.ReadAll(s.Encrypt(bytes.NewReader(make([]byte, size))))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(ct, uint16(4096), uint16(0))
		f.Add(ct, uint16(100), uint16(7))
	}
	f.Fuzz(func(t *testing.T, ct []byte, bufSize, chunk uint16) {
		want, got, wantErr, gotErr := unsealBoth(t, s, ct, 0, int(bufSize)+1, int(chunk))
		sameOutcome(t, want, got, wantErr, gotErr)
	})
}

// TestUnsealReadsBufferfuls: a whole-stream read from a file is one
// read(2) per four segments (WriteTo's buffer), not one per segment as
// sio's reader made it. It fails with sio's reader (16 reads a MiB).
func TestUnsealReadsBufferfuls(t *testing.T) {
	const size = 16 * SegmentSize
	o := encryptObject(t, size, "o/ab/reads")
	cr := &countingReader{r: ciphertextFile(t, o.ct)}
	rc, err := o.stream.Open(func(off, n int64) (io.ReadCloser, error) {
		return io.NopCloser(io.LimitReader(cr, n)), nil
	}, size, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := io.Copy(&b, rc); err != nil || !bytes.Equal(b.Bytes(), o.plain) {
		t.Fatalf("%d bytes, %v", b.Len(), err)
	}
	// 4 fills of 4 segments, and the read that sees the end.
	if max := size/copyBufSize + 1; cr.reads > max {
		t.Fatalf("%d reads of the ciphertext for %d segments, want at most %d", cr.reads, size/SegmentSize, max)
	}
}

// ciphertextFile returns ct in a file of its own, open for reading (as
// diskblob serves a blob), closed at the end of the test.
func ciphertextFile(tb testing.TB, ct []byte) *os.File {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "blob")
	if err := os.WriteFile(path, ct, 0o600); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// countingReader counts the Reads of r.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// TestDecryptAllocs: a whole 4 MiB read through WriteTo (the encrypted
// GET's path) allocates per stream, not per segment, and builds no cipher
// (the Stream's AEAD serves every read of its key): 12 measured; with sio's
// reader 81 (a cipher per stream, a nonce per segment).
func TestDecryptAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("pooled buffers: not deterministic under the race detector")
	}
	const size = 4 << 20
	o := encryptObject(t, size, "o/ab/allocs")
	fetch := func(off, n int64) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(o.ct[off : off+n])), nil
	}
	var w writeCounter
	read := func() {
		rc, err := o.stream.Open(fetch, size, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(&w, rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
	}
	read()
	const ceiling = 20
	n := testing.AllocsPerRun(20, read)
	if n > ceiling {
		t.Errorf("%.0f allocations per 4 MiB decrypted, ceiling %d", n, ceiling)
	}
	t.Logf("%.0f allocations", n)
}

// blockingWriter accepts its first Write, then blocks the second until
// release is closed (a client that stopped reading for a while), saying
// so on blocked.
type blockingWriter struct {
	writes  int
	blocked chan<- struct{}
	release <-chan struct{}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes == 2 {
		w.blocked <- struct{}{}
		<-w.release
	}
	return len(p), nil
}

// TestDecryptMemoryPerStream measures the heap each whole-object read in
// flight holds (the encrypted GET's path: WriteTo with its read-ahead):
// 16 reads of 4 MiB stopped by their writers after the first buffer,
// against none. The package doc's bound is 768 KiB + 128 bytes of pooled
// buffers per stream (two of WriteTo's, the ciphertext buffer); the test
// allows that and 64 KiB for the rest (the reader, its goroutine's stack).
func TestDecryptMemoryPerStream(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory")
	}
	const size, streams = 4 << 20, 16
	o := encryptObject(t, size, "o/ab/mem")
	fetch := func(off, n int64) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(o.ct[off : off+n])), nil
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC() // and the pools' victim caches
		runtime.ReadMemStats(&m)
		return m.HeapAlloc + m.StackInuse // live objects after the GCs, and stacks
	}
	before := heap()
	blocked := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, streams)
	for range streams {
		rc, err := o.stream.Open(fetch, size, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_, err := io.Copy(&blockingWriter{blocked: blocked, release: release}, rc)
			rc.Close()
			done <- err
		}()
	}
	for range streams {
		<-blocked
	}
	// Each read-ahead goroutine has filled (or is filling) the second
	// buffer; the heap holds what every stream in flight holds.
	during := heap()
	close(release)
	for range streams {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	runtime.KeepAlive(o) // its plaintext counts in before: not dead in during
	per := (int64(during) - int64(before)) / streams
	t.Logf("%d KiB per decrypting stream in flight", per>>10)
	if bound := int64(unsealSegments*sealedSegment + 2*copyBufSize + 64<<10); per > bound {
		t.Fatalf("%d bytes per stream in flight, bound %d", per, bound)
	}
}

package crypt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// object is an encrypted test object: its plaintext, ciphertext and stream.
type object struct {
	plain, ct []byte
	stream    *Stream
	env       Envelope
	dk        []byte
}

func newEnvelope(t testing.TB) Envelope {
	e := NewEnvelope(ModeServer)
	e.KEKID, e.KEKVersion, e.WrappedKey = "local:default", "1", []byte("wrapped-key-bytes")
	return e
}

func encryptObject(t testing.TB, size int, identity string) object {
	t.Helper()
	plain := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(size), 7))
	for i := range plain {
		plain[i] = byte(r.Uint32())
	}
	env := newEnvelope(t)
	dk := NewDataKey()
	s, err := NewStream(dk, &env, identity)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := io.ReadAll(s.Encrypt(bytes.NewReader(plain)))
	if err != nil {
		t.Fatal(err)
	}
	return object{plain: plain, ct: ct, stream: s, env: env, dk: dk}
}

// fetcher serves ranges of ct and records what was fetched.
type fetcher struct {
	ct      []byte
	fetched int64
	calls   int
}

func (f *fetcher) fetch(off, n int64) (io.ReadCloser, error) {
	f.calls++
	if off > int64(len(f.ct)) {
		return nil, errcode.New(errcode.RangeNotSatisfiable, "offset past the end")
	}
	end := min(off+n, int64(len(f.ct)))
	f.fetched += end - off
	return io.NopCloser(bytes.NewReader(f.ct[off:end])), nil
}

// drain reads r to its end through Read ("Read", as io.ReadAll does) or
// through its WriteTo ("WriteTo", as io.Copy does).
func drain(r io.Reader, via string) ([]byte, error) {
	if via == "Read" {
		return io.ReadAll(struct{ io.Reader }{r})
	}
	var b bytes.Buffer
	_, err := io.Copy(&b, r) // WriteTo when r has it (every non-empty Open)
	return b.Bytes(), err
}

var vias = []string{"Read", "WriteTo"}

func readRange(s *Stream, ct []byte, plainSize, off, n int64) ([]byte, error) {
	f := &fetcher{ct: ct}
	rc, err := s.Open(f.fetch, plainSize, off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func TestRoundTripSizes(t *testing.T) {
	for _, size := range []int{0, 1, 100, SegmentSize - 1, SegmentSize, SegmentSize + 1, 2 * SegmentSize, 3*SegmentSize + 17} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			o := encryptObject(t, size, "o/ab/blob")
			want, err := CiphertextSize(int64(size))
			if err != nil {
				t.Fatal(err)
			}
			if got := int64(len(o.ct)); got != want {
				t.Fatalf("ciphertext size %d, CiphertextSize says %d", got, want)
			}
			if got, err := PlaintextSize(want); err != nil || got != int64(size) {
				t.Fatalf("PlaintextSize(%d) = %d, %v; want %d", want, got, err, size)
			}
			got, err := readRange(o.stream, o.ct, int64(size), 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, o.plain) {
				t.Fatalf("decrypted %d bytes differ from the %d plaintext bytes", len(got), size)
			}
			// A window of fewer than 16 bytes can occur in random ciphertext by
			// chance (a 1-byte plaintext does, once in a few hundred runs).
			if size >= 16 && bytes.Contains(o.ct, o.plain[:min(size, 64)]) {
				t.Fatal("ciphertext contains the plaintext")
			}
		})
	}
}

func TestPlaintextSizeRejectsImpossibleSizes(t *testing.T) {
	for _, n := range []int64{-1, 1, segmentOverhead, sealedSegment + 5} {
		if _, err := PlaintextSize(n); !IsIntegrity(err) {
			t.Errorf("PlaintextSize(%d) = %v, want an integrity error", n, err)
		}
	}
}

func TestRanges(t *testing.T) {
	const size = 3*SegmentSize + 1000
	o := encryptObject(t, size, "o/ab/blob")
	seg := int64(sealedSegment)
	for _, tc := range []struct {
		name             string
		off, n           int64
		wantOff, wantLen int64 // plaintext actually returned
		fetchOff, fetchN int64 // ciphertext fetched
	}{
		{"first byte", 0, 1, 0, 1, 0, seg},
		{"last byte", size - 1, 1, size - 1, 1, 3 * seg, 1000 + segmentOverhead},
		{"suffix 100", size - 100, -1, size - 100, 100, 3 * seg, 1000 + segmentOverhead},
		{"across a boundary", SegmentSize - 10, 20, SegmentSize - 10, 20, 0, 2 * seg},
		{"exactly segment 1", SegmentSize, SegmentSize, SegmentSize, SegmentSize, seg, seg},
		{"middle of segment 2", 2*SegmentSize + 5, 100, 2*SegmentSize + 5, 100, 2 * seg, seg},
		{"past the end is cut", size - 10, 1000, size - 10, 10, 3 * seg, 1000 + segmentOverhead},
		{"whole", 0, -1, 0, size, 0, int64(len(o.ct))},
		{"empty at the end", size, -1, size, 0, 0, 0},
	} {
		for _, via := range vias {
			t.Run(via+"/"+tc.name, func(t *testing.T) {
				off, n, err := Range(size, tc.off, tc.n)
				if err != nil {
					t.Fatal(err)
				}
				if off != tc.fetchOff || n != tc.fetchN {
					t.Fatalf("Range = [%d, +%d), want [%d, +%d)", off, n, tc.fetchOff, tc.fetchN)
				}
				f := &fetcher{ct: o.ct}
				rc, err := o.stream.Open(f.fetch, size, tc.off, tc.n)
				if err != nil {
					t.Fatal(err)
				}
				got, err := drain(rc, via)
				rc.Close()
				if err != nil {
					t.Fatal(err)
				}
				if want := o.plain[tc.wantOff : tc.wantOff+tc.wantLen]; !bytes.Equal(got, want) {
					t.Fatalf("got %d bytes, want %d (or they differ)", len(got), len(want))
				}
				if f.fetched != tc.fetchN {
					t.Fatalf("fetched %d ciphertext bytes, want %d", f.fetched, tc.fetchN)
				}
			})
		}
	}
	if _, _, err := Range(size, size+1, 1); !errcode.Is(err, errcode.RangeNotSatisfiable) {
		t.Fatalf("Range past the end: %v, want RangeNotSatisfiable", err)
	}
}

// TestTamper: every way of changing stored ciphertext fails the read with
// an integrity error, and what was returned before it is a correct prefix.
func TestTamper(t *testing.T) {
	const size = 3*SegmentSize + 1000
	o := encryptObject(t, size, "o/ab/blob")
	other := encryptObject(t, size, "o/cd/other")
	seg := sealedSegment
	flip := func(i int) []byte {
		c := bytes.Clone(o.ct)
		c[i] ^= 1
		return c
	}
	swap := func(a, b int) []byte {
		c := bytes.Clone(o.ct)
		copy(c[a*seg:(a+1)*seg], o.ct[b*seg:(b+1)*seg])
		copy(c[b*seg:(b+1)*seg], o.ct[a*seg:(a+1)*seg])
		return c
	}
	foreign := bytes.Clone(o.ct)
	copy(foreign[seg:2*seg], other.ct[seg:2*seg])
	sameKeyOtherIdentity := func() []byte { // same data key and envelope, bytes sealed for another blob
		s, err := NewStream(o.dk, &o.env, "o/ef/elsewhere")
		if err != nil {
			t.Fatal(err)
		}
		c, err := io.ReadAll(s.Encrypt(bytes.NewReader(o.plain)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}()
	lastFinalMoved := bytes.Clone(o.ct[:3*seg]) // drop the final segment: segment 2 becomes the last
	for _, tc := range []struct {
		name   string
		ct     []byte
		off, n int64
	}{
		{"flipped header byte", flip(seg + 3), 0, -1},
		{"flipped nonce byte", flip(seg + 8), 0, -1},
		{"flipped ciphertext byte", flip(seg + 100), 0, -1},
		{"flipped tag byte", flip(2*seg - 1), 0, -1},
		{"flipped byte, range read", flip(seg + 100), SegmentSize + 5, 10},
		{"flipped byte in the last segment", flip(len(o.ct) - 5), size - 10, -1},
		{"swapped segments", swap(0, 1), 0, -1},
		{"swapped segments, range read", swap(1, 2), SegmentSize, 10},
		{"segment of another object", foreign, 0, -1},
		{"segment of another object, range read", foreign, SegmentSize + 1, 1},
		{"whole blob of another object", other.ct, 0, -1},
		{"same data key, other identity", sameKeyOtherIdentity, 0, -1},
		{"truncated mid-segment", o.ct[:len(o.ct)-7], 0, -1},
		{"truncated mid-segment, suffix range", o.ct[:len(o.ct)-7], size - 1, 1},
		{"final segment dropped", lastFinalMoved, 0, -1},
		{"final segment dropped, suffix range", lastFinalMoved, size - 100, -1},
		{"truncated to a header", o.ct[:seg+10], 0, -1},
		{"empty blob", nil, 0, -1},
		{"empty blob, range", nil, 5, 1},
	} {
		for _, via := range vias {
			t.Run(via+"/"+tc.name, func(t *testing.T) {
				f := &fetcher{ct: tc.ct}
				rc, err := o.stream.Open(f.fetch, size, tc.off, tc.n)
				var got []byte
				if err == nil {
					got, err = drain(rc, via)
					rc.Close()
				}
				if !IsIntegrity(err) {
					t.Fatalf("err = %v, want an integrity error", err)
				}
				if e := errcode.As(err); e == nil || e.Code != errcode.Internal || e.Detail["reason"] != "integrity" {
					t.Fatalf("err = %#v, want errcode.Internal with reason integrity", e)
				}
				start := tc.off
				if want := o.plain[start : start+int64(len(got))]; !bytes.Equal(got, want) {
					t.Fatalf("returned %d bytes that are not the plaintext", len(got))
				}
			})
		}
	}
}

// failingReader yields n bytes of r, then err.
type failingReader struct {
	r   io.Reader
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	if len(p) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

// TestSourceErrorsPassThrough: a store failing mid-stream is not tampering.
func TestSourceErrorsPassThrough(t *testing.T) {
	const size = 3 * SegmentSize
	o := encryptObject(t, size, "k")
	down := errcode.Retry(errcode.Unavailable, 0, "store down")
	for _, tc := range []struct {
		name string
		err  error
		is   func(error) bool
	}{
		{"unavailable", down, func(err error) bool { return errcode.Is(err, errcode.Unavailable) }},
		{"unexpected EOF", io.ErrUnexpectedEOF, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fetch := func(off, n int64) (io.ReadCloser, error) {
				return io.NopCloser(&failingReader{r: bytes.NewReader(o.ct[off : off+n]), n: sealedSegment + 100, err: tc.err}), nil
			}
			rc, err := o.stream.Open(fetch, size, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			if !tc.is(err) || IsIntegrity(err) {
				t.Fatalf("err = %v, want the source's error", err)
			}
			if !bytes.Equal(got, o.plain[:len(got)]) {
				t.Fatal("returned bytes that are not the plaintext")
			}
		})
	}
	t.Run("fetch error", func(t *testing.T) {
		fetch := func(off, n int64) (io.ReadCloser, error) { return nil, down }
		if _, err := o.stream.Open(fetch, size, 0, -1); !errcode.Is(err, errcode.Unavailable) {
			t.Fatalf("err = %v, want Unavailable", err)
		}
	})
}

// TestEncryptPassesSourceErrors: a failing plaintext source (checksum
// mismatch, client gone) fails the ciphertext stream with its error.
func TestEncryptPassesSourceErrors(t *testing.T) {
	env := newEnvelope(t)
	s, err := NewStream(NewDataKey(), &env, "k")
	if err != nil {
		t.Fatal(err)
	}
	bad := errcode.New(errcode.ChecksumMismatch, "digest mismatch")
	_, err = io.ReadAll(s.Encrypt(&failingReader{r: bytes.NewReader(make([]byte, 1<<20)), n: 200000, err: bad}))
	if !errors.Is(err, bad) {
		t.Fatalf("err = %v, want the source's", err)
	}
}

// TestEncryptBoundedMemory: a 64 MiB stream allocates a few segments, not
// the object.
func TestEncryptBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB")
	}
	env := newEnvelope(t)
	s, err := NewStream(NewDataKey(), &env, "k")
	if err != nil {
		t.Fatal(err)
	}
	const size = 64 << 20
	ctSize, _ := CiphertextSize(size)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	buf := make([]byte, sealedSegment)
	n, err := io.CopyBuffer(io.Discard, s.Encrypt(io.LimitReader(zeros{}, size)), buf)
	if err != nil || n != ctSize {
		t.Fatalf("encrypted %d bytes (%v), want %d", n, err, ctSize)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("encrypting %d bytes allocated %d bytes", size, got)
	}
}

// TestEncryptReadsOneSegment: however large the caller's buffer (diskblob
// reads with 256 KiB), a Read of the encrypting stream returns at most one
// sealed segment, so each is written out while hot (sealReader), and
// the stream stays exactly the sealed ciphertext (it decrypts).
func TestEncryptReadsOneSegment(t *testing.T) {
	s := newStreamK(t)
	const size = 5*SegmentSize + 1000
	plain := make([]byte, size)
	for i := range plain {
		plain[i] = byte(i * 7)
	}
	r := s.Encrypt(bytes.NewReader(plain))
	buf := make([]byte, 256<<10)
	var ct []byte
	for {
		n, err := r.Read(buf)
		if n > sealedSegment {
			t.Fatalf("a Read returned %d bytes, more than one sealed segment (%d)", n, sealedSegment)
		}
		ct = append(ct, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if want, _ := CiphertextSize(size); int64(len(ct)) != want {
		t.Fatalf("%d bytes of ciphertext, want %d", len(ct), want)
	}
	got, err := readRange(s, ct, size, 0, -1)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("round trip: %d bytes, %v", len(got), err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestNewStreamChecks(t *testing.T) {
	env := newEnvelope(t)
	if _, err := NewStream(make([]byte, 16), &env, "k"); !errcode.Is(err, errcode.InvalidArgument) {
		t.Fatalf("short key: %v", err)
	}
	bad := env
	bad.Cipher = 9
	if _, err := NewStream(NewDataKey(), &bad, "k"); !IsIntegrity(err) {
		t.Fatalf("bad envelope: %v", err)
	}
}

func TestChaCha(t *testing.T) {
	env := newEnvelope(t)
	env.Cipher = ChaCha20Poly1305
	dk := NewDataKey()
	s, err := NewStream(dk, &env, "k")
	if err != nil {
		t.Fatal(err)
	}
	plain := bytes.Repeat([]byte("chacha"), 50000)
	ct, err := io.ReadAll(s.Encrypt(bytes.NewReader(plain)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := readRange(s, ct, int64(len(plain)), 70000, 5000)
	if err != nil || !bytes.Equal(got, plain[70000:75000]) {
		t.Fatalf("range read: %v", err)
	}
	aes := env
	aes.Cipher = AES256GCM
	s2, _ := NewStream(dk, &aes, "k") // another cipher never opens it
	if _, err := readRange(s2, ct, int64(len(plain)), 0, -1); !IsIntegrity(err) {
		t.Fatalf("wrong cipher: %v", err)
	}
}

// TestRangeReadsReuseSegmentBuffers: a finished range read hands its
// segment buffer back to the pool, so many small reads do not allocate a
// segment each.
func TestRangeReadsReuseSegmentBuffers(t *testing.T) {
	const size = 4 * SegmentSize
	o := encryptObject(t, size, "k")
	buf := make([]byte, 100)
	read := func() {
		f := &fetcher{ct: o.ct}
		rc, err := o.stream.Open(f.fetch, size, SegmentSize+50, 100)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(rc, buf); err != nil {
			t.Fatal(err)
		}
		rc.Close()
	}
	read()
	const reads = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range reads {
		read()
	}
	runtime.ReadMemStats(&after)
	// Without reuse every read allocates a whole 64 KiB segment buffer.
	// The bound leaves room for the race detector, under which sync.Pool
	// drops a quarter of what is put back (~28 KiB per read measured).
	if per := (after.TotalAlloc - before.TotalAlloc) / reads; per > 48<<10 {
		t.Fatalf("a 100-byte range read allocates %d bytes", per)
	}
}

// failAfter accepts n bytes, then fails every write.
type failAfter struct {
	n   int
	got bytes.Buffer
}

var errWriter = errors.New("client went away")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.got.Len()+len(p) > f.n {
		return 0, errWriter
	}
	return f.got.Write(p)
}

// TestWriteToReadAhead: a long stream is written with the next buffer
// decrypted ahead: exact bytes for whole and ranged reads, an integrity
// error deep in the stream after a correct prefix, and a failing writer
// stops the decrypting goroutine (none is left behind).
func TestWriteToReadAhead(t *testing.T) {
	size := readAheadMin + 3*SegmentSize + 17
	o := encryptObject(t, size, "o/ab/long")
	before := runtime.NumGoroutine()
	for _, r := range []struct{ off, n int64 }{{0, -1}, {SegmentSize + 5, -1}, {3, int64(readAheadMin) + 100}, {int64(size) - readAheadMin - 1, -1}} {
		f := &fetcher{ct: o.ct}
		rc, err := o.stream.Open(f.fetch, int64(size), r.off, r.n)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, err = io.Copy(&b, rc)
		rc.Close()
		end := int64(size)
		if r.n >= 0 {
			end = r.off + r.n
		}
		if err != nil || !bytes.Equal(b.Bytes(), o.plain[r.off:end]) {
			t.Errorf("[%d,+%d): %d bytes, %v", r.off, r.n, b.Len(), err)
		}
	}
	tampered := bytes.Clone(o.ct)
	tampered[9*sealedSegment+100] ^= 1 // in the third buffer
	rc, err := o.stream.Open((&fetcher{ct: tampered}).fetch, int64(size), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_, err = io.Copy(&b, rc)
	rc.Close()
	if !IsIntegrity(err) || !bytes.Equal(b.Bytes(), o.plain[:b.Len()]) || b.Len() > 9*SegmentSize {
		t.Errorf("tampered: %d bytes, %v; want a correct prefix of at most 9 segments and an integrity error", b.Len(), err)
	}
	fw := &failAfter{n: copyBufSize + 10}
	rc, err = o.stream.Open((&fetcher{ct: o.ct}).fetch, int64(size), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(fw, rc)
	rc.Close()
	if err != errWriter || n != copyBufSize || !bytes.Equal(fw.got.Bytes(), o.plain[:n]) {
		t.Errorf("failing writer: %d bytes, %v; want %d and the writer's error", n, err, copyBufSize)
	}
	for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before: a decrypting goroutine was left behind", runtime.NumGoroutine(), before)
		}
	}
}

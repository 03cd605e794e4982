package crypt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"

	"github.com/minio/sio"
)

// TestSealMatchesSio: the in-place sealing reader writes exactly what
// sio's encrypting reader writes for the same key and random value —
// every size around the segment boundaries, both ciphers, any caller
// buffer and any source chunking — so what it writes is the DARE 2.0 that
// Decrypt (sio) reads and objects written before it hold.
func TestSealMatchesSio(t *testing.T) {
	key := NewDataKey()
	var rv [12]byte
	copy(rv[:], "coffer nonce")
	sizes := []int{0, 1, 100, SegmentSize - 1, SegmentSize, SegmentSize + 1, 2 * SegmentSize, 3*SegmentSize + 5, 4*SegmentSize - 1}
	for _, c := range []Cipher{AES256GCM, ChaCha20Poly1305} {
		for _, size := range sizes {
			plain := make([]byte, size)
			for i := range plain {
				plain[i] = byte(i*31 + i>>8)
			}
			want, err := io.ReadAll(mustSio(t, c, key, rv, plain))
			if err != nil {
				t.Fatal(err)
			}
			for _, bufSize := range []int{7, 4096, sealedSegment, 256 << 10, 0} {
				for _, src := range []string{"whole", "one-byte", "half"} {
					t.Run(fmt.Sprintf("%v/%d/buf%d/%s", c, size, bufSize, src), func(t *testing.T) {
						var in io.Reader = bytes.NewReader(plain)
						switch src {
						case "one-byte":
							if size > 3*SegmentSize || bufSize < 4096 && bufSize != 0 {
								t.Skip("slow")
							}
							in = iotest.OneByteReader(in)
						case "half":
							in = iotest.HalfReader(in)
						}
						aead, err := newAEAD(c, key)
						if err != nil {
							t.Fatal(err)
						}
						r := newSealReader(c, aead, in)
						r.randVal = rv
						got, err := readAllBuf(r, bufSize)
						if err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(got, want) {
							t.Fatalf("%d bytes differ from sio's %d", len(got), len(want))
						}
					})
				}
			}
		}
	}
}

func mustSio(t *testing.T, c Cipher, key []byte, rv [12]byte, plain []byte) io.Reader {
	t.Helper()
	r, err := sio.EncryptReader(bytes.NewReader(plain), sio.Config{MinVersion: sio.Version20, MaxVersion: sio.Version20,
		CipherSuites: []byte{c.sio()}, Key: key, Nonce: &rv})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readAllBuf reads r to its end with Reads of bufSize bytes; bufSize 0
// cycles through small and whole-segment buffers.
func readAllBuf(r io.Reader, bufSize int) ([]byte, error) {
	var out []byte
	sizes := []int{bufSize}
	if bufSize == 0 {
		sizes = []int{7, sealedSegment, 100, 256 << 10, 4096, sealedSegment + 1}
	}
	buf := make([]byte, 256<<10)
	for i := 0; ; i++ {
		n, err := r.Read(buf[:sizes[i%len(sizes)]])
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// TestEncryptSourceUnexpectedEOF: a source failing with
// io.ErrUnexpectedEOF (a request body cut short) fails the encryption
// with that error; sio took it for the end of the plaintext and sealed a
// complete, shorter stream.
func TestEncryptSourceUnexpectedEOF(t *testing.T) {
	s := newStreamK(t)
	src := &failingReader{r: bytes.NewReader(make([]byte, 1<<20)), n: 3*SegmentSize + 100, err: io.ErrUnexpectedEOF}
	n, err := io.Copy(io.Discard, s.Encrypt(src))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("encrypted %d bytes, err %v; want io.ErrUnexpectedEOF", n, err)
	}
}

// TestEncryptAllocs: encrypting 1 MiB as diskblob reads it (256 KiB
// buffers) allocates the reader and its cipher, no segment buffer and
// nothing per segment (sio: 22 allocations, a 64 KiB buffer from a pool
// that lost it whenever the final segment was sealed straight into the
// caller's buffer, and a nonce per segment).
func TestEncryptAllocs(t *testing.T) {
	s := newStreamK(t)
	plain := make([]byte, 1<<20)
	buf := make([]byte, 256<<10)
	src := bytes.NewReader(plain)
	const ceiling = 6 // 4 measured; sio: see the test's doc
	n := testing.AllocsPerRun(50, func() {
		src.Reset(plain)
		// Not io.Discard: its ReadFrom reads in 8 KiB from a pool of its
		// own, so segments would go through sealBufs, whose pooled buffers
		// a GC (other tests of the run, -race) drops at will.
		if _, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, s.Encrypt(src), buf); err != nil {
			t.Fatal(err)
		}
	})
	if n > ceiling {
		t.Errorf("%.0f allocations per 1 MiB encrypted, ceiling %d", n, ceiling)
	}
	t.Logf("%.0f allocations", n)
}

// newStreamK is a stream under a fresh data key for identity "k".
func newStreamK(t testing.TB) *Stream {
	t.Helper()
	env := newEnvelope(t)
	s, err := NewStream(NewDataKey(), &env, "k")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEncryptReadsAhead: read as diskblob reads it (256 KiB buffers), the
// encrypting stream reads its source with Reads of up to four segments, so
// a request body comes off its socket (and through the hashes above the
// encryption) in pieces as large as a plaintext PUT's, not one segment at
// a time: 17 Reads of at most 64 KiB for 1 MiB before the staging buffer.
func TestEncryptReadsAhead(t *testing.T) {
	s := newStreamK(t)
	plain := make([]byte, 1<<20)
	src := &sizeRecorder{r: bytes.NewReader(plain)}
	n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, s.Encrypt(src), make([]byte, 256<<10))
	if want, _ := CiphertextSize(int64(len(plain))); err != nil || n != want {
		t.Fatalf("%d bytes, %v", n, err)
	}
	if src.reads > 6 || src.largest < 3*SegmentSize {
		t.Fatalf("%d Reads of the source, the largest asking %d bytes; want at most 6, asking for up to four segments", src.reads, src.largest)
	}
}

// sizeRecorder counts the Reads of r and the largest buffer one asked to fill.
type sizeRecorder struct {
	r       io.Reader
	reads   int
	largest int
}

func (s *sizeRecorder) Read(p []byte) (int, error) {
	s.reads++
	s.largest = max(s.largest, len(p))
	return s.r.Read(p)
}

// TestEncryptWholeSegmentFills: read as diskblob reads an encrypted body
// (a blob.UnitReader: fills of whole ReadUnit-byte units after a held-back
// tail of up to 4 KiB), every segment is sealed straight into the
// caller's buffer: the stream's own segment buffer (a seal and a copy) is
// never taken. A unit one byte smaller would split every segment.
func TestEncryptWholeSegmentFills(t *testing.T) {
	s := newStreamK(t)
	plain := bytes.Repeat([]byte("whole segments "), (10<<20+12345)/15)
	for _, short := range []int{0, 1} {
		r := s.Encrypt(bytes.NewReader(plain)).(*sealReader)
		unit := r.ReadUnit() - short
		buf := make([]byte, 4*unit+8192)
		var ct []byte
		took, held := 0, 0
		for done := false; !done; {
			p := buf[held:]
			p = p[:len(p)/unit*unit]
			n := 0
			for n < len(p) {
				m, err := r.Read(p[n:])
				n += m
				if r.buf != nil {
					took++
				}
				if err == io.EOF {
					done = true
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			end := held + n
			w := end &^ 4095
			if done {
				w = end
			}
			ct = append(ct, buf[:w]...)
			held = copy(buf, buf[w:end])
		}
		if short == 0 && took > 0 {
			t.Errorf("%d Reads took the stream's own segment buffer", took)
		}
		if short == 1 && took == 0 {
			t.Errorf("units one byte short never split a segment: the test checks nothing")
		}
		got, err := readRange(s, ct, int64(len(plain)), 0, -1)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("unit %d: decrypted %d bytes (%v), not the plaintext", unit, len(got), err)
		}
	}
}

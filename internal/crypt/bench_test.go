package crypt

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/minio/sio"
)

var benchSizes = []int{4 << 10, 1 << 20, 10 << 20}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// BenchmarkEncrypt: per-object key derivation plus streaming encryption,
// read with diskblob's 256 KiB copy buffer.
func BenchmarkEncrypt(b *testing.B) {
	env := newEnvelope(b)
	dk := NewDataKey()
	buf := make([]byte, 256<<10)
	for _, size := range benchSizes {
		plain := make([]byte, size)
		b.Run(sizeName(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				s, err := NewStream(dk, &env, "o/ab/0123456789")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.CopyBuffer(io.Discard, s.Encrypt(bytes.NewReader(plain)), buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecrypt: per-object key derivation plus a whole-object read,
// as net/http's copy did before the reader had WriteTo (Read into a 32 KiB
// buffer) and as io.Copy does now (the reader's WriteTo: four segments
// decrypted straight into a pooled buffer, one Write each).
func BenchmarkDecrypt(b *testing.B) {
	buf := make([]byte, 32<<10)
	for _, size := range benchSizes {
		o := encryptObject(b, size, "o/ab/0123456789")
		fetch := func(off, n int64) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(o.ct[off : off+n])), nil
		}
		for _, via := range []string{"Read32KiB", "WriteTo"} {
			b.Run(sizeName(size)+"/"+via, func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ReportAllocs()
				var w writeCounter
				for b.Loop() {
					s, err := NewStream(o.dk, &o.env, "o/ab/0123456789")
					if err != nil {
						b.Fatal(err)
					}
					rc, err := s.Open(fetch, int64(size), 0, -1)
					if err != nil {
						b.Fatal(err)
					}
					if via == "WriteTo" {
						_, err = io.Copy(&w, rc)
					} else {
						_, err = io.CopyBuffer(&w, struct{ io.Reader }{rc}, buf)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(w.writes)/float64(b.N), "writes/op")
			})
		}
	}
}

// writeCounter discards what is written and counts the calls (a socket's
// write system calls).
type writeCounter struct{ writes int }

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return len(p), nil
}

// BenchmarkAESGCMLineRate is the bare AEAD on 64 KiB segments: the ceiling
// for the two benchmarks above.
func BenchmarkAESGCMLineRate(b *testing.B) {
	blk, _ := aes.NewCipher(make([]byte, 32))
	aead, _ := cipher.NewGCM(blk)
	seg := make([]byte, SegmentSize)
	out := make([]byte, 0, SegmentSize+16)
	nonce := make([]byte, 12)
	b.SetBytes(SegmentSize)
	for b.Loop() {
		out = aead.Seal(out[:0], nonce, seg, nil)
	}
}

// genFetcher produces the ciphertext of an object of zeros of any size on
// demand, segment by segment (each DARE segment is sealed independently from
// the stream nonce and its index), so a 1 GiB object needs no 1 GiB of
// memory or disk. It counts the ciphertext bytes served.
type genFetcher struct {
	s         *Stream
	nonce     [12]byte
	plainSize int64
	served    int64
}

func (g *genFetcher) fetch(off, n int64) (io.ReadCloser, error) {
	var out bytes.Buffer
	first := off / sealedSegment
	nsegs := (n + sealedSegment - 1) / sealedSegment
	for i := first; i < first+nsegs; i++ {
		plain := min(SegmentSize, g.plainSize-i*SegmentSize)
		cfg := g.s.config(uint32(i))
		cfg.Nonce = &g.nonce
		r, err := sio.EncryptReader(io.LimitReader(zeros{}, plain), cfg)
		if err != nil {
			return nil, err
		}
		if _, err := out.ReadFrom(r); err != nil {
			return nil, err
		}
	}
	g.served += int64(out.Len())
	return io.NopCloser(&out), nil
}

// BenchmarkRangeEnd1GiB reads 100 bytes at the end of a 1 GiB encrypted
// object and reports the ciphertext bytes fetched per read.
func BenchmarkRangeEnd1GiB(b *testing.B) {
	const size = 1 << 30
	env := newEnvelope(b)
	s, err := NewStream(NewDataKey(), &env, "o/big")
	if err != nil {
		b.Fatal(err)
	}
	g := &genFetcher{s: s, plainSize: size, nonce: [12]byte{1, 2, 3}}
	buf := make([]byte, 100)
	b.ReportAllocs()
	for b.Loop() {
		rc, err := s.Open(g.fetch, size, size-100, 100)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(rc, buf); err != nil {
			b.Fatal(err)
		}
		rc.Close()
		if !bytes.Equal(buf, make([]byte, 100)) {
			b.Fatal("wrong bytes")
		}
	}
	b.ReportMetric(float64(g.served)/float64(b.N), "ct-bytes/read")
}

// config is sio's configuration of s's stream from segment seq on (for
// the tests that compare with sio or make ciphertext with it).
func (s *Stream) config(seq uint32) sio.Config {
	return sio.Config{
		MinVersion: sio.Version20, MaxVersion: sio.Version20,
		CipherSuites:   []byte{s.cipher.sio()},
		Key:            s.key[:],
		SequenceNumber: seq,
	}
}

// BenchmarkDecryptFile: a whole encrypted object read from a file as
// diskblob serves it (an *os.File under a limit) through WriteTo, the
// encrypted GET's path without the network: reads/op are the read(2)s
// of the ciphertext, writes/op the socket writes.
func BenchmarkDecryptFile(b *testing.B) {
	for _, size := range []int{1 << 20, 10 << 20} {
		o := encryptObject(b, size, "o/ab/file")
		f := ciphertextFile(b, o.ct)
		b.Run(sizeName(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var w writeCounter
			reads := 0
			for b.Loop() {
				rc, err := o.stream.Open(func(off, n int64) (io.ReadCloser, error) {
					cr := &countingReader{r: io.NewSectionReader(f, off, n)}
					return struct {
						io.Reader
						io.Closer
					}{cr, closeFunc(func() error { reads += cr.reads; return nil })}, nil
				}, int64(size), 0, -1)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(&w, rc); err != nil {
					b.Fatal(err)
				}
				rc.Close()
			}
			b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
			b.ReportMetric(float64(w.writes)/float64(b.N), "writes/op")
		})
	}
}

type closeFunc func() error

func (c closeFunc) Close() error { return c() }

// BenchmarkEncryptFromSocket: 10 MiB bodies arriving over a loopback TCP
// connection, encrypted as diskblob reads an encrypted PUT (256 KiB
// buffers, filled), with the plaintext staged four segments at a time
// (the default) and sealed in place one segment a Read (before):
// reads/op are the Reads of the connection; the CPU per MiB (getrusage)
// includes the sending goroutine's, the same for both.
func BenchmarkEncryptFromSocket(b *testing.B) {
	const size = 10 << 20
	for _, mode := range []string{"staged", "in-place"} {
		b.Run(mode, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			body := make([]byte, size)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				for {
					if _, err := c.Write(body); err != nil {
						return
					}
				}
			}()
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			s := newStreamK(b)
			buf := make([]byte, 256<<10)
			reads := 0
			var ru0, ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			for b.Loop() {
				src := &countingReader{r: io.LimitReader(conn, size)}
				r := newSealReader(s.cipher, s.aead, src)
				r.inPlace = mode == "in-place"
				for {
					n := 0
					var err error
					for n < len(buf) && err == nil { // diskblob's fill
						var m int
						m, err = r.Read(buf[n:])
						n += m
					}
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				reads += src.reads
			}
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			mib := float64(b.N) * size / (1 << 20)
			b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
			b.ReportMetric(float64(ru1.Utime.Nano()-ru0.Utime.Nano())/1e6/mib, "user-ms/MiB")
			b.ReportMetric(float64(ru1.Stime.Nano()-ru0.Stime.Nano())/1e6/mib, "sys-ms/MiB")
		})
	}
}

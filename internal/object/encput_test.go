package object

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/blob/diskblob"
)

// BenchmarkEncryptedPutDisk: a 10 MiB PUT through the object service onto
// diskblob (as coffer serve writes it: 256 KiB fills, O_DIRECT, fsync),
// plaintext and server-encrypted, the body arriving in 64 KiB reads as
// from a socket. The CPU per MiB (getrusage, the whole process: hashes,
// seal, copies, system calls) is what encryption adds to a PUT on the
// server's path (issue 23: at most 1.3x AES-GCM's cost per byte, which
// BenchmarkAESGCMLineRate in internal/crypt measures); allocs/op and B/op
// are the perf-sensitive path's allocation counts.
func BenchmarkEncryptedPutDisk(b *testing.B) {
	const size = 10 << 20
	for _, enc := range []bool{false, true} {
		name := "plain"
		if enc {
			name = "encrypted"
		}
		b.Run(fmt.Sprintf("%dMiB/%s", size>>20, name), func(b *testing.B) {
			f, _ := encFixture(b)
			disk, err := diskblob.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { disk.Close() })
			keys := f.svc.cfg.Keys
			f.svc = New(f.meta, disk, testConfig(func(c *Config) {
				c.InlineMax, c.Encrypt, c.Keys, c.GarbageGrace = 0, enc, keys, time.Nanosecond
			}), nil)
			data := markerData(size)
			ctx := context.Background()
			b.SetBytes(size)
			b.ReportAllocs()
			var ru0, ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			for b.Loop() {
				if _, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "k", Body: &chunkyReader{data, 64 << 10}, Size: size}); err != nil {
					b.Fatal(err)
				}
				if _, err := f.svc.CollectGarbage(ctx); err != nil { // the replaced blob: the disk stays at one
					b.Fatal(err)
				}
			}
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			mib := float64(b.N) * size / (1 << 20)
			b.ReportMetric(float64(ru1.Utime.Nano()-ru0.Utime.Nano())/1e6/mib, "user-ms/MiB")
			b.ReportMetric(float64(ru1.Stime.Nano()-ru0.Stime.Nano())/1e6/mib, "sys-ms/MiB")
		})
	}
}

// pausingBody yields r's bytes and, once at least at of them are out,
// says so on paused and blocks until release is closed: a PUT in flight
// whose client stopped sending for a while.
type pausingBody struct {
	r       io.Reader
	at, n   int
	paused  chan<- struct{}
	release <-chan struct{}
}

func (b *pausingBody) Read(p []byte) (int, error) {
	if b.n >= b.at && b.paused != nil {
		b.paused <- struct{}{}
		b.paused = nil
		<-b.release
	}
	m, err := b.r.Read(p[:min(len(p), 64<<10)])
	b.n += m
	return m, err
}

// TestPutMemoryPerStream measures the heap each 10 MiB PUT in flight holds
// on the server's path (the object service onto diskblob), plaintext and
// server-encrypted: 16 PUTs stopped in the middle of their bodies, against
// none (after a first round, so that the MD5 lanes of integrity, made once
// per process, are not counted). A plaintext PUT holds diskblob's buffer
// (256 KiB + 8 KiB) and its hashes; an encrypted one the staging buffer
// of crypt's sealReader besides (four segments of plaintext read ahead,
// 256 KiB + 1). Bounded whatever the object's size.
func TestPutMemoryPerStream(t *testing.T) {
	if testing.Short() {
		t.Skip("memory per stream in flight: run without -short (and the race detector)")
	}
	const size, streams = 10 << 20, 16
	data := markerData(size)
	heap := func() int64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC() // and the pools' victim caches
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc + m.StackInuse)
	}
	per := map[bool]int64{}
	for _, enc := range []bool{false, true} {
		f, _ := encFixture(t)
		disk, err := diskblob.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { disk.Close() })
		keys := f.svc.cfg.Keys
		f.svc = New(f.meta, disk, testConfig(func(c *Config) {
			c.InlineMax, c.Encrypt, c.Keys, c.GarbageGrace = 0, enc, keys, time.Nanosecond
		}), nil)
		round := func() int64 {
			before := heap()
			paused := make(chan struct{})
			release := make(chan struct{})
			done := make(chan error, streams)
			for i := range streams {
				body := &pausingBody{r: bytes.NewReader(data), at: size / 2, paused: paused, release: release}
				go func() {
					_, err := f.svc.Put(t.Context(), f.alice, PutInput{Bucket: "alice-bucket", Key: fmt.Sprint("k", i), Body: body, Size: size})
					done <- err
				}()
			}
			for range streams {
				<-paused
			}
			during := heap()
			close(release)
			for range streams {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.svc.CollectGarbage(t.Context()); err != nil {
				t.Fatal(err)
			}
			return (during - before) / streams
		}
		round()
		per[enc] = round()
		t.Logf("encrypted %v: %d KiB per PUT in flight", enc, per[enc]>>10)
	}
	if per[false] > 512<<10 {
		t.Errorf("a plaintext PUT in flight holds %d KiB, bound 512", per[false]>>10)
	}
	if add := per[true] - per[false]; add > 320<<10 {
		t.Errorf("encryption adds %d KiB per PUT in flight, bound 320 (the staging buffer: 256)", add>>10)
	}
}

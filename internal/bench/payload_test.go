package bench

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"io"
	"testing"
)

func TestPayloadDigests(t *testing.T) {
	for _, size := range []int64{0, 1, 15, 16, 17, 64, 1000, 1 << 20, maxBlock + 5000} {
		src := newPayloadSource(size, 42)
		seen := map[[32]byte]bool{}
		for seq := range uint64(3) {
			p := src.make(7, 3, seq)
			b, err := io.ReadAll(p.reader())
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(b)) != size {
				t.Fatalf("size %d: read %d bytes", size, len(b))
			}
			if got, want := p.sha256, sha256.Sum256(b); got != want {
				t.Errorf("size %d seq %d: sha256 %x, want %x", size, seq, got, want)
			}
			if got, want := p.md5, md5.Sum(b); got != want {
				t.Errorf("size %d seq %d: md5 %x, want %x", size, seq, got, want)
			}
			if size > 0 && seen[p.sha256] {
				t.Errorf("size %d: two payloads with the same content", size)
			}
			seen[p.sha256] = true
		}
	}
}

func TestPayloadSections(t *testing.T) {
	const size = 100_000
	p := newPayloadSource(size, 1).make(1, 2, 3)
	whole, _ := io.ReadAll(p.reader())
	var parts []byte
	for off := int64(0); off < size; off += 30_000 {
		b, _ := io.ReadAll(p.section(off, min(30_000, size-off)))
		parts = append(parts, b...)
	}
	if !bytes.Equal(parts, whole) {
		t.Error("sections do not add up to the payload")
	}
	// The last section spans the prefix and the nonce.
	tail, _ := io.ReadAll(p.section(size-20, 20))
	if !bytes.Equal(tail, whole[size-20:]) {
		t.Error("section across the nonce differs")
	}
}

func TestPayloadDistinctAcrossVUsAndRuns(t *testing.T) {
	src := newPayloadSource(4096, 9)
	a, b, c := src.make(1, 1, 1), src.make(1, 2, 1), src.make(2, 1, 1)
	if a.sha256 == b.sha256 || a.sha256 == c.sha256 {
		t.Error("payloads of different VUs or runs collide")
	}
}

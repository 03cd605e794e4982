package bench

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"io"
	"math/rand/v2"
)

// nonceLen is how many bytes at the end of every payload are unique to it.
const nonceLen = 16

// payloadSource makes payloads of one size without allocating or hashing
// them whole: every payload is the same random prefix (a random block,
// repeated beyond 8 MiB) followed by a 16-byte nonce, and the SHA-256 and
// MD5 states after the prefix are computed once, so a payload's digests
// cost one or two hash blocks.
type payloadSource struct {
	size      int64
	prefixLen int64  // size - nonceSize
	block     []byte // random; the prefix repeats it
	sha, md   []byte // marshalled hash states after the prefix
	nonceSize int
}

// maxBlock bounds the memory of a payload source: bigger payloads repeat
// a random block of this size.
const maxBlock = 8 << 20

func newPayloadSource(size int64, seed uint64) *payloadSource {
	ns := int(min(size, nonceLen))
	p := &payloadSource{size: size, nonceSize: ns, prefixLen: size - int64(ns)}
	p.block = make([]byte, max(min(p.prefixLen, maxBlock), 1))
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	rand.NewChaCha8(key).Read(p.block)
	s, m := sha256.New(), md5.New()
	for off := int64(0); off < p.prefixLen; {
		b := p.block[:min(int64(len(p.block)), p.prefixLen-off)]
		s.Write(b)
		m.Write(b)
		off += int64(len(b))
	}
	p.sha = must(s.(encoding.BinaryMarshaler).MarshalBinary())
	p.md = must(m.(encoding.BinaryMarshaler).MarshalBinary())
	return p
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// payload is one object's content.
type payload struct {
	src    *payloadSource
	nonce  [nonceLen]byte
	sha256 [32]byte
	md5    [16]byte
}

// make returns the payload identified by (run, vu, seq): unique across
// runs, VUs and iterations.
func (s *payloadSource) make(run uint32, vu int, seq uint64) *payload {
	p := &payload{src: s}
	binary.BigEndian.PutUint32(p.nonce[0:], run)
	binary.BigEndian.PutUint32(p.nonce[4:], uint32(vu))
	binary.BigEndian.PutUint64(p.nonce[8:], seq)
	n := p.nonce[nonceLen-s.nonceSize:]
	sh, m := sha256.New(), md5.New()
	if err := sh.(encoding.BinaryUnmarshaler).UnmarshalBinary(s.sha); err != nil {
		panic(err)
	}
	if err := m.(encoding.BinaryUnmarshaler).UnmarshalBinary(s.md); err != nil {
		panic(err)
	}
	sh.Write(n)
	m.Write(n)
	sh.Sum(p.sha256[:0])
	m.Sum(p.md5[:0])
	return p
}

func (p *payload) size() int64       { return p.src.size }
func (p *payload) shaHex() string    { return hex.EncodeToString(p.sha256[:]) }
func (p *payload) etag() string      { return `"` + hex.EncodeToString(p.md5[:]) + `"` }
func (p *payload) tail() []byte      { return p.nonce[nonceLen-p.src.nonceSize:] }
func (p *payload) reader() io.Reader { return p.section(0, p.src.size) }

// section reads bytes [off, off+n) of the payload.
func (p *payload) section(off, n int64) io.Reader {
	return &payloadReader{p: p, off: off, end: off + n}
}

type payloadReader struct {
	p        *payload
	off, end int64
}

func (r *payloadReader) Read(b []byte) (int, error) {
	if r.off >= r.end {
		return 0, io.EOF
	}
	src := r.p.src
	pre := src.prefixLen
	var n int
	if r.off < pre {
		bl := int64(len(src.block))
		i := r.off % bl
		n = copy(b, src.block[i:min(bl, i+min(pre, r.end)-r.off)])
	} else {
		n = copy(b, r.p.tail()[r.off-pre:r.end-pre])
	}
	r.off += int64(n)
	return n, nil
}

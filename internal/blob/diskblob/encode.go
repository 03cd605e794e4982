package diskblob

import (
	"strings"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/errcode"
)

const (
	blobsDir = "blobs"
	tmpDir   = "tmp"
	lockName = "LOCK"
	blobExt  = ".blob"

	// maxSegment is the longest encoded key segment, in bytes: with blobExt
	// it stays under the 255-byte name limit of common file systems.
	maxSegment = 240
)

const upperHex = "0123456789ABCDEF"

// plain reports whether c is stored as itself in a file name.
func plain(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// blobPath returns the path of key's file relative to the store's root:
// blobs/<seg>/.../<last seg>.blob with every segment percent-encoded. It
// returns errcode.InvalidArgument for keys blob.ValidKey refuses and for
// keys with a segment longer than maxSegment once encoded.
func blobPath(key string) (string, error) {
	if err := blob.ValidKey(key); err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(blobsDir) + 1 + 3*len(key) + len(blobExt))
	b.WriteString(blobsDir)
	for seg := range strings.SplitSeq(key, "/") {
		b.WriteByte('/')
		start := b.Len()
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if plain(c) {
				b.WriteByte(c)
				continue
			}
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&0xf])
		}
		if n := b.Len() - start; n > maxSegment {
			return "", errcode.New(errcode.InvalidArgument,
				"blob key segment is %d bytes once encoded for disk; the limit is %d", n, maxSegment)
		}
	}
	b.WriteString(blobExt)
	return b.String(), nil
}

// decodeSegment reverses the encoding of one segment. It accepts only the
// canonical form blobPath produces (upper-case hex, no escaped plain byte),
// so that every name it accepts maps back to itself.
func decodeSegment(name string) (string, bool) {
	if name == "" || len(name) > maxSegment {
		return "", false
	}
	out := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case plain(c):
			out = append(out, c)
		case c == '%' && i+2 < len(name):
			hi, lo := unhex(name[i+1]), unhex(name[i+2])
			if hi < 0 || lo < 0 {
				return "", false
			}
			v := byte(hi<<4 | lo)
			if plain(v) {
				return "", false
			}
			out = append(out, v)
			i += 2
		default:
			return "", false
		}
	}
	return string(out), true
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

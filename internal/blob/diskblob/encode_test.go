package diskblob

import (
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/blobtest"
	"github.com/coffer-storage/coffer/internal/errcode"
)

func TestBlobPath(t *testing.T) {
	tests := []struct {
		key, want string
	}{
		{"a", "blobs/a.blob"},
		{"a/b", "blobs/a/b.blob"},
		{"a/b/c", "blobs/a/b/c.blob"},
		{"AZaz09_-", "blobs/AZaz09_-.blob"},
		{"a.b", "blobs/a%2Eb.blob"},
		{".hidden", "blobs/%2Ehidden.blob"},
		{"x.blob/y", "blobs/x%2Eblob/y.blob"},
		{"...", "blobs/%2E%2E%2E.blob"},
		{"%41", "blobs/%2541.blob"},
		{"é", "blobs/%C3%A9.blob"},
		{"a b+c", "blobs/a%20b%2Bc.blob"},
		{`\~`, "blobs/%5C%7E.blob"},
		{"😀", "blobs/%F0%9F%98%80.blob"},
		{"\x7f\x01", "blobs/%7F%01.blob"},
		{strings.Repeat("a", 240), "blobs/" + strings.Repeat("a", 240) + ".blob"},
	}
	for _, tt := range tests {
		got, err := blobPath(tt.key)
		if err != nil {
			t.Errorf("blobPath(%q): %v", tt.key, err)
			continue
		}
		if got != tt.want {
			t.Errorf("blobPath(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestBlobPathInvalid(t *testing.T) {
	keys := append(blobtest.InvalidKeys(),
		strings.Repeat("a", 241),              // one byte over maxSegment
		"ok/"+strings.Repeat(".", 81),         // 243 bytes encoded
		strings.Repeat("é", 41)+"/ok",         // 246 bytes encoded, not last
		"a/"+strings.Repeat("日", 27)+"/b.txt", // 243 bytes encoded
	)
	for _, key := range keys {
		_, err := blobPath(key)
		if got, want := errcode.Of(err), errcode.InvalidArgument; err == nil || got != want {
			t.Errorf("blobPath(%q) = %v (code %v), want %v", key, err, got, want)
		}
	}
}

func TestDecodeSegmentRoundTrip(t *testing.T) {
	for _, key := range blobtest.WeirdKeys() {
		p, err := blobPath(key)
		if err != nil {
			t.Errorf("blobPath(%q): %v", key, err)
			continue
		}
		segs := strings.Split(strings.TrimSuffix(strings.TrimPrefix(p, blobsDir+"/"), blobExt), "/")
		var dec []string
		for _, seg := range segs {
			if strings.Contains(seg, ".") {
				t.Errorf("blobPath(%q) has a segment with a dot: %q", key, seg)
			}
			d, ok := decodeSegment(seg)
			if !ok {
				t.Errorf("decodeSegment(%q) failed (key %q)", seg, key)
			}
			dec = append(dec, d)
		}
		if got := strings.Join(dec, "/"); got != key {
			t.Errorf("decoding blobPath(%q) = %q", key, got)
		}
	}
	// Every byte value round-trips.
	var all []byte
	for c := 1; c < 256; c++ {
		all = append(all, byte(c))
	}
	for i := 0; i < len(all); i += 80 {
		seg := string(all[i:min(i+80, len(all))])
		var b strings.Builder
		for j := 0; j < len(seg); j++ {
			if plain(seg[j]) {
				b.WriteByte(seg[j])
			} else {
				b.WriteString("%" + strings.ToUpper(hex2(seg[j])))
			}
		}
		if got, ok := decodeSegment(b.String()); !ok || got != seg {
			t.Errorf("decodeSegment(%q) = %q, %v; want %q", b.String(), got, ok, seg)
		}
	}
}

func hex2(c byte) string { return string([]byte{upperHex[c>>4], upperHex[c&0xf]}) }

func TestDecodeSegmentRejects(t *testing.T) {
	for _, name := range []string{
		"", "a.b", ".", "..", "%", "%4", "%2e", "%41", "%5f", "%5F", "%2D", "%ZZ", "%G0", "a%", "a b", "é",
		strings.Repeat("a", 241),
	} {
		if got, ok := decodeSegment(name); ok {
			t.Errorf("decodeSegment(%q) = %q, want it refused", name, got)
		}
	}
}

func TestMaxKeyFitsOnDisk(t *testing.T) {
	// The longest valid key that encodes to the most bytes.
	seg := strings.Repeat("é", 40) // 80 bytes, 240 encoded
	var segs []string
	n := 0
	for n+len(seg)+1 <= blob.MaxKeyLen {
		segs = append(segs, seg)
		n += len(seg) + 1
	}
	key := strings.Join(segs, "/")
	p, err := blobPath(key)
	if err != nil {
		t.Fatalf("blobPath(%d-byte key): %v", len(key), err)
	}
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Put(t.Context(), key, strings.NewReader("x"), 1); err != nil {
		t.Fatalf("Put of a %d-byte key (%d-byte path): %v", len(key), len(p), err)
	}
}

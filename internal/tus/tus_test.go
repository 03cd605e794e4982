package tus

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"testing"
)

func TestParseChecksum(t *testing.T) {
	sum := sha1.Sum([]byte("hello"))
	b64 := base64.StdEncoding.EncodeToString(sum[:])
	tests := []struct {
		in      string
		wantAlg algorithm
		wantErr bool
	}{
		{"sha1 " + b64, "sha1", false},
		{"SHA1 " + b64, "sha1", false},
		{"sha256 " + b64, "", true}, // wrong digest length
		{"crc32 AAAA", "", true},
		{"sha1", "", true},
		{"sha1 !!!", "", true},
		{"", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseChecksum(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (got.alg != tc.wantAlg || !bytes.Equal(got.want, sum[:])) {
				t.Errorf("got %+v, want %s %x", got, tc.wantAlg, sum)
			}
		})
	}
}

func FuzzParseChecksum(f *testing.F) {
	f.Add("sha1 qvTGHdzF6KLavt4PO0gs2a6pQ00=")
	f.Add("sha256 LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=")
	f.Add("md5  ")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseChecksum(s)
		if err == nil && len(c.want) != c.alg.new().Size() {
			t.Fatalf("%q: digest of %d bytes for %s", s, len(c.want), c.alg)
		}
	})
}

func TestHashStateRoundTrip(t *testing.T) {
	h := newHashes()
	h.md5.Write([]byte("abc"))
	h.sha.Write([]byte("abc"))
	g, ok := unmarshalHashes(h.marshal())
	if !ok {
		t.Fatal("unmarshal failed")
	}
	g.md5.Write([]byte("def"))
	g.sha.Write([]byte("def"))
	w := newHashes()
	w.md5.Write([]byte("abcdef"))
	w.sha.Write([]byte("abcdef"))
	if !bytes.Equal(g.md5.Sum(nil), w.md5.Sum(nil)) || !bytes.Equal(g.sha.Sum(nil), w.sha.Sum(nil)) {
		t.Error("resumed hashes differ")
	}
	for _, bad := range [][]byte{nil, {0}, {0, 200, 1}} {
		if _, ok := unmarshalHashes(bad); ok {
			t.Errorf("unmarshalHashes(%x) ok", bad)
		}
	}
}

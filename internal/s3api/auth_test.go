package s3api

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// TestDecodeSHA256: decodeSHA256 accepts exactly what hex.DecodeString
// accepts with a 32-byte result, and decodes it the same.
func TestDecodeSHA256(t *testing.T) {
	valid := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	cases := []string{valid, strings.ToUpper(valid), "", "00", valid[:63], valid + "0", valid + "00",
		"g" + valid[1:], valid[:10] + " " + valid[11:], valid[:63] + "Z", strings.Repeat("f", 64), strings.Repeat("0", 64)}
	for i := range 64 {
		for _, c := range []byte{'/', ':', '@', 'G', '`', 'g', 'A', 'a', 'F', 'f', '9', 0x80} {
			b := []byte(valid)
			b[i] = c
			cases = append(cases, string(b))
		}
	}
	for _, s := range cases {
		want, err := hex.DecodeString(s)
		wantOK := err == nil && len(want) == 32
		var got [32]byte
		ok := decodeSHA256(&got, s)
		if ok != wantOK || ok && !bytes.Equal(got[:], want) {
			t.Errorf("decodeSHA256(%q) = %x, %v; hex.DecodeString: %x, %v", s, got, ok, want, err)
		}
	}
}

package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHMACMatchesCryptoHMAC checks the allocation-free HMAC-SHA256 against
// crypto/hmac for keys up to and beyond one block (the secret of
// "AWS4"+secret can be longer) and messages around the stack buffer's size.
func TestHMACMatchesCryptoHMAC(t *testing.T) {
	for _, kl := range []int{0, 1, 32, 63, 64, 65, 100} {
		for _, ml := range []int{0, 1, 150, hmacStack - 64, hmacStack - 63, hmacStack, 4000} {
			key := []byte(strings.Repeat("k", kl))
			msg := strings.Repeat("m", ml)
			m := hmac.New(sha256.New, key)
			m.Write([]byte(msg))
			want := m.Sum(nil)
			if got := hmacSHA256(key, msg); !hmac.Equal(got[:], want) {
				t.Errorf("hmacSHA256 key %d msg %d: %x, want %x", kl, ml, got, want)
			}
			if got := signature(key, []byte(msg)); string(got[:]) != hex.EncodeToString(want) {
				t.Errorf("signature key %d msg %d: %s, want %x", kl, ml, got, want)
			}
		}
	}
}

// TestVerifyAllocs keeps the allocations of verifying a signed header
// request with a warm key cache under a ceiling: 11 with crypto/hmac (its
// two hash states and pads each call), 6 with hmacSum.
func TestVerifyAllocs(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	r, _ := http.NewRequest("GET", "http://127.0.0.1:9000/bucket/key?x-id=GetObject", nil)
	r.Header.Set("X-Amz-Checksum-Mode", "ENABLED")
	secret := strings.Repeat("s", 70) // "AWS4"+secret is longer than a block
	if err := SignRequest(r, "CFTESTKEY0000000001", secret, "", EmptySHA256, now); err != nil {
		t.Fatal(err)
	}
	lookup := func(string) (string, error) { return secret, nil }
	opts := Options{Now: func() time.Time { return now }, Keys: NewKeyCache(0)}
	if _, err := Verify(r, lookup, opts); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		if _, err := Verify(r, lookup, opts); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("Verify: %.0f allocations", n)
	// 6 before the SignedHeaders list and the dates were remembered
	// (issue 23's fifth pass), 4 since.
	if n > 4 {
		t.Errorf("Verify: %.0f allocations, ceiling 4", n)
	}
}

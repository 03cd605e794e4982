package postgres

import (
	"strings"
	"testing"
)

// FuzzParseChange: a notification payload parses into a change exactly
// when it is topic ":" key with a non-empty topic without ':', and the
// change prints back to the payload.
func FuzzParseChange(f *testing.F) {
	for _, s := range []string{"user:abc", "key:CF123", ":x", "nocolon", "user:", "a:b:c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		c, ok := parseChange(payload)
		i := strings.IndexByte(payload, ':')
		if want := i > 0; ok != want {
			t.Fatalf("parseChange(%q) ok = %v, want %v", payload, ok, want)
		}
		if ok && (c.Topic+":"+c.Key != payload || strings.Contains(c.Topic, ":")) {
			t.Fatalf("parseChange(%q) = %+v", payload, c)
		}
	})
}

package metasql

import (
	"strings"
	"testing"
)

// unescapeLike undoes escapeLike, reporting whether every wildcard of s
// was escaped.
func unescapeLike(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return "", false
			}
			i++
			b.WriteByte(s[i])
		case '%', '_':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// FuzzEscapeLike: an escaped search string holds no bare wildcard and
// means exactly the string searched for.
func FuzzEscapeLike(f *testing.F) {
	for _, s := range []string{"", "a%b", `a\_b`, `\\%`, "alice@example.com", "100%_done\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := unescapeLike(escapeLike(s))
		if !ok || got != s {
			t.Fatalf("escapeLike(%q) = %q: unescapes to %q (ok %v)", s, escapeLike(s), got, ok)
		}
	})
}

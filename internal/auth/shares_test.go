package auth

import (
	"testing"
	"time"
)

func TestShareGrant(t *testing.T) {
	s := &Shares{key: DeriveKey([]byte("master key of this test, 32 b.."), "share-grant")}
	other := &Shares{key: DeriveKey([]byte("another master key, 32 bytes..."), "share-grant")}
	now := time.Unix(1_700_000_000, 0)
	g := s.ShareGrant("sh_1", now.Add(time.Hour))
	for _, tc := range []struct {
		name  string
		s     *Shares
		share string
		grant string
		at    time.Time
		want  bool
	}{
		{"valid", s, "sh_1", g, now, true},
		{"expired", s, "sh_1", g, now.Add(time.Hour), false},
		{"another share", s, "sh_2", g, now, false},
		{"another server key", other, "sh_1", g, now, false},
		{"tampered expiry", s, "sh_1", "AAAAAH__-_8" + g[11:], now, false},
		{"tampered mac", s, "sh_1", g[:len(g)-2] + "AA", now, false},
		{"empty", s, "sh_1", "", now, false},
		{"no dot", s, "sh_1", "abc", now, false},
		{"line break in mac", s, "sh_1", g[:len(g)-4] + "\n" + g[len(g)-4:], now, false},
		{"line break in expiry", s, "sh_1", g[:3] + "\r" + g[3:], now, false},
	} {
		if got := tc.s.CheckShareGrant(tc.share, tc.grant, tc.at); got != tc.want {
			t.Errorf("%s: CheckShareGrant = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func FuzzCheckShareGrant(f *testing.F) {
	s := &Shares{key: DeriveKey([]byte("master key of this test, 32 b.."), "share-grant")}
	f.Add(s.ShareGrant("sh_1", time.Unix(2_000_000_000, 0)))
	f.Add("a.b")
	f.Add("..")
	f.Fuzz(func(t *testing.T, g string) {
		if s.CheckShareGrant("sh_1", g, time.Unix(1_000_000_000, 0)) && g != s.ShareGrant("sh_1", time.Unix(2_000_000_000, 0)) {
			// Only a grant this key made can pass; the seed is the one.
			t.Fatalf("forged grant %q accepted", g)
		}
	})
}

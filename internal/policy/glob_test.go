package policy

import (
	"math/rand/v2"
	"testing"
)

// refMatch is the textbook recursive glob: * any run, ? one character.
func refMatch(p, s []rune) bool {
	if len(p) == 0 {
		return len(s) == 0
	}
	switch p[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if refMatch(p[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return len(s) > 0 && refMatch(p[1:], s[1:])
	}
	return len(s) > 0 && s[0] == p[0] && refMatch(p[1:], s[1:])
}

// TestGlobAgainstReference compares the compiled matcher (leftmost
// segments, fixed tails, jumps) with the recursive one on random patterns.
func TestGlobAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(alpha string, n int) string {
		r := []rune(alpha)
		out := make([]rune, rng.IntN(n+1))
		for i := range out {
			out[i] = r[rng.IntN(len(r))]
		}
		return string(out)
	}
	for i := 0; i < 20000; i++ {
		p, s := gen("ab*?é", 7), gen("abé", 9)
		g, err := compileGlob(p, globOptions{wild: true})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := g.match(s, nil), refMatch([]rune(p), []rune(s)); got != want {
			t.Fatalf("match(%q, %q) = %v, want %v", p, s, got, want)
		}
	}
}

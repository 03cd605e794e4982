package meta

import (
	"fmt"
	"testing"
)

func TestCORSMatch(t *testing.T) {
	c := &CORS{Rules: []CORSRule{
		{AllowedOrigins: []string{"https://*.example.com"}, AllowedMethods: []string{"PUT"}, AllowedHeaders: []string{"x-amz-*", "Content-Type"}},
		{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}},
		{AllowedOrigins: []string{"http://exact.test"}, AllowedMethods: []string{"PUT", "DELETE"}, AllowedHeaders: []string{"*"}},
	}}
	for _, tc := range []struct {
		origin, method string
		headers        []string
		rule           int // index of the matching rule, -1 none
		any            bool
	}{
		{"https://a.example.com", "PUT", []string{"X-Amz-Date", "content-type"}, 0, false},
		{"https://.example.com", "PUT", nil, 0, false},
		{"https://example.com", "PUT", nil, -1, false},
		{"https://a.example.com.evil", "PUT", nil, -1, false},
		{"https://a.example.com", "PUT", []string{"authorization"}, -1, false},
		{"https://a.example.com", "GET", []string{"authorization"}, -1, false},
		{"https://a.example.com", "GET", nil, 1, true},
		{"http://exact.test", "DELETE", []string{"anything", "x-y"}, 2, false},
		{"http://exact.test:80", "DELETE", nil, -1, false},
		{"http://EXACT.test", "DELETE", nil, -1, false},
		{"http://exact.test", "get", nil, -1, false},
	} {
		r, any := c.Match(tc.origin, tc.method, tc.headers)
		got := -1
		for i := range c.Rules {
			if r == &c.Rules[i] {
				got = i
			}
		}
		if got != tc.rule || any != tc.any {
			t.Errorf("Match(%q, %q, %q) = rule %d, any %v; want %d, %v", tc.origin, tc.method, tc.headers, got, any, tc.rule, tc.any)
		}
	}
	if r, _ := (*CORS)(nil).Match("x", "GET", nil); r != nil {
		t.Error("a nil configuration matched")
	}
}

func TestWildcardMatch(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"", "", true}, {"*", "", true}, {"*", "abc", true}, {"a*", "a", true}, {"*a", "ba", true},
		{"a*c", "abbbc", true}, {"a*c", "abbb", false}, {"a*b*c", "aXbYc", true}, {"a*b*c", "aXcYb", false},
		{"abc", "abd", false}, {"x-amz-*", "x-amz-", true}, {"**", "q", true},
	} {
		if got := wildcardMatch(tc.p, tc.s); got != tc.want {
			t.Errorf("wildcardMatch(%q, %q) = %v", tc.p, tc.s, got)
		}
	}
}

// BenchmarkCORSMatch: the cost an actual request with Origin pays, on a
// configuration of 100 rules where only the last one matches (S3's
// maximum, the worst case).
func BenchmarkCORSMatch(b *testing.B) {
	c := &CORS{}
	for i := range MaxCORSRules {
		c.Rules = append(c.Rules, CORSRule{AllowedOrigins: []string{fmt.Sprintf("https://*.app%d.example.com", i)},
			AllowedMethods: []string{"GET", "PUT"}, AllowedHeaders: []string{"*"}})
	}
	origin := fmt.Sprintf("https://eu.app%d.example.com", MaxCORSRules-1)
	for b.Loop() {
		if r, _ := c.Match(origin, "PUT", nil); r == nil {
			b.Fatal("no match")
		}
	}
}

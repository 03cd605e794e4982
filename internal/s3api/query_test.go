package s3api

import (
	"fmt"
	"net/url"
	"reflect"
	"testing"
)

// TestParseQueryOpHint: the query aws-sdk-go-v2 adds to every request
// ("x-id=GetObject") is parsed once and shared; anything else is parsed
// per request, as url.URL.Query does, with the same result.
func TestParseQueryOpHint(t *testing.T) {
	same := func(a, b url.Values) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }
	for _, raw := range []string{"x-id=GetObject", "x-id=ListObjectsV2", "x-id=PutObject"} {
		a, b := parseQuery(raw), parseQuery(raw)
		want, _ := url.ParseQuery(raw)
		if !reflect.DeepEqual(a, want) || !same(a, b) {
			t.Errorf("%q: %v (shared %v), want %v shared", raw, a, same(a, b), want)
		}
	}
	for _, raw := range []string{"", "uploads", "x-id=", "x-id=GetObject&versionId=3", "x-id=Get%20Object", "x-id=Get+Object",
		"versionId=x&x-id=GetObject", "x-id=GetObject;x", "X-Id=GetObject"} {
		a, b := parseQuery(raw), parseQuery(raw)
		want, _ := url.ParseQuery(raw)
		if !reflect.DeepEqual(a, want) {
			t.Errorf("%q: %v, want %v", raw, a, want)
		}
		if len(a) > 0 && same(a, b) {
			t.Errorf("%q: shared, want a map per request", raw)
		}
	}
	// Allocation counts run without -short (scripts/test.sh: without the
	// race detector, which changes them).
	if !testing.Short() {
		if n := testing.AllocsPerRun(100, func() { parseQuery("x-id=GetObject") }); n != 0 {
			t.Errorf("x-id=GetObject: %.0f allocations, want 0", n)
		}
	}
}

// TestParseQueryOpHintsBounded: hints beyond maxOpHints are parsed per
// request, not kept.
func TestParseQueryOpHintsBounded(t *testing.T) {
	for i := range 2 * maxOpHints {
		raw := fmt.Sprintf("x-id=Bounded%d", i)
		if v := parseQuery(raw); v.Get("x-id") != raw[len("x-id="):] {
			t.Fatalf("%q: %v", raw, v)
		}
	}
	if n := opHints.Len(); n > maxOpHints {
		t.Errorf("%d hints kept, at most %d", n, maxOpHints)
	}
}

func BenchmarkParseQuery(b *testing.B) {
	for _, raw := range []string{"x-id=GetObject", "x-id=GetObject&versionId=3"} {
		b.Run(raw, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				parseQuery(raw)
			}
		})
	}
}

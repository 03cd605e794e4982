package sigv4

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseRemembered: the SignedHeaders lists and the dates parsing
// remembers give the same results as a fresh parse, and a malformed one
// is refused however often it comes (only what parsed is remembered).
func TestParseRemembered(t *testing.T) {
	const header = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240501/us-east-1/s3/aws4_request, " +
		"SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for range 3 {
		a, err := ParseAuthorization(header)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.SignedHeaders, []string{"host", "x-amz-content-sha256", "x-amz-date"}) || a.Date != "20240501" || a.AccessKeyID != "AKIDEXAMPLE" {
			t.Fatalf("parsed %+v", a)
		}
	}
	for _, bad := range []string{
		strings.Replace(header, "host;x-amz", "host;X-Amz", 1),
		strings.Replace(header, "host;x-amz", "host;;x-amz", 1),
		strings.Replace(header, "x-amz-date,", "x-amz-date;host,", 1),
		strings.Replace(header, "20240501", "20241301", 1),
		strings.Replace(header, "20240501", "2024050a", 1),
	} {
		for i := range 3 {
			if _, err := ParseAuthorization(bad); err == nil {
				t.Fatalf("%q accepted (try %d)", bad, i)
			}
		}
	}
	for _, c := range []struct {
		s  string
		ok bool
	}{{"20240501T120000Z", true}, {"20240501T120000Z", true}, {"20240501T250000Z", false}, {"20240501T250000Z", false}, {"20240501T120001Z", true}} {
		got, ok := parseAmzDate(c.s)
		want, err := time.Parse(amzDateLayout, c.s)
		if ok != c.ok || ok != (err == nil) || !got.Equal(want) || got.Location() != want.Location() {
			t.Errorf("parseAmzDate(%q) = %v, %v; time.Parse: %v, %v", c.s, got, ok, want, err)
		}
	}
}

// TestSignedListsBounded: at most maxSignedLists lists are remembered;
// the others are still parsed right.
func TestSignedListsBounded(t *testing.T) {
	for i := range maxSignedLists + 20 {
		var a Authorization
		s := "host;x-amz-date;x-custom-" + strings.Repeat("a", i%50) + string(rune('a'+i/50))
		if msg := a.parseSignedHeaders(s); msg != "" || len(a.SignedHeaders) != 3 || a.SignedHeaders[2] != strings.Split(s, ";")[2] {
			t.Fatalf("%q: %q %v", s, msg, a.SignedHeaders)
		}
	}
	if n := signedLists.Len(); n > maxSignedLists {
		t.Errorf("%d lists remembered, bound %d", n, maxSignedLists)
	}
}

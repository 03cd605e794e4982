package object

import (
	"maps"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func TestValidKey(t *testing.T) {
	good := []string{"a", "a/b", "a//b", "dir/", ".hidden", "...", "日本/語", "a b+c%d", strings.Repeat("k", 1024)}
	bad := []string{"", "..", "a/../b", "./a", "a/.", "a\x00b", "a\nb", "\xff", strings.Repeat("k", 1025)}
	for _, k := range good {
		if err := ValidKey(k); err != nil {
			t.Errorf("ValidKey(%q) = %v, want nil", k, err)
		}
	}
	for _, k := range bad {
		if err := ValidKey(k); err == nil {
			t.Errorf("ValidKey(%q) = nil, want error", k)
		}
	}
}

func FuzzValidKey(f *testing.F) {
	f.Add("a/b")
	f.Add("a/../b")
	f.Fuzz(func(t *testing.T, k string) {
		if ValidKey(k) != nil {
			return
		}
		if k == "" || len(k) > MaxKeyLen || !utf8.ValidString(k) || strings.ContainsRune(k, 0) {
			t.Fatalf("accepted %q", k)
		}
		for _, seg := range strings.Split(k, "/") {
			if seg == ".." || seg == "." {
				t.Fatalf("accepted %q", k)
			}
		}
	})
}

func TestValidBucketName(t *testing.T) {
	good := []string{"abc", "my-bucket", "a.b.c", "u-0123456789abcdef", strings.Repeat("a", 63)}
	bad := []string{"ab", "ABC", "-abc", "abc-", "a..b", "a.-b", "192.168.1.1", "xn--abc", "abc-s3alias", "a_b", strings.Repeat("a", 64)}
	for _, n := range good {
		if err := ValidBucketName(n); err != nil {
			t.Errorf("ValidBucketName(%q) = %v", n, err)
		}
	}
	for _, n := range bad {
		if ValidBucketName(n) == nil {
			t.Errorf("ValidBucketName(%q) = nil, want error", n)
		}
	}
}

// TestStandardMetadata: the standard headers kept in an object's metadata
// (StandardMetadataPrefix) are left out of UserMetadata and counted apart
// from the user metadata's 2 KiB, within their own bound.
func TestStandardMetadata(t *testing.T) {
	cc := StandardMetadataPrefix + "cache-control"
	md := map[string]string{"a": "b", cc: "max-age=60"}
	if got := UserMetadata(md); !maps.Equal(got, map[string]string{"a": "b"}) {
		t.Errorf("UserMetadata = %v", got)
	}
	if got := UserMetadata(map[string]string{cc: "x"}); got != nil {
		t.Errorf("UserMetadata of standard headers only = %v, want nil", got)
	}
	// 2 KiB of user metadata and a long Content-Disposition: fine.
	full := map[string]string{"ab": strings.Repeat("v", MaxMetadataSize-2), StandardMetadataPrefix + "content-disposition": strings.Repeat("d", 4000)}
	if err := ValidMetadata(full); err != nil {
		t.Errorf("user metadata at its bound with a standard header: %v", err)
	}
	full[StandardMetadataPrefix+"expires"] = strings.Repeat("e", MaxStandardMetadataSize)
	if err := ValidMetadata(full); !errcode.Is(err, errcode.TooLarge) {
		t.Errorf("standard headers over their bound: %v", err)
	}
}

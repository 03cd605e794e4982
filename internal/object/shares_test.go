package object

import (
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

func TestShareKey(t *testing.T) {
	folder := meta.Share{Key: "docs/", Folder: true}
	file := meta.Share{Key: "docs/a.txt"}
	for _, tc := range []struct {
		name string
		sh   meta.Share
		rel  string
		want string
		code errcode.Code
	}{
		{"file itself", file, "", "docs/a.txt", errcode.Unknown},
		{"path under a file", file, "b.txt", "", errcode.NotFound},
		{"folder root", folder, "", "", errcode.NotFound},
		{"folder file", folder, "sub/b.txt", "docs/sub/b.txt", errcode.Unknown},
		{"dot-dot", folder, "../secret.txt", "", errcode.InvalidArgument},
		{"dot-dot inside", folder, "sub/../../secret.txt", "", errcode.InvalidArgument},
		{"dot", folder, "./a.txt", "", errcode.InvalidArgument},
		{"leading slash", folder, "/secret.txt", "", errcode.InvalidArgument},
		{"empty segment", folder, "a//b", "", errcode.InvalidArgument},
		{"encoded dots are a name", folder, "%2e%2e/x", "docs/%2e%2e/x", errcode.Unknown},
		{"NUL", folder, "a\x00", "", errcode.InvalidArgument},
		{"whole bucket", meta.Share{Folder: true}, "x", "x", errcode.Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ShareKey(tc.sh, tc.rel)
			if code := errcode.Of(err); got != tc.want || (err != nil) != (tc.code != errcode.Unknown) || (err != nil && code != tc.code) {
				t.Errorf("ShareKey(%q, %q) = %q, %v; want %q, code %v", tc.sh.Key, tc.rel, got, err, tc.want, tc.code)
			}
		})
	}
}

// FuzzShareKey: whatever the path, a key through a folder share lies
// under its prefix and is a valid key.
func FuzzShareKey(f *testing.F) {
	for _, s := range []string{"a", "../a", "a/../../b", "%2e%2e", "//x", "a/./b", "\x00"} {
		f.Add("docs/", s)
	}
	f.Fuzz(func(t *testing.T, prefix, rel string) {
		if prefix != "" && (ValidKey(prefix) != nil || !strings.HasSuffix(prefix, "/")) {
			return
		}
		key, err := ShareKey(meta.Share{Key: prefix, Folder: true}, rel)
		if err != nil {
			return
		}
		if !strings.HasPrefix(key, prefix) || ValidKey(key) != nil || strings.Contains(key[len(prefix):], "//") {
			t.Fatalf("ShareKey(%q, %q) = %q: outside the share or invalid", prefix, rel, key)
		}
		for seg := range strings.SplitSeq(key, "/") {
			if seg == ".." || seg == "." {
				t.Fatalf("ShareKey(%q, %q) = %q has a %q segment", prefix, rel, key, seg)
			}
		}
	})
}

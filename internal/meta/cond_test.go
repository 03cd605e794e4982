package meta

import (
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func TestCondCheck(t *testing.T) {
	cur := Object{Bucket: "b", Key: "k", ETag: "e1", BlobKey: "x"}
	v := Version(cur)
	for _, c := range []struct {
		name   string
		cond   Cond
		exists bool
		ok     bool
		reason string
	}{
		{"nothing, exists", Cond{}, true, true, ""},
		{"nothing, missing", Cond{}, false, true, ""},
		{"if-none-match, missing", Cond{IfNoneMatch: true}, false, true, ""},
		{"if-none-match, exists", Cond{IfNoneMatch: true}, true, false, ""},
		{"if-match star, exists", Cond{IfMatch: "*"}, true, true, ""},
		{"if-match star, missing", Cond{IfMatch: "*"}, false, false, "no_object"},
		{"if-none-match etag same", Cond{IfNoneMatchETag: "e1"}, true, false, ""},
		{"if-none-match etag other", Cond{IfNoneMatchETag: "e2"}, true, true, ""},
		{"if-none-match etag, missing", Cond{IfNoneMatchETag: "e1"}, false, true, ""},
		{"if-match same", Cond{IfMatch: "e1"}, true, true, ""},
		{"if-match other", Cond{IfMatch: "e2"}, true, false, ""},
		{"if-match, missing", Cond{IfMatch: "e1"}, false, false, "no_object"},
		{"if-version same", Cond{IfVersion: v}, true, true, ""},
		{"if-version other", Cond{IfVersion: "nope"}, true, false, "object_changed"},
		{"if-version, missing", Cond{IfVersion: v}, false, false, "object_changed"},
		{"if-match and if-version, version wrong", Cond{IfMatch: "e1", IfVersion: "nope"}, true, false, "object_changed"},
		{"if-tags same", Cond{IfTags: TagsKey(nil)}, true, true, ""},
		{"if-tags other", Cond{IfTags: TagsKey([]Tag{{"k", "v"}})}, true, false, "object_changed"},
		{"if-tags, missing", Cond{IfTags: TagsKey(nil)}, false, false, "object_changed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := cur
			if !c.exists {
				o = Object{}
			}
			err := c.cond.Check(o, c.exists)
			if got := err == nil; got != c.ok {
				t.Fatalf("Check = %v, want ok %v", err, c.ok)
			}
			if err == nil {
				return
			}
			if !errcode.Is(err, errcode.PreconditionFailed) {
				t.Errorf("code of %v, want PreconditionFailed", err)
			}
			if got := errcode.As(err).Detail["reason"]; c.reason != "" && got != c.reason {
				t.Errorf("reason %v, want %q", got, c.reason)
			}
		})
	}
}

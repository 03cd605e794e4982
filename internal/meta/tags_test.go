package meta

import (
	"fmt"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func TestCheckTags(t *testing.T) {
	many := func(n int) []Tag {
		ts := make([]Tag, n)
		for i := range ts {
			ts[i] = Tag{Key: fmt.Sprintf("k%d", i), Value: "v"}
		}
		return ts
	}
	for _, c := range []struct {
		name string
		tags []Tag
		max  int
		ok   bool
	}{
		{"none", nil, MaxObjectTags, true},
		{"one", []Tag{{"project", "coffer"}}, MaxObjectTags, true},
		{"empty value", []Tag{{"k", ""}}, MaxObjectTags, true},
		{"allowed punctuation", []Tag{{"a+b-c=d.e_f:g/h@i", "x y+z"}}, MaxObjectTags, true},
		{"unicode letters", []Tag{{"ключ", "värde 日本"}}, MaxObjectTags, true},
		{"ten", many(10), MaxObjectTags, true},
		{"eleven", many(11), MaxObjectTags, false},
		{"fifty on a bucket", many(50), MaxBucketTags, true},
		{"fifty-one on a bucket", many(51), MaxBucketTags, false},
		{"empty key", []Tag{{"", "v"}}, MaxObjectTags, false},
		{"key of 128", []Tag{{strings.Repeat("é", 128), "v"}}, MaxObjectTags, true},
		{"key of 129", []Tag{{strings.Repeat("k", 129), "v"}}, MaxObjectTags, false},
		{"value of 256", []Tag{{"k", strings.Repeat("ü", 256)}}, MaxObjectTags, true},
		{"value of 257", []Tag{{"k", strings.Repeat("v", 257)}}, MaxObjectTags, false},
		{"duplicate key", []Tag{{"k", "1"}, {"k", "2"}}, MaxObjectTags, false},
		{"keys differing in case", []Tag{{"k", "1"}, {"K", "2"}}, MaxObjectTags, true},
		{"aws prefix", []Tag{{"aws:created", "v"}}, MaxObjectTags, false},
		{"AWS prefix", []Tag{{"AWS:x", "v"}}, MaxObjectTags, false},
		{"aws without colon", []Tag{{"awsome", "v"}}, MaxObjectTags, true},
		{"bad character in key", []Tag{{"a&b", "v"}}, MaxObjectTags, false},
		{"bad character in value", []Tag{{"k", "a?b"}}, MaxObjectTags, false},
		{"invalid UTF-8", []Tag{{"k\xff", "v"}}, MaxObjectTags, false},
		{"NUL", []Tag{{"k", "a\x00"}}, MaxObjectTags, false},
	} {
		err := CheckTags(c.tags, c.max)
		wantChecked(t, c.name, err, c.ok)
		if err != nil {
			want := "invalid_tag"
			if len(c.tags) > c.max {
				want = "tag_count"
			}
			if e := errcode.As(err); e == nil || e.Detail["reason"] != want {
				t.Errorf("%s: %v, want reason %s", c.name, err, want)
			}
		}
	}
}

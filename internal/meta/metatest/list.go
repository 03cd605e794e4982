package metatest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var listTests = []test{
	{name: "ByteOrder", fn: testListByteOrder},
	{name: "Prefix", fn: testListPrefix},
	{name: "Delimiter", fn: testListDelimiter},
	{name: "MultiByteDelimiter", fn: testListMultiByteDelimiter},
	{name: "BoundsNotUTF8", fn: testListBoundsNotUTF8},
	{name: "Paging", fn: testListPaging},
	{name: "RollUpRuns", fn: testListRollUpRuns},
	{name: "StartAfter", fn: testListStartAfter},
	{name: "BucketMissing", fn: testListBucketMissing},
	{name: "EmptyBucket", fn: testListEmpty},
}

// putKeys stores an object at each key of alice's bucket, returning them
// by key.
func putKeys(t *testing.T, s store, keys ...string) map[string]meta.Object {
	t.Helper()
	objs := make([]meta.Object, len(keys))
	byKey := make(map[string]meta.Object, len(keys))
	for i, k := range keys {
		objs[i] = obj("alice", k, int64(i))
		byKey[k] = objs[i]
	}
	put(t, s, objs...)
	return byKey
}

// entries flattens a page into "o:key" and "p:prefix" entries in byte
// order, checking that each part is sorted.
func entries(t *testing.T, p meta.ListPage) []string {
	t.Helper()
	var keys []string
	for _, o := range p.Objects {
		keys = append(keys, o.Key)
	}
	if !slices.IsSorted(keys) {
		t.Errorf("page objects are not in byte order: %q", keys)
	}
	if !slices.IsSorted(p.CommonPrefixes) {
		t.Errorf("page common prefixes are not in byte order: %q", p.CommonPrefixes)
	}
	out := make([]string, 0, len(keys)+len(p.CommonPrefixes))
	i, j := 0, 0
	for i < len(keys) || j < len(p.CommonPrefixes) {
		if j == len(p.CommonPrefixes) || (i < len(keys) && keys[i] < p.CommonPrefixes[j]) {
			out = append(out, "o:"+keys[i])
			i++
		} else {
			out = append(out, "p:"+p.CommonPrefixes[j])
			j++
		}
	}
	return out
}

// reference is the listing meta.ListOptions describes, computed naively
// over every key (ignoring Limit).
func reference(keys []string, opts meta.ListOptions) []string {
	sorted := slices.Clone(keys)
	slices.Sort(sorted) // Go compares strings bytewise
	prefix, delim, after := opts.Prefix, opts.Delimiter, opts.StartAfter
	rollup := func(k string) (string, bool) {
		if delim == "" {
			return "", false
		}
		i := strings.Index(k[len(prefix):], delim)
		if i < 0 {
			return "", false
		}
		return k[:len(prefix)+i+len(delim)], true
	}
	// A StartAfter that is a common prefix skips everything under it.
	skip := ""
	if strings.HasPrefix(after, prefix) {
		if cp, ok := rollup(after); ok && cp == after {
			skip = after
		}
	}
	var out []string
	for _, k := range sorted {
		if !strings.HasPrefix(k, prefix) || k <= after || (skip != "" && strings.HasPrefix(k, skip)) {
			continue
		}
		if cp, ok := rollup(k); ok {
			if e := "p:" + cp; len(out) == 0 || out[len(out)-1] != e {
				out = append(out, e)
			}
			continue
		}
		out = append(out, "o:"+k)
	}
	return out
}

// listOnce lists one page of alice's bucket.
func listOnce(t *testing.T, s store, opts meta.ListOptions) meta.ListPage {
	t.Helper()
	p, err := s.ListObjects(t.Context(), "alice", opts)
	ok(t, err, fmt.Sprintf("ListObjects %+v", opts))
	return p
}

// wantList checks one page holding everything: want, and the reference.
func wantList(t *testing.T, s store, keys []string, opts meta.ListOptions, want ...string) {
	t.Helper()
	p := listOnce(t, s, opts)
	got := entries(t, p)
	if p.Truncated {
		t.Errorf("ListObjects %+v: Truncated on a page holding everything", opts)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
		t.Errorf("ListObjects %+v =\n\t%q\nwant\n\t%q", opts, got, want)
	}
	if ref := reference(keys, opts); fmt.Sprint(ref) != fmt.Sprint(want) {
		t.Fatalf("bad test: the reference listing %q differs from want", ref)
	}
}

func testListByteOrder(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	keys := []string{"z", "a/b", "é", "a", "Z", "日本", "a-b", "a.b", "a/"}
	stored := putKeys(t, s, keys...)
	wantList(t, s, keys, meta.ListOptions{},
		"o:Z", "o:a", "o:a-b", "o:a.b", "o:a/", "o:a/b", "o:z", "o:é", "o:日本")
	// Listed objects carry every field.
	for _, o := range listOnce(t, s, meta.ListOptions{}).Objects {
		sameObject(t, o, stored[o.Key], "listed object "+o.Key)
	}
}

func testListPrefix(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	keys := []string{"z", "a/b", "é", "a", "Z", "日本", "日本語", "a-b", "a.b", "a/", "ab"}
	putKeys(t, s, keys...)
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"a", []string{"o:a", "o:a-b", "o:a.b", "o:a/", "o:a/b", "o:ab"}},
		{"a/", []string{"o:a/", "o:a/b"}},
		{"a/b", []string{"o:a/b"}},
		{"é", []string{"o:é"}},
		{"日本", []string{"o:日本", "o:日本語"}},
		{"nope", nil},
	} {
		wantList(t, s, keys, meta.ListOptions{Prefix: tc.prefix}, tc.want...)
	}
}

func testListDelimiter(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	keys := []string{"photos/", "photos/a.jpg", "photos/2024/", "photos/2024/b.jpg", "docs/x.txt",
		"readme", "photos.txt", "/rooted", "a//b"}
	putKeys(t, s, keys...)
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"p:/", "p:a/", "p:docs/", "o:photos.txt", "p:photos/", "o:readme"}},
		{"photos/", []string{"o:photos/", "p:photos/2024/", "o:photos/a.jpg"}},
		{"photos/2024/", []string{"o:photos/2024/", "o:photos/2024/b.jpg"}},
		{"photos", []string{"o:photos.txt", "p:photos/"}},
		{"a/", []string{"p:a//"}},
		{"docs/x.txt", []string{"o:docs/x.txt"}},
	} {
		wantList(t, s, keys, meta.ListOptions{Prefix: tc.prefix, Delimiter: "/"}, tc.want...)
	}
}

func testListMultiByteDelimiter(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	keys := []string{"2024→01→a", "2024→01→b", "2024→02", "2024-x", "z", "a--b--c", "a--d", "a-e", "b"}
	putKeys(t, s, keys...)
	wantList(t, s, keys, meta.ListOptions{Delimiter: "→"}, "o:2024-x", "p:2024→", "o:a--b--c", "o:a--d", "o:a-e", "o:b", "o:z")
	wantList(t, s, keys, meta.ListOptions{Prefix: "2024→", Delimiter: "→"}, "p:2024→01→", "o:2024→02")
	wantList(t, s, keys, meta.ListOptions{Delimiter: "--"}, "o:2024-x", "o:2024→01→a", "o:2024→01→b", "o:2024→02", "p:a--", "o:a-e", "o:b", "o:z")
	wantList(t, s, keys, meta.ListOptions{Prefix: "a--", Delimiter: "--"}, "p:a--b--", "o:a--d")
}

// testListBoundsNotUTF8 lists where the scan bounds (the PrefixEnd of a
// prefix or of a common prefix) are not valid UTF-8: "¿" is C2 BF, so its
// PrefixEnd is C2 C0. A backend that does not compare raw bytes skips or
// repeats entries here.
func testListBoundsNotUTF8(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	keys := []string{"¿", "¿a", "¿¿", "À", "Àb", "¾", "a¿1", "a¿2", "aÀ", "b", "\U0010ffff", "\U0010ffffx"}
	putKeys(t, s, keys...)
	wantList(t, s, keys, meta.ListOptions{Prefix: "¿"}, "o:¿", "o:¿a", "o:¿¿")
	wantList(t, s, keys, meta.ListOptions{Prefix: "a¿"}, "o:a¿1", "o:a¿2")
	wantList(t, s, keys, meta.ListOptions{Prefix: "\U0010ffff"}, "o:\U0010ffff", "o:\U0010ffffx")
	wantList(t, s, keys, meta.ListOptions{Delimiter: "¿"},
		"p:a¿", "o:aÀ", "o:b", "o:¾", "p:¿", "o:À", "o:Àb", "o:\U0010ffff", "o:\U0010ffffx")
	wantList(t, s, keys, meta.ListOptions{Prefix: "¿", Delimiter: "¿"}, "o:¿", "o:¿a", "p:¿¿")
	wantList(t, s, keys, meta.ListOptions{Delimiter: "¿", StartAfter: "¿"}, "o:À", "o:Àb", "o:\U0010ffff", "o:\U0010ffffx")
	wantList(t, s, keys, meta.ListOptions{Delimiter: "¿", StartAfter: "a¿"}, "o:aÀ", "o:b", "o:¾", "p:¿", "o:À", "o:Àb", "o:\U0010ffff", "o:\U0010ffffx")
	for limit := 1; limit <= 3; limit++ {
		for _, opts := range []meta.ListOptions{{Delimiter: "¿"}, {Prefix: "¿"}, {}} {
			opts.Limit = limit
			wantPaged(t, s, keys, opts)
		}
	}
}

// pagingKeys are ~60 keys at several levels, with folder markers.
func pagingKeys() []string {
	var keys []string
	for _, top := range []string{"a", "b", "c", "d"} {
		keys = append(keys, top, top+"/")
		for i := range 9 {
			keys = append(keys, fmt.Sprintf("%s/%d", top, i))
		}
		for i := range 3 {
			keys = append(keys, fmt.Sprintf("%s/sub/%d", top, i))
		}
	}
	return append(keys, "a-b", "a.b", "é", "é/1", "日本/x", "日本/y", "z", "Z")
}

// wantPaged lists page by page with opts.Limit, continuing from
// NextStartAfter, and checks the pages add up to the reference listing.
func wantPaged(t *testing.T, s store, keys []string, opts meta.ListOptions) {
	t.Helper()
	want := reference(keys, opts)
	var got []string
	for pages := 0; ; pages++ {
		if pages > len(keys)+1 {
			t.Fatalf("paging %+v: no end after %d pages; so far %q", opts, pages, got)
		}
		p := listOnce(t, s, opts)
		es := entries(t, p)
		if len(es) > opts.Limit {
			t.Fatalf("paging %+v: a page of %d entries, beyond the limit", opts, len(es))
		}
		got = append(got, es...)
		if !p.Truncated {
			break
		}
		if len(es) == 0 {
			t.Fatalf("paging %+v: an empty truncated page", opts)
		}
		if last := es[len(es)-1][2:]; p.NextStartAfter != last {
			t.Fatalf("paging %+v: NextStartAfter = %q, want the page's last entry %q", opts, p.NextStartAfter, last)
		}
		opts.StartAfter = p.NextStartAfter
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
		t.Errorf("paging %+v =\n\t%q\nwant\n\t%q", opts, got, want)
	}
}

func testListPaging(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	keys := pagingKeys()
	putKeys(t, s, keys...)
	variants := []meta.ListOptions{
		{},
		{Delimiter: "/"},
		{Prefix: "a", Delimiter: "/"},
		{Prefix: "a/", Delimiter: "/"},
		{Prefix: "b/"},
		{Prefix: "日本/", Delimiter: "/"},
		{Delimiter: "/", StartAfter: "b/"},
		{StartAfter: "c/5"},
	}
	for _, v := range variants {
		// One big page is the reference listing...
		all := listOnce(t, s, v)
		if got, want := entries(t, all), reference(keys, v); fmt.Sprint(got) != fmt.Sprint(want) || all.Truncated {
			t.Errorf("ListObjects %+v =\n\t%q (truncated %v)\nwant\n\t%q", v, got, all.Truncated, want)
		}
		// ... and so is every paging of it.
		for limit := 1; limit <= 7; limit++ {
			v.Limit = limit
			wantPaged(t, s, keys, v)
		}
	}
	// Limit 0 means the default (1000), which holds everything here.
	wantList(t, s, keys, meta.ListOptions{Delimiter: "/"}, reference(keys, meta.ListOptions{Delimiter: "/"})...)
}

func testListStartAfter(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	keys := pagingKeys()
	putKeys(t, s, keys...)
	// A common prefix as StartAfter skips everything under it.
	p := listOnce(t, s, meta.ListOptions{Delimiter: "/", StartAfter: "b/", Limit: 2})
	if got, want := entries(t, p), []string{"o:c", "p:c/"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("StartAfter a common prefix: %q, want %q", got, want)
	}
	p = listOnce(t, s, meta.ListOptions{Prefix: "a/", Delimiter: "/", StartAfter: "a/sub/", Limit: 5})
	if got := entries(t, p); len(got) != 0 || p.Truncated {
		t.Errorf("StartAfter the last common prefix: %q (truncated %v), want an empty, complete page", got, p.Truncated)
	}
	// A StartAfter that is not a key starts at the next key.
	p = listOnce(t, s, meta.ListOptions{StartAfter: "c/4x", Limit: 2})
	if got, want := entries(t, p), []string{"o:c/5", "o:c/6"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("StartAfter between keys: %q, want %q", got, want)
	}
	// Inside a common prefix, the listing resumes there and rolls up again.
	p = listOnce(t, s, meta.ListOptions{Delimiter: "/", StartAfter: "c/4", Limit: 2})
	if got, want := entries(t, p), []string{"p:c/", "o:d"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("StartAfter inside a common prefix: %q, want %q", got, want)
	}
	// Past the end.
	p = listOnce(t, s, meta.ListOptions{StartAfter: "日本/y"})
	if got := entries(t, p); len(got) != 0 || p.Truncated {
		t.Errorf("StartAfter the last key: %q (truncated %v), want an empty, complete page", got, p.Truncated)
	}
}

func testListBucketMissing(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	_, err := s.ListObjects(t.Context(), "nope", meta.ListOptions{})
	wantCode(t, err, errcode.NotFound, "ListObjects of a missing bucket")
}

func testListEmpty(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	for _, opts := range []meta.ListOptions{{}, {Delimiter: "/"}, {Prefix: "a", Limit: 1}} {
		p := listOnce(t, s, opts)
		if len(p.Objects) != 0 || len(p.CommonPrefixes) != 0 || p.Truncated {
			t.Errorf("ListObjects %+v of an empty bucket = %+v, want an empty, complete page", opts, p)
		}
	}
}

// testListRollUpRuns: runs of folders of many keys among plain keys,
// with one- and multi-byte delimiters, listed whole and paged: a backend
// that skips past a folder's keys in one scan (meta.SkipScanFunc) lists
// what the reference does.
func testListRollUpRuns(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	var keys []string
	for i := range 24 {
		keys = append(keys, fmt.Sprintf("f%02d", i), fmt.Sprintf("f%02d→x", i))
		for j := range i % 5 * 7 {
			keys = append(keys, fmt.Sprintf("d%02d/k%02d", i, j))
			if j%3 == 0 {
				keys = append(keys, fmt.Sprintf("d%02d/s/k%02d", i, j), fmt.Sprintf("d%02d→→k%02d", i, j))
			}
		}
	}
	putKeys(t, s, keys...)
	for _, v := range []meta.ListOptions{
		{Delimiter: "/"},
		{Delimiter: "→"},
		{Delimiter: "→→"},
		{Prefix: "d", Delimiter: "/"},
		{Prefix: "d03/", Delimiter: "/"},
		{Delimiter: "/", StartAfter: "d04/"},
		{Delimiter: "/", StartAfter: "d07/k05"},
		{Prefix: "d", Delimiter: "→", StartAfter: "d08"},
	} {
		if got, want := entries(t, listOnce(t, s, v)), reference(keys, v); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ListObjects %+v =\n\t%q\nwant\n\t%q", v, got, want)
		}
		for _, limit := range []int{1, 2, 5, 17} {
			v.Limit = limit
			wantPaged(t, s, keys, v)
		}
	}
}

package s3api

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// taggingBody is a Tagging body of k=v pairs.
func taggingBody(kv ...string) []byte {
	var b strings.Builder
	b.WriteString(`<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet>`)
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString("<Tag><Key>" + kv[i] + "</Key><Value>" + kv[i+1] + "</Value></Tag>")
	}
	b.WriteString("</TagSet></Tagging>")
	return []byte(b.String())
}

// tagsOf is what a GetObjectTagging/GetBucketTagging answer holds.
func tagsOf(t *testing.T, r s3Result) []meta.Tag {
	t.Helper()
	tags, err := parseTagging(r.Body.Bytes())
	if err != nil {
		t.Fatalf("tagging answer %s: %v", r.Body, err)
	}
	return tags
}

func TestParseTaggingHeader(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []meta.Tag
		code string
	}{
		{"", nil, ""},
		{"a=b", []meta.Tag{{Key: "a", Value: "b"}}, ""},
		{"a=b&c=d", []meta.Tag{{Key: "a", Value: "b"}, {Key: "c", Value: "d"}}, ""},
		{"key%20one=value+two&k%3D=%40", []meta.Tag{{Key: "key one", Value: "value two"}, {Key: "k=", Value: "@"}}, ""},
		{"novalue", []meta.Tag{{Key: "novalue", Value: ""}}, ""},
		{"a=", []meta.Tag{{Key: "a", Value: ""}}, ""},
		{"a=b&&c=d", []meta.Tag{{Key: "a", Value: "b"}, {Key: "c", Value: "d"}}, ""},
		{"a=1&a=2", nil, s3err.InvalidTag},
		{"=v", nil, s3err.InvalidTag},
		{"aws%3Ax=1", nil, s3err.InvalidTag},
		{"a=%zz", nil, s3err.InvalidArgument},
		{"a=b?c", nil, s3err.InvalidTag},
		{"k0&k1&k2&k3&k4&k5&k6&k7&k8&k9&k10", nil, s3err.BadRequest},
		{strings.Repeat("k", 129) + "=v", nil, s3err.InvalidTag},
	} {
		got, err := parseTaggingHeader(tc.in)
		if code := s3err.Translate(err).Code; err != nil && code != tc.code || err == nil && tc.code != "" {
			t.Errorf("parseTaggingHeader(%q): %v, want %q", tc.in, err, tc.code)
			continue
		}
		if err == nil && !slices.Equal(got, tc.want) {
			t.Errorf("parseTaggingHeader(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestObjectTagging(t *testing.T) {
	e := newS3Env(t)
	// x-amz-tagging on PutObject; x-amz-tagging-count on GET and HEAD.
	e.alice("PUT", "/b/k", []byte("data"), "X-Amz-Tagging", "project=coffer&tier=gold").want(t, 200, "")
	for _, m := range []string{"GET", "HEAD"} {
		if got := e.alice(m, "/b/k", nil).Header().Get("X-Amz-Tagging-Count"); got != "2" {
			t.Errorf("%s x-amz-tagging-count = %q, want 2", m, got)
		}
	}
	r := e.alice("GET", "/b/k?tagging", nil)
	r.want(t, 200, "")
	if got, want := tagsOf(t, r), []meta.Tag{{Key: "project", Value: "coffer"}, {Key: "tier", Value: "gold"}}; !slices.Equal(got, want) {
		t.Errorf("GetObjectTagging = %v, want %v", got, want)
	}
	if r.Header().Get("X-Amz-Version-Id") != "" {
		t.Errorf("an unversioned bucket's tagging answer names version %q", r.Header().Get("X-Amz-Version-Id"))
	}
	// Replaced whole.
	body := taggingBody("owner", "ops")
	e.alice("PUT", "/b/k?tagging", body).want(t, 200, "")
	if got := tagsOf(t, e.alice("GET", "/b/k?tagging", nil)); !slices.Equal(got, []meta.Tag{{Key: "owner", Value: "ops"}}) {
		t.Errorf("after PutObjectTagging: %v", got)
	}
	if got := e.alice("HEAD", "/b/k", nil).Header().Get("X-Amz-Tagging-Count"); got != "1" {
		t.Errorf("x-amz-tagging-count = %q, want 1", got)
	}
	e.alice("DELETE", "/b/k?tagging", nil).want(t, 204, "")
	r = e.alice("GET", "/b/k?tagging", nil)
	if got := tagsOf(t, r); len(got) != 0 || !strings.Contains(r.Body.String(), "<TagSet></TagSet>") {
		t.Errorf("after DeleteObjectTagging: %v (%s)", got, r.Body)
	}
	if got := e.alice("HEAD", "/b/k", nil).Header().Get("X-Amz-Tagging-Count"); got != "" {
		t.Errorf("x-amz-tagging-count of an untagged object = %q", got)
	}
	// Refusals change nothing.
	e.store.Writes = nil
	eleven := []string{}
	for i := range 11 {
		eleven = append(eleven, "k"+string(rune('a'+i)), "v")
	}
	for _, tc := range []struct {
		name, method, target string
		body                 []byte
		hdr                  []string
		status               int
		code                 string
	}{
		{"eleven tags", "PUT", "/b/k?tagging", taggingBody(eleven...), nil, 400, s3err.BadRequest},
		{"duplicate keys", "PUT", "/b/k?tagging", taggingBody("a", "1", "a", "2"), nil, 400, s3err.InvalidTag},
		{"aws: key", "PUT", "/b/k?tagging", taggingBody("aws:x", "1"), nil, 400, s3err.InvalidTag},
		{"long value", "PUT", "/b/k?tagging", taggingBody("a", strings.Repeat("v", 257)), nil, 400, s3err.InvalidTag},
		{"no TagSet", "PUT", "/b/k?tagging", []byte(`<Tagging></Tagging>`), nil, 400, s3err.MalformedXML},
		{"no Key", "PUT", "/b/k?tagging", []byte(`<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>`), nil, 400, s3err.MalformedXML},
		{"unknown element", "PUT", "/b/k?tagging", []byte(`<Tagging><TagSet></TagSet><X/></Tagging>`), nil, 400, s3err.MalformedXML},
		{"not XML", "PUT", "/b/k?tagging", []byte(`tags`), nil, 400, s3err.MalformedXML},
		{"missing key", "PUT", "/b/nope?tagging", taggingBody("a", "b"), nil, 404, s3err.NoSuchKey},
		{"missing key GET", "GET", "/b/nope?tagging", nil, nil, 404, s3err.NoSuchKey},
		{"bad version", "GET", "/b/k?tagging&versionId=", nil, nil, 400, s3err.InvalidArgument},
		{"PutObject bad header", "PUT", "/b/k2", []byte("x"), []string{"X-Amz-Tagging", "a=1&a=2"}, 400, s3err.InvalidTag},
		{"CreateMultipartUpload bad header", "POST", "/b/k2?uploads", nil, []string{"X-Amz-Tagging", "aws:k=v"}, 400, s3err.InvalidTag},
		{"CopyObject bad header", "PUT", "/b/k2", nil, []string{"X-Amz-Copy-Source", "/b/k", "X-Amz-Tagging-Directive", "REPLACE",
			"X-Amz-Tagging", "%zz"}, 400, s3err.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.alice(tc.method, tc.target, tc.body, tc.hdr...).want(t, tc.status, tc.code)
			e.noWrites(t)
		})
	}
	e.do(req{method: "GET", target: "/b/k?tagging", as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.do(req{method: "PUT", target: "/b/k?tagging", body: taggingBody("a", "b"), as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.noWrites(t)
}

func TestCopyAndMultipartTagging(t *testing.T) {
	e := newS3Env(t)
	e.alice("PUT", "/b/src", []byte("data"), "X-Amz-Tagging", "a=1").want(t, 200, "")
	for _, tc := range []struct {
		name string
		hdr  []string
		want []meta.Tag
	}{
		{"default: COPY", nil, []meta.Tag{{Key: "a", Value: "1"}}},
		{"COPY ignores x-amz-tagging", []string{"X-Amz-Tagging-Directive", "COPY", "X-Amz-Tagging", "b=2"}, []meta.Tag{{Key: "a", Value: "1"}}},
		{"REPLACE", []string{"X-Amz-Tagging-Directive", "REPLACE", "X-Amz-Tagging", "b=2"}, []meta.Tag{{Key: "b", Value: "2"}}},
		{"REPLACE with none", []string{"X-Amz-Tagging-Directive", "REPLACE"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.alice("PUT", "/b/dst", nil, append([]string{"X-Amz-Copy-Source", "/b/src"}, tc.hdr...)...).want(t, 200, "")
			if got := tagsOf(t, e.alice("GET", "/b/dst?tagging", nil)); !slices.Equal(got, tc.want) {
				t.Errorf("tags of the copy = %v, want %v", got, tc.want)
			}
		})
	}
	// A copy onto itself that replaces the tags is a change.
	e.alice("PUT", "/b/src", nil, "X-Amz-Copy-Source", "/b/src", "X-Amz-Tagging-Directive", "REPLACE", "X-Amz-Tagging", "c=3").want(t, 200, "")
	if got := tagsOf(t, e.alice("GET", "/b/src?tagging", nil)); !slices.Equal(got, []meta.Tag{{Key: "c", Value: "3"}}) {
		t.Errorf("tags after a self-copy with REPLACE = %v", got)
	}
	e.alice("POST", "/b/mp?uploads", nil, "X-Amz-Tagging", "m=p").want(t, 200, "")
	if got := e.store.LastCreate.Tags; !slices.Equal(got, []meta.Tag{{Key: "m", Value: "p"}}) {
		t.Errorf("CreateMultipartUpload passed tags %v", got)
	}
}

func TestVersionedTagging(t *testing.T) {
	e := newS3Env(t)
	e.setVersioning(t, "Enabled")
	v1 := e.alice("PUT", "/b/k", []byte("one"), "X-Amz-Tagging", "v=1").Header().Get("X-Amz-Version-Id")
	v2 := e.alice("PUT", "/b/k", []byte("two")).Header().Get("X-Amz-Version-Id")
	r := e.alice("GET", "/b/k?tagging", nil)
	if got := tagsOf(t, r); len(got) != 0 || r.Header().Get("X-Amz-Version-Id") != v2 {
		t.Errorf("latest's tags %v, version %q; want none of %q", got, r.Header().Get("X-Amz-Version-Id"), v2)
	}
	r = e.alice("GET", "/b/k?tagging&versionId="+v1, nil)
	if got := tagsOf(t, r); !slices.Equal(got, []meta.Tag{{Key: "v", Value: "1"}}) || r.Header().Get("X-Amz-Version-Id") != v1 {
		t.Errorf("version 1's tags %v, version %q", got, r.Header().Get("X-Amz-Version-Id"))
	}
	r = e.alice("PUT", "/b/k?tagging&versionId="+v1, taggingBody("v", "one"))
	r.want(t, 200, "")
	if r.Header().Get("X-Amz-Version-Id") != v1 {
		t.Errorf("PutObjectTagging of version 1 answered version %q", r.Header().Get("X-Amz-Version-Id"))
	}
	if got := tagsOf(t, e.alice("GET", "/b/k?tagging&versionId="+v1, nil)); !slices.Equal(got, []meta.Tag{{Key: "v", Value: "one"}}) {
		t.Errorf("version 1's tags after PutObjectTagging: %v", got)
	}
	m := e.alice("DELETE", "/b/k", nil).Header().Get("X-Amz-Version-Id")
	e.alice("GET", "/b/k?tagging", nil).want(t, 404, s3err.NoSuchKey)
	e.alice("GET", "/b/k?tagging&versionId="+m, nil).want(t, 405, s3err.MethodNotAllowed)
	e.alice("PUT", "/b/k?tagging&versionId="+m, taggingBody("a", "b")).want(t, 405, s3err.MethodNotAllowed)
	e.alice("DELETE", "/b/k?tagging&versionId="+v1, nil).want(t, 204, "")
	e.alice("GET", "/b/k?tagging&versionId="+meta.NewVersionID(testNow, ""), nil).want(t, 404, s3err.NoSuchVersion)
}

func TestBucketTagging(t *testing.T) {
	e := newS3Env(t)
	e.alice("GET", "/b?tagging", nil).want(t, 404, s3err.NoSuchTagSet)
	body := taggingBody("team", "storage", "cost-center", "42")
	e.alice("PUT", "/b?tagging", body).want(t, 204, "")
	if got, want := tagsOf(t, e.alice("GET", "/b?tagging", nil)), []meta.Tag{{Key: "team", Value: "storage"}, {Key: "cost-center", Value: "42"}}; !slices.Equal(got, want) {
		t.Errorf("GetBucketTagging = %v, want %v", got, want)
	}
	e.store.Writes = nil
	fiftyOne := []string{}
	for i := range 51 {
		fiftyOne = append(fiftyOne, "k"+strings.Repeat("x", i), "v")
	}
	e.alice("PUT", "/b?tagging", taggingBody(fiftyOne...)).want(t, 400, s3err.BadRequest)
	e.alice("PUT", "/b?tagging", []byte("<Tagging/>")).want(t, 400, s3err.MalformedXML)
	e.do(req{method: "PUT", target: "/b?tagging", body: body, as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.do(req{method: "GET", target: "/b?tagging", as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.noWrites(t)
	e.alice("DELETE", "/b?tagging", nil).want(t, 204, "")
	e.alice("GET", "/b?tagging", nil).want(t, 404, s3err.NoSuchTagSet)
	e.alice("GET", "/nope?tagging", nil).want(t, 404, s3err.NoSuchBucket)
}

// FuzzTagging: the Tagging body and x-amz-tagging parsers never panic;
// what they accept is a tag set CheckTags then accepts or refuses as
// InvalidTag (BadRequest if too many), and a header parsed is one
// CheckTags accepts.
func FuzzTagging(f *testing.F) {
	f.Add([]byte(`<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>`), "a=b&c=d")
	f.Add([]byte(`<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>`), "k%20=v+w&&x")
	f.Add([]byte(`<Tagging><TagSet></TagSet><TagSet/></Tagging>`), "a=%zz&aws%3Ax=1")
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		parsedStrictly[tagging](t, body)
		if tags, err := parseTagging(body); err == nil {
			if err := meta.CheckTags(tags, meta.MaxObjectTags); err != nil && s3err.Translate(err).Code != s3err.InvalidTag && s3err.Translate(err).Code != s3err.BadRequest {
				t.Fatalf("CheckTags of a parsed body: %v, want InvalidTag or BadRequest", err)
			}
		}
		tags, err := parseTaggingHeader(header)
		if err != nil {
			if c := s3err.Translate(err).Code; c != s3err.InvalidTag && c != s3err.BadRequest && c != s3err.InvalidArgument {
				t.Fatalf("parseTaggingHeader(%q): %v", header, err)
			}
			return
		}
		if err := meta.CheckTags(tags, meta.MaxObjectTags); err != nil {
			t.Fatalf("parseTaggingHeader(%q) accepted %v, which CheckTags refuses: %v", header, tags, err)
		}
	})
}

// TestTagErrorsInS3Words: a refused tag set answers S3's code and S3's
// own message for each fault (clients and versitygw's suite compare
// them): too many tags is BadRequest, not InvalidTag, on the object and
// bucket operations and in x-amz-tagging.
func TestTagErrorsInS3Words(t *testing.T) {
	e := newS3Env(t)
	e.alice("PUT", "/b/k", []byte("data")).want(t, 200, "")
	e.store.Writes = nil
	many := func(n int) []string {
		var kv []string
		for i := range n {
			kv = append(kv, fmt.Sprintf("k%d", i), "v")
		}
		return kv
	}
	const (
		badKey   = "The TagKey you have provided is invalid"
		badValue = "The TagValue you have provided is invalid"
		dup      = "Cannot provide multiple Tags with the same key"
	)
	for _, tc := range []struct {
		name, target string
		body         []byte
		hdr          []string
		code, msg    string
	}{
		{"object: eleven tags", "/b/k?tagging", taggingBody(many(11)...), nil, s3err.BadRequest, "Object tags cannot be greater than 10"},
		{"bucket: 51 tags", "/b?tagging", taggingBody(many(51)...), nil, s3err.BadRequest, "Bucket tag count cannot be greater than 50"},
		{"header: eleven tags", "/b/k2", []byte("x"), []string{"X-Amz-Tagging", "k0&k1&k2&k3&k4&k5&k6&k7&k8&k9&k10"}, s3err.BadRequest, "Object tags cannot be greater than 10"},
		{"object: duplicate key", "/b/k?tagging", taggingBody("a", "1", "a", "2"), nil, s3err.InvalidTag, dup},
		{"bucket: duplicate key", "/b?tagging", taggingBody("a", "1", "a", "2"), nil, s3err.InvalidTag, dup},
		{"object: key character", "/b/k?tagging", taggingBody("user!name", "v"), nil, s3err.InvalidTag, badKey},
		{"bucket: key character", "/b?tagging", taggingBody("ok", "v", "a*b", "v"), nil, s3err.InvalidTag, badKey},
		{"object: long key", "/b/k?tagging", taggingBody(strings.Repeat("k", 129), "v"), nil, s3err.InvalidTag, badKey},
		{"bucket: long key", "/b?tagging", taggingBody(strings.Repeat("k", 129), "v"), nil, s3err.InvalidTag, badKey},
		{"object: value character", "/b/k?tagging", taggingBody("k", "name?test"), nil, s3err.InvalidTag, badValue},
		{"bucket: long value", "/b?tagging", taggingBody("k", strings.Repeat("v", 257)), nil, s3err.InvalidTag, badValue},
		{"object: aws: prefix", "/b/k?tagging", taggingBody("aws:x", "v"), nil, s3err.InvalidTag, "Your TagKey cannot be prefixed with aws:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.alice("PUT", tc.target, tc.body, tc.hdr...)
			r.want(t, 400, tc.code)
			if r.message != tc.msg {
				t.Errorf("message %q, want %q", r.message, tc.msg)
			}
			e.noWrites(t)
		})
	}
}

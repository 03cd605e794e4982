package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// The version routes (versions.go) over the fake: each route, its
// refusals, and that a refusal changes nothing and shows no data.

// versionEnv has alice's bucket b versioned with two versions of k
// ("first", then "second"), the administrator's rb versioned with one
// version of k, and alice's gateway bucket gw.
func versionEnv(t *testing.T) (e *apiEnv, v1, v2, other meta.Object) {
	e = newAPIEnv(t)
	for _, name := range []string{"b", "rb"} {
		b := e.f.Buckets[name]
		b.Versioning = meta.VersioningEnabled
		e.f.Buckets[name] = b
	}
	e.f.Buckets["gw"] = meta.Bucket{Name: "gw", OwnerID: alice, Gateway: "s3://x?endpoint=http://127.0.0.1:1", CreatedAt: testMod}
	v1 = e.f.Add(meta.Object{Bucket: "b", Key: "k", ContentType: "text/plain"}, []byte("first"))
	v2 = e.f.Add(meta.Object{Bucket: "b", Key: "k", ContentType: "text/plain"}, []byte("second"))
	other = e.f.Add(meta.Object{Bucket: "rb", Key: "k"}, []byte("the administrator's secret"))
	e.f.Add(meta.Object{Bucket: "b", Key: "k2"}, []byte("a longer key")) // listed after k's versions
	return e, v1, v2, other
}

type versionsPage struct {
	Versions []struct {
		VersionID    string `json:"version_id"`
		Size         int64
		ETag         string
		IsLatest     bool `json:"is_latest"`
		DeleteMarker bool `json:"delete_marker"`
	}
	NextCursor string `json:"next_cursor"`
}

func decode(t *testing.T, r result, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body.Bytes(), v); err != nil {
		t.Fatalf("%v: %s", err, r.Body)
	}
}

// noData fails if a refusal's body holds one of the versions' bytes.
func noData(t *testing.T, r result) {
	t.Helper()
	for _, s := range []string{"first", "second", "secret"} {
		if bytes.Contains(r.Body.Bytes(), []byte(s)) {
			t.Errorf("a refusal sent data: %s", r.Body)
		}
	}
}

func TestVersionList(t *testing.T) {
	e, v1, v2, _ := versionEnv(t)
	r := e.do("GET", "/api/v1/buckets/b/versions/k", "tok-alice", nil)
	r.want(t, 200, "")
	var p versionsPage
	decode(t, r, &p)
	if len(p.Versions) != 2 || p.Versions[0].VersionID != v2.VersionID || !p.Versions[0].IsLatest || p.Versions[0].Size != 6 ||
		p.Versions[1].VersionID != v1.VersionID || p.Versions[1].IsLatest || p.Versions[1].ETag != v1.ETag || p.NextCursor != "" {
		t.Errorf("versions %+v, want v2 (latest) and v1 of k only", p)
	}
	// Pages of one.
	var seen []string
	target := "/api/v1/buckets/b/versions/k?limit=1"
	for range 5 {
		r := e.do("GET", target, "tok-alice", nil)
		r.want(t, 200, "")
		var p versionsPage
		decode(t, r, &p)
		for _, v := range p.Versions {
			seen = append(seen, v.VersionID)
		}
		if p.NextCursor == "" {
			break
		}
		target = "/api/v1/buckets/b/versions/k?limit=1&cursor=" + p.NextCursor
	}
	if !slices.Equal(seen, []string{v2.VersionID, v1.VersionID}) {
		t.Errorf("pages of one: %q", seen)
	}
	// ?versions on the download route is redirected there, the key's
	// escapes and the rest of the query kept, before anything is read.
	for target, want := range map[string]string{
		"/b/files/k?versions":                   "/api/v1/buckets/b/versions/k",
		"/b/files/a%2Fb/c%20d?versions&limit=1": "/api/v1/buckets/b/versions/a%2Fb/c%20d?limit=1",
		"/rb/files/k?versions=":                 "/api/v1/buckets/rb/versions/k",
	} {
		for _, method := range []string{"GET", "HEAD"} {
			e.f.Fail["Get"] = errInvalidVersion() // nothing is read
			r := e.do(method, "/api/v1/buckets"+target, "", nil)
			if r.Code != 308 || r.Header().Get("Location") != want || r.Body.Len() != 0 {
				t.Errorf("%s %s: %d Location %q, want 308 %q", method, target, r.Code, r.Header().Get("Location"), want)
			}
		}
	}
	delete(e.f.Fail, "Get")
	for _, tc := range []struct {
		name, target, token string
		status              int
		code                string
	}{
		{"another user's bucket", "/rb/versions/k", "tok-alice", 403, "permission_denied"},
		{"anonymous", "/b/versions/k", "", 401, "unauthenticated"},
		{"a gateway bucket", "/gw/versions/k", "tok-alice", 501, "not_implemented"},
		{"a missing bucket", "/nope/versions/k", "tok-alice", 404, "not_found"},
		{"a bad cursor", "/b/versions/k?cursor=!!", "tok-alice", 400, "invalid_argument"},
		{"a cursor that is no version", "/b/versions/k?cursor=YWJj", "tok-alice", 400, "invalid_argument"},
		{"a bad limit", "/b/versions/k?limit=0", "tok-alice", 400, "invalid_argument"},
		{"a bad key", "/b/versions/a/../k", "tok-alice", 400, "invalid_argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", "/api/v1/buckets"+tc.target, tc.token, nil)
			r.want(t, tc.status, tc.code)
			noData(t, r)
			if bytes.Contains(r.Body.Bytes(), []byte(v1.VersionID)) {
				t.Errorf("a refusal named a version: %s", r.Body)
			}
		})
	}
}

func TestVersionDownload(t *testing.T) {
	e, v1, _, other := versionEnv(t)
	base := "/api/v1/buckets/b/files/k?version_id="
	r := e.do("GET", base+v1.VersionID, "tok-alice", nil)
	r.want(t, 200, "")
	if r.Body.String() != "first" || r.Header().Get("ETag") != `"`+v1.ETag+`"` {
		t.Errorf("version 1: %q, ETag %s", r.Body, r.Header().Get("ETag"))
	}
	r = e.do("GET", base+v1.VersionID, "tok-alice", nil, "Range", "bytes=1-2")
	if r.want(t, 206, ""); r.Body.String() != "ir" {
		t.Errorf("a range of version 1: %q", r.Body)
	}
	e.do("GET", base+v1.VersionID, "tok-alice", nil, "If-None-Match", `"`+v1.ETag+`"`).want(t, 304, "")
	e.do("GET", base+v1.VersionID, "tok-alice", nil, "If-Match", `"other"`).want(t, 412, "precondition_failed")
	if r := e.do("HEAD", base+v1.VersionID, "tok-alice", nil); r.Code != 200 || r.Header().Get("Content-Length") != "5" {
		t.Errorf("HEAD of version 1: %d %v", r.Code, r.Header())
	}
	// The latest is unchanged.
	if r := e.do("GET", "/api/v1/buckets/b/files/k", "tok-alice", nil); r.Body.String() != "second" {
		t.Errorf("latest: %q", r.Body)
	}
	marker, err := e.f.Delete(t.Context(), object.Actor{UserID: alice}, "b", "k", meta.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, target, token string
		status              int
		code                string
	}{
		{"another user's version", "/rb/files/k?version_id=" + other.VersionID, "tok-alice", 403, "permission_denied"},
		{"another user's version in one's own bucket", "/b/files/k?version_id=" + other.VersionID, "tok-alice", 404, "not_found"},
		{"anonymous", "/b/files/k?version_id=" + v1.VersionID, "", 401, "unauthenticated"},
		{"a bad version", "/b/files/k?version_id=v1", "tok-alice", 400, "invalid_argument"},
		{"an empty version", "/b/files/k?version_id=", "tok-alice", 400, "invalid_argument"},
		{"a missing version", "/b/files/k?version_id=" + fmt.Sprintf("%032x", 999), "tok-alice", 404, "not_found"},
		{"a delete marker", "/b/files/k?version_id=" + marker.VersionID, "tok-alice", 404, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", "/api/v1/buckets"+tc.target, tc.token, nil)
			r.want(t, tc.status, tc.code)
			noData(t, r)
		})
	}
	r = e.do("GET", base+marker.VersionID, "tok-alice", nil)
	if r.problem.Extra["delete_marker"] != true {
		t.Errorf("a delete marker's download: extra %v", r.problem.Extra)
	}
}

func TestVersionDelete(t *testing.T) {
	for _, tc := range []struct {
		name, target, token string
		hdr                 []string
		status              int
		code                string
	}{
		{"another user's bucket", "/rb/files/k?version_id=%s", "tok-alice", nil, 403, "permission_denied"},
		{"anonymous", "/b/files/k?version_id=%s", "", nil, 401, "unauthenticated"},
		{"a bad version", "/b/files/k?version_id=x%s", "tok-alice", nil, 400, "invalid_argument"},
		{"a missing version", "/b/files/k?version_id=" + fmt.Sprintf("%032x", 999) + "%.0s", "tok-alice", nil, 404, "not_found"},
		{"another ETag", "/b/files/k?version_id=%s", "tok-alice", []string{"If-Match", `"other"`}, 412, "precondition_failed"},
		{"If-None-Match", "/b/files/k?version_id=%s", "tok-alice", []string{"If-None-Match", "*"}, 400, "invalid_argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, v1, _, other := versionEnv(t)
			id := v1.VersionID
			if tc.name == "another user's bucket" {
				id = other.VersionID
			}
			e.f.Writes = nil
			r := e.do("DELETE", "/api/v1/buckets"+fmt.Sprintf(tc.target, id), tc.token, nil, tc.hdr...)
			r.want(t, tc.status, tc.code)
			e.noWrites(t)
		})
	}
	e, v1, v2, _ := versionEnv(t)
	e.f.Writes = nil
	e.do("DELETE", "/api/v1/buckets/b/files/k?version_id="+v2.VersionID, "tok-alice", nil, "If-Match", `"`+v2.ETag+`"`).want(t, 204, "")
	if want := []string{"DeleteVersion b/k " + v2.VersionID}; !slices.Equal(e.f.Writes, want) {
		t.Errorf("writes %q, want %q", e.f.Writes, want)
	}
	// The version before is the latest again.
	if r := e.do("GET", "/api/v1/buckets/b/files/k", "tok-alice", nil); r.Body.String() != "first" || r.Header().Get("ETag") != `"`+v1.ETag+`"` {
		t.Errorf("after deleting the latest version: %q", r.Body)
	}
}

func TestVersionRestore(t *testing.T) {
	body := func(key, id string) []byte { return fmt.Appendf(nil, `{"key":%q,"version_id":%q}`, key, id) }
	e, v1, v2, other := versionEnv(t)
	marker, err := e.f.Delete(t.Context(), object.Actor{UserID: alice}, "b", "k2", meta.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, bucket string
		body         []byte
		token        string
		status       int
		code         string
	}{
		{"another user's version", "rb", body("k", other.VersionID), "tok-alice", 403, "permission_denied"},
		{"another user's version into one's own bucket", "b", body("k", other.VersionID), "tok-alice", 404, "not_found"},
		{"anonymous", "b", body("k", v1.VersionID), "", 401, "unauthenticated"},
		{"the latest", "b", body("k", v2.VersionID), "tok-alice", 409, "conflict"},
		{"a delete marker", "b", body("k2", marker.VersionID), "tok-alice", 409, "conflict"},
		{"a missing version", "b", body("k", fmt.Sprintf("%032x", 999)), "tok-alice", 404, "not_found"},
		{"a bad version", "b", body("k", "v1"), "tok-alice", 400, "invalid_argument"},
		{"no version", "b", []byte(`{"key":"k"}`), "tok-alice", 400, "invalid_argument"},
		{"an unknown field", "b", []byte(`{"key":"k","version_id":"null","x":1}`), "tok-alice", 400, "invalid_argument"},
		{"a gateway bucket", "gw", body("k", meta.NullVersion), "tok-alice", 501, "not_implemented"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.f.Writes = nil
			r := e.do("POST", "/api/v1/buckets/"+tc.bucket+"/restore", tc.token, tc.body)
			r.want(t, tc.status, tc.code)
			noData(t, r)
			e.noWrites(t)
		})
	}
	e.f.Writes = nil
	r := e.do("POST", "/api/v1/buckets/b/restore", "tok-alice", body("k", v1.VersionID))
	r.want(t, 201, "")
	var got fileJSON
	decode(t, r, &got)
	if got.VersionID == "" || got.VersionID == v1.VersionID || got.VersionID == v2.VersionID || got.ETag != v1.ETag || got.Size != 5 {
		t.Errorf("restored %+v, want a new version with v1's content", got)
	}
	if want := []string{"Copy b/k"}; !slices.Equal(e.f.Writes, want) || e.f.LastCopy.DstKey != "k" || e.f.LastCopy.Cond != (meta.Cond{}) {
		t.Errorf("writes %q (copy %+v), want %q", e.f.Writes, e.f.LastCopy, want)
	}
	if r := e.do("GET", "/api/v1/buckets/b/files/k", "tok-alice", nil); r.Body.String() != "first" {
		t.Errorf("latest after the restore: %q", r.Body)
	}
	var p versionsPage
	decode(t, e.do("GET", "/api/v1/buckets/b/versions/k", "tok-alice", nil), &p)
	if len(p.Versions) != 3 || p.Versions[0].VersionID != got.VersionID || p.Versions[2].VersionID != v1.VersionID {
		t.Errorf("versions after the restore: %+v", p.Versions)
	}
}

func TestTrashAndUndelete(t *testing.T) {
	e, v1, v2, _ := versionEnv(t)
	ctx := t.Context()
	// k: deleted twice (two markers); k2: deleted; k3: only a marker.
	for _, k := range []string{"k", "k", "k2", "k3"} {
		if _, err := e.f.Delete(ctx, object.Actor{UserID: alice}, "b", k, meta.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.f.Delete(ctx, object.Actor{UserID: admin}, "rb", "k", meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	type trash struct {
		Files []struct {
			Key       string
			VersionID string `json:"version_id"`
		}
		NextCursor string `json:"next_cursor"`
	}
	var tr trash
	r := e.do("GET", "/api/v1/buckets/b/trash", "tok-alice", nil)
	r.want(t, 200, "")
	decode(t, r, &tr)
	var keys []string
	for _, f := range tr.Files {
		keys = append(keys, f.Key)
		if f.VersionID == "" {
			t.Errorf("%s listed without its marker", f.Key)
		}
	}
	if !slices.Equal(keys, []string{"k", "k2", "k3"}) {
		t.Errorf("trash %q, want k, k2, k3", keys)
	}
	decode(t, e.do("GET", "/api/v1/buckets/b/trash?prefix=k2", "tok-alice", nil), &tr)
	if len(tr.Files) != 1 || tr.Files[0].Key != "k2" {
		t.Errorf("trash with a prefix: %+v", tr.Files)
	}
	for _, tc := range []struct {
		name, method, target, token string
		body                        string
		status                      int
		code                        string
	}{
		{"another user's trash", "GET", "/rb/trash", "tok-alice", "", 403, "permission_denied"},
		{"anonymous trash", "GET", "/b/trash", "", "", 401, "unauthenticated"},
		{"a gateway bucket's trash", "GET", "/gw/trash", "tok-alice", "", 501, "not_implemented"},
		{"a bad cursor", "GET", "/b/trash?cursor=!", "tok-alice", "", 400, "invalid_argument"},
		{"another user's undelete", "POST", "/rb/undelete", "tok-alice", `{"key":"k"}`, 403, "permission_denied"},
		{"anonymous undelete", "POST", "/b/undelete", "", `{"key":"k"}`, 401, "unauthenticated"},
		{"a gateway bucket's undelete", "POST", "/gw/undelete", "tok-alice", `{"key":"k"}`, 501, "not_implemented"},
		{"a file not deleted", "POST", "/b/undelete", "tok-alice", `{"key":"k4"}`, 404, "not_found"},
		{"only markers", "POST", "/b/undelete", "tok-alice", `{"key":"k3"}`, 404, "not_found"},
		{"no key", "POST", "/b/undelete", "tok-alice", `{}`, 400, "invalid_argument"},
		{"a version_id", "POST", "/b/undelete", "tok-alice", `{"key":"k","version_id":"null"}`, 400, "invalid_argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.f.Writes = nil
			r := e.do(tc.method, "/api/v1/buckets"+tc.target, tc.token, []byte(tc.body))
			r.want(t, tc.status, tc.code)
			noData(t, r)
			e.noWrites(t)
		})
	}
	e.f.Writes = nil
	r = e.do("POST", "/api/v1/buckets/b/undelete", "tok-alice", []byte(`{"key":"k"}`))
	r.want(t, 200, "")
	var back fileJSON
	decode(t, r, &back)
	if back.VersionID != v2.VersionID || back.Key != "k" || back.ETag != v2.ETag {
		t.Errorf("undeleted %+v, want version %s", back, v2.VersionID)
	}
	if len(e.f.Writes) != 2 {
		t.Errorf("writes %q, want the two markers removed", e.f.Writes)
	}
	if r := e.do("GET", "/api/v1/buckets/b/files/k", "tok-alice", nil); r.Body.String() != "second" {
		t.Errorf("after the undelete: %d %q", r.Code, r.Body)
	}
	e.do("POST", "/api/v1/buckets/b/undelete", "tok-alice", []byte(`{"key":"k"}`)).want(t, 409, "conflict")
	decode(t, e.do("GET", "/api/v1/buckets/b/trash", "tok-alice", nil), &tr)
	if len(tr.Files) != 2 || tr.Files[0].Key != "k2" {
		t.Errorf("trash after the undelete: %+v", tr.Files)
	}
	_ = v1
}

// TestUndeleteBounded: an undelete removes at most maxUndeleteMarkers
// markers; a key with more on top is refused, and nothing is removed.
func TestUndeleteBounded(t *testing.T) {
	e, _, _, _ := versionEnv(t)
	for range maxUndeleteMarkers + 1 {
		if _, err := e.f.Delete(t.Context(), object.Actor{UserID: alice}, "b", "k", meta.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	e.f.Writes = nil
	e.do("POST", "/api/v1/buckets/b/undelete", "tok-alice", []byte(`{"key":"k"}`)).want(t, 413, "too_large")
	e.noWrites(t)
	// One marker fewer: undeleted.
	if _, err := e.f.DeleteVersion(t.Context(), object.Actor{UserID: alice}, "b", "k", e.f.Versions["b/k"][0].VersionID, meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	e.do("POST", "/api/v1/buckets/b/undelete", "tok-alice", []byte(`{"key":"k"}`)).want(t, 200, "")
	if r := e.do("GET", "/api/v1/buckets/b/files/k", "tok-alice", nil); r.Body.String() != "second" {
		t.Errorf("after undeleting %d markers: %d %q", maxUndeleteMarkers, r.Code, r.Body)
	}
}

func TestBucketVersioningSetting(t *testing.T) {
	e := newAPIEnv(t)
	e.f.Buckets["gw"] = meta.Bucket{Name: "gw", OwnerID: alice, Gateway: "s3://x?endpoint=http://127.0.0.1:1", CreatedAt: testMod}
	var b struct{ Versioning string }
	decode(t, e.do("GET", "/api/v1/buckets/b", "tok-alice", nil), &b)
	if b.Versioning != "" {
		t.Errorf("a bucket never versioned: versioning %q", b.Versioning)
	}
	for _, tc := range []struct {
		name, bucket, token, body string
		status                    int
		code                      string
	}{
		{"not a state", "b", "tok-alice", `{"versioning":"Off"}`, 400, "invalid_argument"},
		{"back to never", "b", "tok-alice", `{"versioning":""}`, 400, "invalid_argument"},
		{"not a state, with another change", "b", "tok-alice", `{"versioning":"enabled","visibility":"public-read"}`, 400, "invalid_argument"},
		{"another user's bucket", "rb", "tok-alice", `{"versioning":"Enabled"}`, 403, "permission_denied"},
		{"a gateway bucket", "gw", "tok-alice", `{"versioning":"Enabled","visibility":"public-read"}`, 501, "not_implemented"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.f.Writes = nil
			e.do("PATCH", "/api/v1/buckets/"+tc.bucket, tc.token, []byte(tc.body)).want(t, tc.status, tc.code)
			e.noWrites(t)
		})
	}
	for _, v := range []string{"Enabled", "Suspended"} {
		r := e.do("PATCH", "/api/v1/buckets/b", "tok-alice", []byte(`{"versioning":"`+v+`"}`))
		r.want(t, 200, "")
		if decode(t, r, &b); b.Versioning != v || e.f.Buckets["b"].Versioning != meta.Versioning(v) {
			t.Errorf("PATCH %s: %q", v, b.Versioning)
		}
		if decode(t, e.do("GET", "/api/v1/buckets/b", "tok-alice", nil), &b); b.Versioning != v {
			t.Errorf("GET after PATCH %s: %q", v, b.Versioning)
		}
	}
}

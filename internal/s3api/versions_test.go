package s3api

import (
	"encoding/xml"
	"fmt"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// versioning is a PutBucketVersioning body of status.
func versioning(status string) []byte {
	return []byte(`<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>` + status + `</Status></VersioningConfiguration>`)
}

func (e *s3Env) setVersioning(t *testing.T, status string) {
	t.Helper()
	body := versioning(status)
	e.alice("PUT", "/b?versioning", body, "Content-MD5", md5B64(body)).want(t, 200, "")
}

func TestBucketVersioning(t *testing.T) {
	e := newS3Env(t)
	r := e.alice("GET", "/b?versioning", nil)
	r.want(t, 200, "")
	if got := r.Body.String(); strings.Contains(got, "<Status>") || !strings.Contains(got, "<VersioningConfiguration") {
		t.Errorf("GetBucketVersioning of a bucket never versioned: %s", got)
	}
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
		value      bool // a Status or MfaDelete value outside the schema
	}{
		{"no status", `<VersioningConfiguration></VersioningConfiguration>`, 400, s3err.MalformedXML, true},
		{"bad status", `<VersioningConfiguration><Status>Off</Status></VersioningConfiguration>`, 400, s3err.MalformedXML, true},
		{"lower case", `<VersioningConfiguration><Status>enabled</Status></VersioningConfiguration>`, 400, s3err.MalformedXML, true},
		{"bad mfa delete", `<VersioningConfiguration><Status>Enabled</Status><MfaDelete>On</MfaDelete></VersioningConfiguration>`, 400, s3err.MalformedXML, true},
		{"mfa delete", `<VersioningConfiguration><Status>Enabled</Status><MfaDelete>Enabled</MfaDelete></VersioningConfiguration>`, 501, s3err.NotImplemented, false},
		{"unknown element", `<VersioningConfiguration><Status>Enabled</Status><Mode>x</Mode></VersioningConfiguration>`, 400, s3err.MalformedXML, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.alice("PUT", "/b?versioning", []byte(tc.body), "Content-MD5", md5B64([]byte(tc.body)))
			r.want(t, tc.status, tc.code)
			if generic := s3err.Table[s3err.MalformedXML].Message; tc.value && r.message != generic {
				// S3 answers a Status (or MfaDelete) outside its schema
				// with MalformedXML's own message, which clients compare.
				t.Errorf("message %q, want S3's %q", r.message, generic)
			}
			e.noWrites(t)
		})
	}
	e.do(req{method: "PUT", target: "/b?versioning", body: versioning("Enabled"), as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.do(req{method: "GET", target: "/b?versioning", as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.noWrites(t)
	for _, status := range []string{"Enabled", "Suspended"} {
		e.setVersioning(t, status)
		if got := e.store.Buckets["b"].Versioning; got != meta.Versioning(status) {
			t.Errorf("after PutBucketVersioning %s: %q", status, got)
		}
		r := e.alice("GET", "/b?versioning", nil)
		if !strings.Contains(r.Body.String(), "<Status>"+status+"</Status>") {
			t.Errorf("GetBucketVersioning after %s: %s", status, r.Body)
		}
	}
}

// TestVersionedObjects walks the life of a key in a versioned bucket
// through the handlers: version IDs on writes and reads, delete markers
// on GET, HEAD and DELETE, reading and deleting given versions.
func TestVersionedObjects(t *testing.T) {
	e := newS3Env(t)
	e.setVersioning(t, "Enabled")
	put := func(data string) string {
		t.Helper()
		r := e.alice("PUT", "/b/k", []byte(data))
		r.want(t, 200, "")
		v := r.Header().Get("X-Amz-Version-Id")
		if !meta.ValidVersionID(v) || v == meta.NullVersion {
			t.Fatalf("PutObject answered version %q", v)
		}
		return v
	}
	v1, v2 := put("one"), put("two")
	if v1 == v2 {
		t.Fatal("two writes, one version")
	}
	r := e.alice("GET", "/b/k", nil)
	if r.Body.String() != "two" || r.Header().Get("X-Amz-Version-Id") != v2 {
		t.Errorf("GET = %q version %q, want the latest %s", r.Body, r.Header().Get("X-Amz-Version-Id"), v2)
	}
	r = e.alice("GET", "/b/k?versionId="+v1, nil)
	if r.Code != 200 || r.Body.String() != "one" || r.Header().Get("X-Amz-Version-Id") != v1 {
		t.Errorf("GET ?versionId=v1 = %d %q version %q", r.Code, r.Body, r.Header().Get("X-Amz-Version-Id"))
	}
	e.alice("GET", "/b/k?versionId=0123456789abcdef0123456789abcdef", nil).want(t, 404, s3err.NoSuchVersion)
	e.alice("GET", "/b/k?versionId=", nil).want(t, 400, s3err.InvalidArgument)
	e.alice("GET", "/b/k?versionId=../v1", nil).want(t, 400, s3err.InvalidArgument)
	// Another user names a version: refused before the version is looked up.
	e.do(req{method: "GET", target: "/b/k?versionId=" + v1, as: bobKey}).want(t, 403, s3err.AccessDenied)

	// Delete: a marker.
	r = e.alice("DELETE", "/b/k", nil)
	r.want(t, 204, "")
	marker := r.Header().Get("X-Amz-Version-Id")
	if r.Header().Get("X-Amz-Delete-Marker") != "true" || !meta.ValidVersionID(marker) || marker == v2 {
		t.Fatalf("DELETE answered marker %q, version %q", r.Header().Get("X-Amz-Delete-Marker"), marker)
	}
	for _, m := range []string{"GET", "HEAD"} {
		r = e.alice(m, "/b/k", nil)
		if r.Code != 404 || m == "GET" && r.code != s3err.NoSuchKey {
			t.Errorf("%s of a deleted key: %d %q", m, r.Code, r.code)
		}
		if r.Header().Get("X-Amz-Delete-Marker") != "true" || r.Header().Get("X-Amz-Version-Id") != marker {
			t.Errorf("%s of a deleted key: delete marker %q version %q", m, r.Header().Get("X-Amz-Delete-Marker"), r.Header().Get("X-Amz-Version-Id"))
		}
		r = e.alice(m, "/b/k?versionId="+marker, nil)
		if r.Code != 405 || r.Header().Get("X-Amz-Delete-Marker") != "true" {
			t.Errorf("%s of the marker by its version: %d, delete marker %q", m, r.Code, r.Header().Get("X-Amz-Delete-Marker"))
		}
	}
	if r = e.alice("GET", "/b/k?versionId="+v2, nil); r.Body.String() != "two" {
		t.Errorf("GET of an old version behind a marker: %d %q", r.Code, r.Body)
	}

	// The versions listed, in order.
	r = e.alice("GET", "/b?versions", nil)
	r.want(t, 200, "")
	var lv struct {
		Entries []struct {
			XMLName   xml.Name
			Key       string
			VersionID string `xml:"VersionId"`
			IsLatest  bool
			Size      *int64
		} `xml:",any"`
	}
	if err := xml.Unmarshal(r.Body.Bytes(), &lv); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range lv.Entries {
		if en.XMLName.Local == "Version" || en.XMLName.Local == "DeleteMarker" {
			got = append(got, fmt.Sprintf("%s %s %v %v", en.XMLName.Local, en.VersionID, en.IsLatest, en.Size != nil))
		}
	}
	want := []string{"DeleteMarker " + marker + " true false", "Version " + v2 + " false true", "Version " + v1 + " false true"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ListObjectVersions:\n\t%q\nwant\n\t%q\n%s", got, want, r.Body)
	}

	// Deleting the marker brings the object back.
	r = e.alice("DELETE", "/b/k?versionId="+marker, nil)
	r.want(t, 204, "")
	if r.Header().Get("X-Amz-Delete-Marker") != "true" || r.Header().Get("X-Amz-Version-Id") != marker {
		t.Errorf("DELETE of the marker: delete marker %q, version %q", r.Header().Get("X-Amz-Delete-Marker"), r.Header().Get("X-Amz-Version-Id"))
	}
	if r = e.alice("GET", "/b/k", nil); r.Body.String() != "two" {
		t.Errorf("GET after the marker's deletion: %d %q", r.Code, r.Body)
	}
	// A version deleted for good; a version that is not there is a 204.
	r = e.alice("DELETE", "/b/k?versionId="+v2, nil)
	if r.Code != 204 || r.Header().Get("X-Amz-Delete-Marker") != "" {
		t.Errorf("DELETE of a version: %d, delete marker %q", r.Code, r.Header().Get("X-Amz-Delete-Marker"))
	}
	if r = e.alice("GET", "/b/k", nil); r.Body.String() != "one" {
		t.Errorf("GET after the latest version's deletion: %d %q", r.Code, r.Body)
	}
	e.alice("DELETE", "/b/k?versionId="+v2, nil).want(t, 204, "")
	e.alice("DELETE", "/b/k?versionId=nope", nil).want(t, 400, s3err.InvalidArgument)
}

func TestVersionedCopyAndDeleteObjects(t *testing.T) {
	e := newS3Env(t)
	e.setVersioning(t, "Enabled")
	v1 := e.alice("PUT", "/b/src", []byte("old")).Header().Get("X-Amz-Version-Id")
	e.alice("PUT", "/b/src", []byte("new"))
	// Copying an older version onto its own key restores it.
	r := e.alice("PUT", "/b/src", nil, "X-Amz-Copy-Source", "/b/src?versionId="+v1)
	r.want(t, 200, "")
	if r.Header().Get("X-Amz-Copy-Source-Version-Id") != v1 || r.Header().Get("X-Amz-Version-Id") == "" {
		t.Errorf("CopyObject of a version: source version %q, version %q", r.Header().Get("X-Amz-Copy-Source-Version-Id"), r.Header().Get("X-Amz-Version-Id"))
	}
	if r = e.alice("GET", "/b/src", nil); r.Body.String() != "old" {
		t.Errorf("after restoring a version: %q", r.Body)
	}
	// Without a version: the latest, named in the answer (versioned source).
	r = e.alice("PUT", "/b/dst", nil, "X-Amz-Copy-Source", "/b/src")
	if r.Code != 200 || r.Header().Get("X-Amz-Copy-Source-Version-Id") == "" {
		t.Errorf("CopyObject from a versioned bucket: %d, source version %q", r.Code, r.Header().Get("X-Amz-Copy-Source-Version-Id"))
	}

	body := []byte(`<Delete><Object><Key>dst</Key></Object><Object><Key>src</Key><VersionId>` + v1 + `</VersionId></Object>` +
		`<Object><Key>src</Key><VersionId>0123456789abcdef0123456789abcdef</VersionId></Object>` +
		`<Object><Key>src</Key><VersionId>bad</VersionId></Object></Delete>`)
	r = e.alice("POST", "/b?delete", body, "Content-MD5", md5B64(body))
	r.want(t, 200, "")
	var res struct {
		Deleted []struct {
			Key, VersionId        string
			DeleteMarker          bool
			DeleteMarkerVersionId string
		}
		Error []struct{ Key, VersionId, Code string }
	}
	if err := xml.Unmarshal(r.Body.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 3 || !res.Deleted[0].DeleteMarker || res.Deleted[0].DeleteMarkerVersionId == "" ||
		res.Deleted[1].VersionId != v1 || res.Deleted[1].DeleteMarker || len(res.Error) != 1 || res.Error[0].Code != s3err.InvalidArgument {
		t.Errorf("DeleteObjects: %+v %+v", res.Deleted, res.Error)
	}
	// A removed version that was not a marker says so (false), as S3's
	// DeletedObject does; a key without a version says nothing of it.
	if got := r.Body.String(); !strings.Contains(got, "<VersionId>"+v1+"</VersionId><DeleteMarker>false</DeleteMarker>") {
		t.Errorf("DeleteObjects of a version that is no marker does not say DeleteMarker false: %s", got)
	}
	e.alice("GET", "/b/dst", nil).want(t, 404, s3err.NoSuchKey)
	e.alice("GET", "/b/src?versionId="+v1, nil).want(t, 404, s3err.NoSuchVersion)
}

// TestUnversionedAnswersNoVersion: a bucket never versioned answers no
// version header, unless a request names the version (null).
func TestUnversionedAnswersNoVersion(t *testing.T) {
	e := newS3Env(t)
	for _, r := range []s3Result{e.alice("PUT", "/b/k", []byte("x")), e.alice("GET", "/b/k", nil), e.alice("HEAD", "/b/k", nil),
		e.alice("PUT", "/b/k2", nil, "X-Amz-Copy-Source", "/b/k")} {
		if v := r.Header().Get("X-Amz-Version-Id"); v != "" || r.Header().Get("X-Amz-Copy-Source-Version-Id") != "" || r.Code != 200 {
			t.Errorf("%d: x-amz-version-id %q in an unversioned bucket", r.Code, v)
		}
	}
	if r := e.alice("GET", "/b/k?versionId=null", nil); r.Code != 200 || r.Header().Get("X-Amz-Version-Id") != "null" {
		t.Errorf("GET ?versionId=null: %d %q", r.Code, r.Header().Get("X-Amz-Version-Id"))
	}
	r := e.alice("DELETE", "/b/k", nil)
	if r.Code != 204 || r.Header().Get("X-Amz-Version-Id") != "" || r.Header().Get("X-Amz-Delete-Marker") != "" {
		t.Errorf("DELETE in an unversioned bucket: %d %v", r.Code, r.Header())
	}
	e.alice("GET", "/b/k", nil).want(t, 404, s3err.NoSuchKey)
}

// TestVersionedBucketNotEmpty: DeleteBucket of a bucket ever versioned that
// still holds versions answers S3's message for it, which says to delete
// every version; an unversioned one the plain message.
func TestVersionedBucketNotEmpty(t *testing.T) {
	const versioned = "The bucket you tried to delete is not empty. You must delete all versions in the bucket."
	e := newS3Env(t)
	e.alice("PUT", "/b/k", []byte("x"))
	r := e.alice("DELETE", "/b", nil)
	r.want(t, 409, s3err.BucketNotEmpty)
	if r.message != s3err.Table[s3err.BucketNotEmpty].Message {
		t.Errorf("unversioned bucket: message %q", r.message)
	}
	for _, status := range []string{"Enabled", "Suspended"} {
		e.setVersioning(t, status)
		r = e.alice("DELETE", "/b", nil)
		r.want(t, 409, s3err.BucketNotEmpty)
		if r.message != versioned {
			t.Errorf("%s bucket: message %q, want %q", status, r.message, versioned)
		}
	}
}

// TestSuspendedPutNamesNoVersion: a PutObject into a suspended bucket
// writes the null version and, as S3 does (its PutObject reference's
// "versioning suspended" example), answers without x-amz-version-id;
// reads of that version still name it "null".
func TestSuspendedPutNamesNoVersion(t *testing.T) {
	e := newS3Env(t)
	e.setVersioning(t, "Enabled")
	v1 := e.alice("PUT", "/b/k", []byte("one")).Header().Get("X-Amz-Version-Id")
	if v1 == "" || v1 == meta.NullVersion {
		t.Fatalf("PUT in an enabled bucket: version %q", v1)
	}
	e.setVersioning(t, "Suspended")
	r := e.alice("PUT", "/b/k", []byte("two"))
	r.want(t, 200, "")
	if v, ok := r.Header()["X-Amz-Version-Id"]; ok {
		t.Errorf("PUT in a suspended bucket: x-amz-version-id %q, want none", v)
	}
	for _, m := range []string{"GET", "HEAD"} {
		if v := e.alice(m, "/b/k", nil).Header().Get("X-Amz-Version-Id"); v != meta.NullVersion {
			t.Errorf("%s of the null version: x-amz-version-id %q, want null", m, v)
		}
	}
	if got := e.alice("GET", "/b/k?versionId="+v1, nil).Body.String(); got != "one" {
		t.Errorf("the enabled version after the suspended PUT: %q", got)
	}
}

// TestListVersionsNegativeMaxKeys: ListObjectVersions refuses a negative
// max-keys with S3's message for that operation.
func TestListVersionsNegativeMaxKeys(t *testing.T) {
	e := newS3Env(t)
	r := e.alice("GET", "/b?versions&max-keys=-123", nil)
	r.want(t, 400, s3err.InvalidArgument)
	if r.message != "max-keys cannot be negative" {
		t.Errorf("message %q, want S3's", r.message)
	}
	e.alice("GET", "/b?versions&max-keys=0", nil).want(t, 200, "")
}

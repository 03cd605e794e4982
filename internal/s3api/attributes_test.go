package s3api

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

type attributesAnswer struct {
	ETag     string
	Checksum struct {
		ChecksumCRC32, ChecksumType string
	}
	ObjectParts *struct {
		PartNumberMarker, NextPartNumberMarker, MaxParts, PartsCount int
		IsTruncated                                                  bool
		Part                                                         []struct {
			PartNumber    int
			Size          int64
			ChecksumCRC32 string
		}
	}
	StorageClass string
	ObjectSize   *int64
}

func attributes(t *testing.T, r s3Result) attributesAnswer {
	t.Helper()
	if r.Code != 200 {
		t.Fatalf("GetObjectAttributes: %d %q (%s)", r.Code, r.code, r.message)
	}
	var a attributesAnswer
	if err := xml.Unmarshal(r.Body.Bytes(), &a); err != nil {
		t.Fatalf("%v: %s", err, r.Body)
	}
	return a
}

// TestGetObjectAttributes: GetObjectAttributes answers the attributes
// x-amz-object-attributes names, of the latest version or of versionId's,
// with Last-Modified and x-amz-version-id; the parts of a multipart object
// (with their checksums, a page of x-amz-max-parts); a delete marker as
// GetObject does; bad input a 400.
func TestGetObjectAttributes(t *testing.T) {
	e := newS3Env(t)
	sum := crc32B64([]byte("p1p2"))
	e.store.add("b", "mp", []byte("p1p2"), func(o *meta.Object) {
		o.Parts = []meta.ObjectPart{{Size: 2, Checksum: crc32B64([]byte("p1"))}, {Size: 2, Checksum: crc32B64([]byte("p2"))}}
		o.ETag, o.Checksum = "0123456789abcdef0123456789abcdef-2", meta.Checksum{Algorithm: "CRC32", Type: "COMPOSITE", Value: sum + "-2"}
	})
	e.setVersioning(t, "Enabled")
	v1 := e.alice("PUT", "/b/k", []byte("one"), "X-Amz-Checksum-Crc32", crc32B64([]byte("one"))).Header().Get("X-Amz-Version-Id")
	v2 := e.alice("PUT", "/b/k", []byte("second")).Header().Get("X-Amz-Version-Id")
	md5hex := func(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }
	all := []string{"X-Amz-Object-Attributes", "ETag,Checksum,ObjectParts,StorageClass,ObjectSize"}

	r := e.alice("GET", "/b/k?attributes", nil, all...)
	a := attributes(t, r)
	if a.ETag != md5hex("second") || a.ObjectSize == nil || *a.ObjectSize != 6 || a.StorageClass != "STANDARD" || a.ObjectParts != nil || a.Checksum.ChecksumCRC32 != "" {
		t.Errorf("latest version: %s", r.Body)
	}
	if r.Header().Get("X-Amz-Version-Id") != v2 || r.Header().Get("Last-Modified") == "" {
		t.Errorf("latest version: headers %v", r.Header())
	}
	r = e.alice("GET", "/b/k?attributes&versionId="+v1, nil, all...)
	if a = attributes(t, r); a.ETag != md5hex("one") || *a.ObjectSize != 3 || a.Checksum.ChecksumCRC32 != crc32B64([]byte("one")) || a.Checksum.ChecksumType != "FULL_OBJECT" {
		t.Errorf("version %s: %s", v1, r.Body)
	}
	if r.Header().Get("X-Amz-Version-Id") != v1 {
		t.Errorf("version %s: x-amz-version-id %q", v1, r.Header().Get("X-Amz-Version-Id"))
	}
	// Only what was asked for.
	r = e.alice("GET", "/b/k?attributes", nil, "X-Amz-Object-Attributes", "ObjectSize")
	if a = attributes(t, r); a.ETag != "" || a.StorageClass != "" || *a.ObjectSize != 6 {
		t.Errorf("ObjectSize only: %s", r.Body)
	}

	// A multipart object: its part count, and a page of its parts.
	r = e.alice("GET", "/b/mp?attributes", nil, "X-Amz-Object-Attributes", "ObjectParts", "X-Amz-Max-Parts", "1")
	a = attributes(t, r)
	if p := a.ObjectParts; p == nil || p.PartsCount != 2 || !p.IsTruncated || p.MaxParts != 1 || p.NextPartNumberMarker != 1 ||
		len(p.Part) != 1 || p.Part[0].PartNumber != 1 || p.Part[0].Size != 2 || p.Part[0].ChecksumCRC32 != crc32B64([]byte("p1")) {
		t.Errorf("first page of parts: %s", r.Body)
	}
	r = e.alice("GET", "/b/mp?attributes", nil, "X-Amz-Object-Attributes", "ObjectParts", "X-Amz-Part-Number-Marker", "1")
	if p := attributes(t, r).ObjectParts; p == nil || p.IsTruncated || len(p.Part) != 1 || p.Part[0].PartNumber != 2 || p.PartNumberMarker != 1 {
		t.Errorf("parts after 1: %s", r.Body)
	}

	// Bad input.
	e.alice("GET", "/b/k?attributes", nil).want(t, 400, s3err.InvalidRequest)
	e.alice("GET", "/b/k?attributes", nil, "X-Amz-Object-Attributes", "ETag,Colour").want(t, 400, s3err.InvalidArgument)
	e.alice("GET", "/b/k?attributes&versionId=invalid_versionId", nil, all...).want(t, 400, s3err.InvalidArgument)
	e.alice("GET", "/b/k?attributes", nil, "X-Amz-Object-Attributes", "ETag", "X-Amz-Max-Parts", "-1").want(t, 400, s3err.InvalidArgument)
	e.alice("GET", "/b/nokey?attributes", nil, all...).want(t, 404, s3err.NoSuchKey)
	e.alice("GET", "/bb/k?attributes", nil, all...).want(t, 403, s3err.AccessDenied)

	// Behind a delete marker: 404 with x-amz-delete-marker; the marker
	// named: 405, as GetObject answers.
	m := e.alice("DELETE", "/b/k", nil).Header().Get("X-Amz-Version-Id")
	r = e.alice("GET", "/b/k?attributes", nil, all...)
	r.want(t, 404, s3err.NoSuchKey)
	if r.Header().Get("X-Amz-Delete-Marker") != "true" {
		t.Errorf("behind a marker: headers %v", r.Header())
	}
	e.alice("GET", "/b/k?attributes&versionId="+m, nil, all...).want(t, 405, s3err.MethodNotAllowed)
}

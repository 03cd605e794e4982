package testenv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
)

// S3Key is a user's S3 access key.
type S3Key struct{ ID, Secret string }

// NewS3Key creates an S3 access key for c's user.
func NewS3Key(t testing.TB, c *Client) S3Key {
	t.Helper()
	var k struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if st := c.JSON(t, "POST", "/api/v1/keys", nil, &k); st != 201 {
		t.Fatalf("create key: %d", st)
	}
	return S3Key{k.ID, k.Secret}
}

// S3Reply is an S3 response, its body read.
type S3Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// s3HTTP is the client of S3Do: its own connections, enough of them kept
// open for many goroutines.
var s3HTTP = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// S3Do sends a SigV4-signed request to the S3 listener base (path:
// /bucket/key?query, escaped); hdr is pairs of header names and values.
// Safe for many goroutines.
func S3Do(k S3Key, base, method, path string, body []byte, hdr ...string) (S3Reply, error) {
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		return S3Reply{}, err
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	sum := sha256.Sum256(body)
	if err := sigv4.SignRequest(req, k.ID, k.Secret, "us-east-1", hex.EncodeToString(sum[:]), time.Now()); err != nil {
		return S3Reply{}, err
	}
	resp, err := s3HTTP.Do(req)
	if err != nil {
		return S3Reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return S3Reply{resp.StatusCode, resp.Header, b}, err
}

// MustS3 is S3Do failing t unless the answer is want.
func MustS3(t testing.TB, k S3Key, base, method, path string, body []byte, want int, hdr ...string) S3Reply {
	t.Helper()
	r, err := S3Do(k, base, method, path, body, hdr...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if r.Status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, want)
	}
	return r
}

// VersioningBody is PutBucketVersioning's body setting status (Enabled or
// Suspended).
func VersioningBody(status string) []byte {
	return []byte(`<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>` + status + `</Status></VersioningConfiguration>`)
}

// IsVersionID reports whether id looks like a version ID Coffer makes (32
// lower-case hex digits): not "null", not empty.
func IsVersionID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

// ListedVersion is a <Version> or <DeleteMarker> of ListObjectVersions.
type ListedVersion struct {
	Marker    bool
	Key       string `xml:"Key"`
	VersionID string `xml:"VersionId"`
	IsLatest  bool   `xml:"IsLatest"`
	ETag      string `xml:"ETag"`
	Size      int64  `xml:"Size"`
}

// ListVersions pages through every version and delete marker of bucket
// ("/name"), pageSize at a time, each page from the next of bases (S3
// listeners), in the order the listing gives.
func ListVersions(t testing.TB, k S3Key, bases []string, bucket string, pageSize int) []ListedVersion {
	t.Helper()
	var out []ListedVersion
	km, vm := "", ""
	for page := 0; ; page++ {
		q := fmt.Sprintf("?versions&max-keys=%d", pageSize)
		if km != "" {
			q += "&key-marker=" + url.QueryEscape(km)
			if vm != "" {
				q += "&version-id-marker=" + url.QueryEscape(vm)
			}
		}
		r := MustS3(t, k, bases[page%len(bases)], "GET", bucket+q, nil, 200)
		d := xml.NewDecoder(bytes.NewReader(r.Body))
		truncated := false
		km, vm = "", ""
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("ListObjectVersions: %v in %s", err, r.Body)
			}
			se, ok := tok.(xml.StartElement)
			if !ok {
				continue
			}
			switch se.Name.Local {
			case "Version", "DeleteMarker":
				var v ListedVersion
				if err := d.DecodeElement(&v, &se); err != nil {
					t.Fatal(err)
				}
				v.Marker = se.Name.Local == "DeleteMarker"
				out = append(out, v)
			case "IsTruncated", "NextKeyMarker", "NextVersionIdMarker":
				var s string
				if err := d.DecodeElement(&s, &se); err != nil {
					t.Fatal(err)
				}
				switch se.Name.Local {
				case "IsTruncated":
					truncated = s == "true"
				case "NextKeyMarker":
					km = s
				default:
					vm = s
				}
			}
		}
		if !truncated {
			return out
		}
		if km == "" || page > 100_000 {
			t.Fatalf("ListObjectVersions: truncated without a next marker (page %d)", page)
		}
	}
}

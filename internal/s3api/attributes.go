package s3api

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// GetObjectAttributes (GET /bucket/key?attributes): the attributes
// x-amz-object-attributes names (ETag, Checksum, ObjectParts,
// StorageClass, ObjectSize) of the latest version or of versionId's,
// without its data; Last-Modified and x-amz-version-id as headers.

// objectAttributeNames are the attributes a client may ask for.
var objectAttributeNames = []string{"ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"}

type objectAttributesResult struct {
	XMLName      xml.Name               `xml:"GetObjectAttributesResponse"`
	Xmlns        string                 `xml:"xmlns,attr"`
	ETag         string                 `xml:"ETag,omitempty"`
	Checksum     *attributesChecksum    `xml:"Checksum"`
	ObjectParts  *objectAttributesParts `xml:"ObjectParts"`
	StorageClass string                 `xml:"StorageClass,omitempty"`
	ObjectSize   *int64                 `xml:"ObjectSize"`
}

type attributesChecksum struct {
	Value        checksumElement
	ChecksumType string `xml:"ChecksumType,omitempty"`
}

type objectAttributesParts struct {
	PartNumberMarker     int              `xml:"PartNumberMarker"`
	NextPartNumberMarker int              `xml:"NextPartNumberMarker"`
	MaxParts             int              `xml:"MaxParts"`
	IsTruncated          bool             `xml:"IsTruncated"`
	Parts                []attributesPart `xml:"Part"`
	PartsCount           int              `xml:"PartsCount"`
}

type attributesPart struct {
	Checksum   checksumElement
	PartNumber int   `xml:"PartNumber"`
	Size       int64 `xml:"Size"`
}

// requestedAttributes parses x-amz-object-attributes (one header or
// several, comma-separated values).
func requestedAttributes(h http.Header) (map[string]bool, error) {
	want := map[string]bool{}
	for _, v := range h.Values("X-Amz-Object-Attributes") {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			i := -1
			for j, n := range objectAttributeNames {
				if strings.EqualFold(n, name) {
					i = j
				}
			}
			if i < 0 {
				return nil, s3err.New(s3err.InvalidArgument, "Invalid attribute name specified.")
			}
			want[objectAttributeNames[i]] = true
		}
	}
	if len(want) == 0 {
		return nil, s3err.New(s3err.InvalidRequest, "The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty")
	}
	return want, nil
}

// headerInt is a non-negative integer header (def if absent).
func headerInt(h http.Header, name string, def int) (int, error) {
	s := h.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, s3err.New(s3err.InvalidArgument, name+" must be a non-negative integer")
	}
	return n, nil
}

func (api *API) getObjectAttributes(q *request) (response, error) {
	want, err := requestedAttributes(q.Header)
	if err != nil {
		return nil, err
	}
	maxParts, err := headerInt(q.Header, "X-Amz-Max-Parts", 1000)
	if err != nil {
		return nil, err
	}
	maxParts = min(maxParts, 1000) // as ListParts
	marker, err := headerInt(q.Header, "X-Amz-Part-Number-Marker", 0)
	if err != nil {
		return nil, err
	}
	rd, vid, err := api.namedVersion(q)
	if err != nil {
		return nil, err
	}
	o := rd.Object
	// An SSE-C object's attributes need its key, which this operation
	// does not take (its SSE-C headers are refused): InvalidRequest.
	if err := object.CheckCustomerKey(o, nil); err != nil {
		return nil, err
	}
	res := objectAttributesResult{Xmlns: s3NS}
	if want["ETag"] {
		res.ETag = o.ETag // unquoted, as S3 answers it here
	}
	if want["Checksum"] && o.Checksum.Value != "" {
		res.Checksum = &attributesChecksum{Value: checksumElement{storedAlgorithm(o.Checksum.Algorithm), o.Checksum.Value}, ChecksumType: o.Checksum.Type}
	}
	if want["ObjectParts"] && o.Parts != nil {
		res.ObjectParts = attributesParts(o, marker, maxParts)
	}
	if want["StorageClass"] {
		res.StorageClass = "STANDARD"
	}
	if want["ObjectSize"] {
		res.ObjectSize = &o.Size
	}
	h := http.Header{}
	h.Set("Last-Modified", o.ModTime.UTC().Format(http.TimeFormat))
	versionHeader(h, readVersion(rd, vid))
	return xmlResponse{header: h, body: res}, nil
}

// attributesParts is ObjectParts of a multipart object: the part count,
// and, as S3 answers, the parts themselves (number, size, checksum) only
// when the object has an additional checksum; a page of maxParts after
// marker.
func attributesParts(o meta.Object, marker, maxParts int) *objectAttributesParts {
	p := &objectAttributesParts{PartNumberMarker: marker, MaxParts: maxParts, PartsCount: len(o.Parts)}
	alg := storedAlgorithm(o.Checksum.Algorithm)
	if o.Checksum.Algorithm == "" {
		return p
	}
	for i := marker; i < len(o.Parts); i++ {
		if len(p.Parts) == maxParts {
			p.IsTruncated = true
			break
		}
		part := o.Parts[i]
		p.Parts = append(p.Parts, attributesPart{Checksum: checksumElement{alg, part.Checksum}, PartNumber: i + 1, Size: part.Size})
		p.NextPartNumberMarker = i + 1
	}
	return p
}

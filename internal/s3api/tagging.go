package s3api

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// Tagging: Put/Get/DeleteObjectTagging (a version's tag set), the
// x-amz-tagging header of PutObject, CreateMultipartUpload and CopyObject
// (with x-amz-tagging-directive), x-amz-tagging-count on GetObject and
// HeadObject, and Put/Get/DeleteBucketTagging. The tag sets are checked
// by meta.CheckTags (InvalidTag); bodies by parseXML (MalformedXML).

// tagging is the body of the tagging operations.
type tagging struct {
	XMLName xml.Name `xml:"Tagging"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	TagSet  *tagSet  `xml:"TagSet"`
}

type tagSet struct {
	Tags []tagXML `xml:"Tag"`
}

type tagXML struct {
	Key   *string `xml:"Key"`
	Value string  `xml:"Value"`
}

// parseTagging reads a Tagging body: MalformedXML unless it is one, with
// a TagSet and a Key in every Tag. The tags are not checked (CheckTags).
func parseTagging(data []byte) ([]meta.Tag, error) {
	var t tagging
	if err := parseXML(data, &t); err != nil {
		return nil, err
	}
	if t.TagSet == nil {
		return nil, s3err.New(s3err.MalformedXML, "a Tagging needs a TagSet")
	}
	tags := make([]meta.Tag, 0, len(t.TagSet.Tags))
	for _, x := range t.TagSet.Tags {
		if x.Key == nil {
			return nil, s3err.New(s3err.MalformedXML, "a Tag needs a Key")
		}
		tags = append(tags, meta.Tag{Key: *x.Key, Value: x.Value})
	}
	return tags, nil
}

// taggingOf is the Tagging body of tags.
func taggingOf(tags []meta.Tag) tagging {
	t := tagging{Xmlns: s3NS, TagSet: &tagSet{Tags: make([]tagXML, len(tags))}}
	for i, tg := range tags {
		t.TagSet.Tags[i] = tagXML{Key: &tg.Key, Value: tg.Value}
	}
	return t
}

// maxTaggingHeader bounds x-amz-tagging: 10 tags of 128 + 256 characters,
// each up to 4 bytes of UTF-8 percent-encoded (12 bytes), and separators.
const maxTaggingHeader = meta.MaxObjectTags * (meta.MaxTagKeyLen + meta.MaxTagValueLen + 2) * 12

// parseTaggingHeader reads x-amz-tagging: a URL-encoded query string
// ("k1=v1&k2=v2"), in order, duplicates kept (CheckTags refuses them); ""
// is no tags. InvalidArgument if it is not one.
func parseTaggingHeader(v string) ([]meta.Tag, error) {
	if v == "" {
		return nil, nil
	}
	if len(v) > maxTaggingHeader {
		return nil, s3err.New(s3err.InvalidTag, "x-amz-tagging is too long")
	}
	var tags []meta.Tag
	for _, pair := range strings.Split(v, "&") {
		if pair == "" {
			continue
		}
		k, val, _ := strings.Cut(pair, "=")
		key, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(val)
		if err1 != nil || err2 != nil {
			return nil, s3err.New(s3err.InvalidArgument, "x-amz-tagging must be URL-encoded key=value pairs joined by &")
		}
		if len(tags) == meta.MaxObjectTags {
			return nil, meta.ErrTagCount(meta.MaxObjectTags)
		}
		tags = append(tags, meta.Tag{Key: key, Value: value})
	}
	return tags, meta.CheckTags(tags, meta.MaxObjectTags)
}

// headerTags is parseTaggingHeader of q's x-amz-tagging.
func headerTags(q *request) ([]meta.Tag, error) {
	return parseTaggingHeader(q.Header.Get("X-Amz-Tagging"))
}

// taggingCount sets x-amz-tagging-count when o has tags.
func taggingCount(h http.Header, o meta.Object) {
	if len(o.Tags) > 0 {
		h.Set("X-Amz-Tagging-Count", strconv.Itoa(len(o.Tags)))
	}
}

func (api *API) getObjectTagging(q *request) (response, error) {
	vid, err := versionParam(q)
	if err != nil {
		return nil, err
	}
	o, err := api.objects.GetTags(ctxOf(q), q.actor, q.bucket, q.key, vid)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	versionHeader(h, o.VersionID)
	return xmlResponse{header: h, body: taggingOf(o.Tags)}, nil
}

// readTagging reads and parses q's Tagging body.
func (api *API) readTagging(q *request) ([]meta.Tag, error) {
	data, err := api.readBody(q)
	if err != nil {
		return nil, err
	}
	return parseTagging(data)
}

func (api *API) putObjectTagging(q *request) (response, error) {
	tags, err := api.readTagging(q)
	if err != nil {
		return nil, err
	}
	return api.setObjectTags(q, tags, http.StatusOK)
}

func (api *API) deleteObjectTagging(q *request) (response, error) {
	return api.setObjectTags(q, nil, http.StatusNoContent)
}

// setObjectTags sets the tags of the version q names and answers status
// with its x-amz-version-id.
func (api *API) setObjectTags(q *request, tags []meta.Tag, status int) (response, error) {
	vid, err := versionParam(q)
	if err != nil {
		return nil, err
	}
	o, err := api.objects.SetTags(ctxOf(q), q.actor, q.bucket, q.key, vid, tags)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	versionHeader(h, o.VersionID)
	return empty{status: status, header: h}, nil
}

func (api *API) getBucketTagging(q *request) (response, error) {
	tags, err := api.buckets.GetBucketTags(ctxOf(q), q.actor, q.bucket)
	if err != nil {
		return nil, err
	}
	return xmlResponse{body: taggingOf(tags)}, nil
}

func (api *API) putBucketTagging(q *request) (response, error) {
	tags, err := api.readTagging(q)
	if err != nil {
		return nil, err
	}
	if err := api.buckets.SetBucketTags(ctxOf(q), q.actor, q.bucket, tags); err != nil {
		return nil, err
	}
	return empty{status: http.StatusNoContent}, nil
}

func (api *API) deleteBucketTagging(q *request) (response, error) {
	if err := api.buckets.SetBucketTags(ctxOf(q), q.actor, q.bucket, nil); err != nil {
		return nil, err
	}
	return empty{status: http.StatusNoContent}, nil
}

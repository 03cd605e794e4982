package s3api

import (
	"cmp"
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

func (api *API) requireAuth(q *request) error {
	if !q.authed {
		return s3err.New(s3err.AccessDenied, "") // S3's own text: clients compare it
	}
	return nil
}

func ownerOf(userID string) owner { return owner{ID: userID, DisplayName: userID} }

func (api *API) listBuckets(q *request) (response, error) {
	if err := api.requireAuth(q); err != nil {
		return nil, err
	}
	v := q.query()
	limit := -1 // all
	if v.Has("max-buckets") {
		n, err := strconv.Atoi(v.Get("max-buckets"))
		if err != nil || n < 1 || n > maxBucketsPage {
			return nil, s3err.New(s3err.InvalidArgument, "Argument max-buckets must be an integer between 1 and 10000.")
		}
		limit = n
	} else if v.Has("prefix") || v.Has("continuation-token") || v.Has("bucket-region") {
		limit = maxBucketsPage // S3's page when any of them is given
	}
	after := ""
	if token := v.Get("continuation-token"); token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || len(b) == 0 {
			return nil, s3err.New(s3err.InvalidArgument, "The continuation token provided is incorrect")
		}
		after = string(b)
	}
	bs, err := api.buckets.ListBuckets(ctxOf(q), q.actor)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(bs, func(a, b meta.Bucket) int { return strings.Compare(a.Name, b.Name) })
	prefix := v.Get("prefix")
	res := listAllMyBucketsResult{Xmlns: s3NS, Owner: ownerOf(q.actor.UserID), Buckets: []bucketInfo{}, Prefix: prefix}
	if r := v.Get("bucket-region"); r != "" && r != api.cfg.Region {
		return xmlResponse{body: res}, nil // every bucket is in the server's region
	}
	for _, b := range bs {
		if !strings.HasPrefix(b.Name, prefix) || b.Name <= after {
			continue
		}
		if len(res.Buckets) == limit {
			res.ContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(res.Buckets[limit-1].Name))
			break
		}
		res.Buckets = append(res.Buckets, bucketInfo{Name: b.Name, CreationDate: iso8601(b.CreatedAt), BucketRegion: api.cfg.Region})
	}
	return xmlResponse{body: res}, nil
}

// maxBucketsPage is S3's largest ListBuckets page (max-buckets).
const maxBucketsPage = 10000

func (api *API) createBucket(q *request) (response, error) {
	if err := api.requireAuth(q); err != nil {
		return nil, err
	}
	// Verify the body even when it is empty (its signed hash must match).
	data, err := api.readBody(q)
	if err != nil {
		return nil, err
	}
	var conf createBucketConfiguration
	if len(data) > 0 {
		if err := parseXML(data, &conf); err != nil {
			return nil, err
		}
	}
	if conf.Location != nil || conf.Bucket != nil {
		return nil, s3err.New(s3err.NotImplemented, "directory buckets are not implemented by Coffer")
	}
	if conf.Tags != nil {
		return nil, s3err.New(s3err.NotImplemented, "bucket tagging is not implemented by Coffer")
	}
	if lc := conf.LocationConstraint; lc != "" && lc != api.cfg.Region {
		return nil, s3err.New(s3err.IllegalLocationConstraint, "")
	}
	// x-amz-acl and x-amz-grant-* are the bucket's ACL (acl.go): a
	// canned public-read lets anyone list the bucket, as on S3, not read
	// its objects (the file API's public-read visibility; docs/acl.md).
	acl, err := aclHeaders(q.Header)
	if err != nil {
		return nil, err
	}
	in := object.CreateBucketInput{Name: q.bucket, ObjectLock: lockEnabledHeader(q), ACL: acl}
	if v := q.Header.Get("X-Amz-Object-Ownership"); v != "" {
		// Its values are checked by the table (unsupported.go).
		in.Ownership = meta.ObjectOwnership(strings.TrimSpace(v))
	}
	if _, err := api.buckets.CreateBucketWith(ctxOf(q), q.actor, in); err != nil {
		return nil, err
	}
	return empty{header: http.Header{"Location": {"/" + q.bucket}}}, nil
}

func (api *API) headBucket(q *request) (response, error) {
	if _, err := api.buckets.GetBucket(ctxOf(q), q.actor, q.bucket); err != nil {
		return nil, err
	}
	return empty{header: http.Header{"X-Amz-Bucket-Region": {api.cfg.Region}}}, nil
}

func (api *API) deleteBucket(q *request) (response, error) {
	if err := api.buckets.DeleteBucket(ctxOf(q), q.actor, q.bucket); err != nil {
		if s3err.Translate(err).Code == s3err.BucketNotEmpty {
			// A bucket ever versioned: S3's message says what empties it.
			if b, berr := api.buckets.GetBucket(ctxOf(q), q.actor, q.bucket); berr == nil && b.Versioning != meta.Unversioned {
				return nil, s3err.New(s3err.BucketNotEmpty, "The bucket you tried to delete is not empty. You must delete all versions in the bucket.")
			}
		}
		return nil, err
	}
	return empty{status: http.StatusNoContent}, nil
}

func (api *API) getBucketLocation(q *request) (response, error) {
	if _, err := api.buckets.GetBucket(ctxOf(q), q.actor, q.bucket); err != nil {
		return nil, err
	}
	region := api.cfg.Region
	if region == "us-east-1" {
		region = "" // S3 answers an empty constraint for us-east-1
	}
	return xmlResponse{body: locationConstraint{Xmlns: s3NS, Value: region}}, nil
}

func (api *API) getBucketVersioning(q *request) (response, error) {
	b, err := api.buckets.GetBucket(ctxOf(q), q.actor, q.bucket)
	if err != nil {
		return nil, err
	}
	// Never versioned: an empty configuration, as S3 answers.
	return xmlResponse{body: versioningConfiguration{Xmlns: s3NS, Status: string(b.Versioning)}}, nil
}

// putBucketVersioning enables or suspends versioning. MFA delete is not
// implemented: asking for it is refused (Disabled is what there is).
func (api *API) putBucketVersioning(q *request) (response, error) {
	var conf versioningConfiguration
	if err := api.readXML(q, &conf); err != nil {
		return nil, err
	}
	switch conf.MFADelete {
	case "", "Disabled":
	case "Enabled":
		return nil, s3err.New(s3err.NotImplemented, "MfaDelete: MFA delete is not implemented by Coffer")
	default:
		return nil, s3err.New(s3err.MalformedXML, "") // as S3: its generic schema message
	}
	v := meta.Versioning(conf.Status)
	if meta.CheckVersioning(v) != nil {
		return nil, s3err.New(s3err.MalformedXML, "") // as S3: its generic schema message
	}
	if _, err := api.buckets.SetBucketVersioning(ctxOf(q), q.actor, q.bucket, v); err != nil {
		return nil, err
	}
	return empty{}, nil
}

// ---- listing ----

type listParams struct {
	prefix, delimiter string
	maxKeys           int
	encode            bool
	fetchOwner        bool
}

func parseListParams(q *request) (listParams, error) {
	v := q.query()
	p := listParams{prefix: v.Get("prefix"), delimiter: v.Get("delimiter"), maxKeys: 1000}
	if !utf8.ValidString(p.prefix) || !utf8.ValidString(p.delimiter) || len(p.prefix) > 1024 {
		return p, s3err.New(s3err.InvalidArgument, "prefix and delimiter must be valid UTF-8")
	}
	if s := v.Get("max-keys"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return p, s3err.New(s3err.InvalidArgument, "max-keys must be a non-negative integer")
		}
		p.maxKeys = min(n, 1000)
	}
	switch et := v.Get("encoding-type"); et {
	case "":
	case "url":
		p.encode = true
	default:
		return p, s3err.New(s3err.InvalidArgument, "invalid encoding-type "+et)
	}
	p.fetchOwner = v.Get("fetch-owner") == "true"
	return p, nil
}

// s3Encode is S3's encoding-type=url: percent-encode everything but
// unreserved characters and '/'.
func s3Encode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.~/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteString("%" + strings.ToUpper(strconv.FormatInt(int64(c)|0x100, 16)[1:]))
	}
	return b.String()
}

func (p listParams) enc(s string) string {
	if p.encode {
		return s3Encode(s)
	}
	return s
}

func (api *API) list(q *request, p listParams, startAfter string) (meta.ListPage, error) {
	if p.maxKeys == 0 {
		// Authorise anyway, then answer an empty page.
		_, err := api.buckets.List(ctxOf(q), q.actor, q.bucket, meta.ListOptions{Prefix: p.prefix, Limit: 1, StartAfter: "\U0010FFFF"})
		return meta.ListPage{}, err
	}
	// The page shows each object's key, size, ETag, checksum and owner:
	// none of its parts.
	return api.buckets.List(ctxOf(q), q.actor, q.bucket, meta.ListOptions{
		Prefix: p.prefix, Delimiter: p.delimiter, StartAfter: startAfter, Limit: p.maxKeys, NoParts: true,
	})
}

func (p listParams) contents(q *request, page meta.ListPage) ([]objectInfo, []commonPrefix) {
	objs := make([]objectInfo, 0, len(page.Objects))
	for _, o := range page.Objects {
		oi := objectInfo{Key: p.enc(o.Key), LastModified: iso8601(o.ModTime), ETag: `"` + o.ETag + `"`, Size: o.Size, StorageClass: "STANDARD",
			ChecksumAlgorithm: o.Checksum.Algorithm, ChecksumType: o.Checksum.Type}
		if p.fetchOwner {
			ow := ownerOf(cmp.Or(o.Owner, q.actor.UserID))
			oi.Owner = &ow
		}
		objs = append(objs, oi)
	}
	var cps []commonPrefix
	for _, cp := range page.CommonPrefixes {
		cps = append(cps, commonPrefix{Prefix: p.enc(cp)})
	}
	return objs, cps
}

func (api *API) listObjectsV2(q *request) (response, error) {
	p, err := parseListParams(q)
	if err != nil {
		return nil, err
	}
	v := q.query()
	startAfter := v.Get("start-after")
	token := v.Get("continuation-token")
	from := startAfter
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || len(b) == 0 {
			return nil, s3err.New(s3err.InvalidArgument, "The continuation token provided is incorrect")
		}
		from = string(b)
	}
	page, err := api.list(q, p, from)
	if err != nil {
		return nil, err
	}
	objs, cps := p.contents(q, page)
	res := listBucketResultV2{
		Xmlns: s3NS, Name: q.bucket, Prefix: p.enc(p.prefix), Delimiter: p.enc(p.delimiter), MaxKeys: p.maxKeys,
		KeyCount: len(objs) + len(cps), IsTruncated: page.Truncated, ContinuationToken: token,
		StartAfter: p.enc(startAfter), Contents: objs, CommonPrefixes: cps,
	}
	if p.encode {
		res.EncodingType = "url"
	}
	if page.Truncated {
		res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(page.NextStartAfter))
	}
	return xmlResponse{body: res}, nil
}

func (api *API) listObjectsV1(q *request) (response, error) {
	p, err := parseListParams(q)
	if err != nil {
		return nil, err
	}
	marker := q.query().Get("marker")
	p.fetchOwner = true // ListObjects (v1) names every object's owner, as S3 does
	page, err := api.list(q, p, marker)
	if err != nil {
		return nil, err
	}
	objs, cps := p.contents(q, page)
	res := listBucketResultV1{
		Xmlns: s3NS, Name: q.bucket, Prefix: p.enc(p.prefix), Marker: p.enc(marker), Delimiter: p.enc(p.delimiter),
		MaxKeys: p.maxKeys, IsTruncated: page.Truncated, Contents: objs, CommonPrefixes: cps,
	}
	if p.encode {
		res.EncodingType = "url"
	}
	if page.Truncated {
		res.NextMarker = p.enc(page.NextStartAfter)
	}
	return xmlResponse{body: res}, nil
}

// listObjectVersions lists a bucket's versions and delete markers (an
// unversioned bucket's objects are each their only version, "null").
func (api *API) listObjectVersions(q *request) (response, error) {
	if n, err := strconv.Atoi(q.query().Get("max-keys")); err == nil && n < 0 {
		// S3's words for ListObjectVersions (its listings each word it
		// their own way).
		return nil, s3err.New(s3err.InvalidArgument, "max-keys cannot be negative")
	}
	p, err := parseListParams(q)
	if err != nil {
		return nil, err
	}
	v := q.query()
	keyMarker, vidMarker := v.Get("key-marker"), v.Get("version-id-marker")
	switch {
	case vidMarker != "" && keyMarker == "":
		return nil, s3err.New(s3err.InvalidArgument, "A version-id marker cannot be specified without a key marker.")
	case vidMarker != "" && !meta.ValidVersionID(vidMarker):
		return nil, s3err.New(s3err.InvalidArgument, "Invalid version id specified")
	}
	var page meta.VersionPage
	if p.maxKeys == 0 {
		// Authorise anyway, then answer an empty page.
		_, err = api.buckets.GetBucket(ctxOf(q), q.actor, q.bucket)
	} else {
		page, err = api.buckets.ListVersions(ctxOf(q), q.actor, q.bucket, meta.VersionListOptions{
			Prefix: p.prefix, Delimiter: p.delimiter, KeyMarker: keyMarker, VersionIDMarker: vidMarker, Limit: p.maxKeys,
		})
	}
	if err != nil {
		return nil, err
	}
	res := listVersionsResult{
		Xmlns: s3NS, Name: q.bucket, Prefix: p.enc(p.prefix), KeyMarker: p.enc(keyMarker), VersionIDMarker: vidMarker,
		MaxKeys: p.maxKeys, Delimiter: p.enc(p.delimiter), IsTruncated: page.Truncated,
	}
	if p.encode {
		res.EncodingType = "url"
	}
	// The service names each version's owner (the bucket's: listings
	// do not read a version's writer).
	for _, o := range page.Versions {
		e := versionInfo{marker: o.DeleteMarker, Key: p.enc(o.Key), VersionID: o.VersionID, IsLatest: o.IsLatest,
			LastModified: iso8601(o.ModTime), Owner: ownerOf(cmp.Or(o.Owner, q.actor.UserID))}
		if !o.DeleteMarker {
			size := o.Size
			e.ETag, e.Size, e.StorageClass = `"`+o.ETag+`"`, &size, "STANDARD"
			e.ChecksumAlgorithm, e.ChecksumType = o.Checksum.Algorithm, o.Checksum.Type
		}
		res.Entries = append(res.Entries, e)
	}
	for _, cp := range page.CommonPrefixes {
		res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: p.enc(cp)})
	}
	if page.Truncated {
		res.NextKeyMarker, res.NextVersionIDMarker = p.enc(page.NextKeyMarker), page.NextVersionIDMarker
	}
	return xmlResponse{body: res}, nil
}

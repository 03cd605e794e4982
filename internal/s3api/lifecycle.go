package s3api

import (
	"encoding/xml"
	"net/http"

	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// Bucket lifecycle (docs/lifecycle.md): the configuration is S3's schema
// as meta.Lifecycle; parseLifecycle reads a body strictly (parseXML) and
// checks it with meta.CheckLifecycle, the one check the object service
// and the store apply too.

// lifecycleOut is GetBucketLifecycleConfiguration's body.
type lifecycleOut struct {
	XMLName xml.Name             `xml:"LifecycleConfiguration"`
	Xmlns   string               `xml:"xmlns,attr"`
	Rules   []meta.LifecycleRule `xml:"Rule"`
}

// parseLifecycle reads and checks a PutBucketLifecycleConfiguration body.
func parseLifecycle(data []byte) (*meta.Lifecycle, error) {
	var lc meta.Lifecycle
	if err := parseXML(data, &lc); err != nil {
		return nil, err
	}
	if err := meta.CheckLifecycle(&lc); err != nil {
		return nil, err
	}
	return &lc, nil
}

// requireDigest refuses a body sent without Content-MD5 or an
// x-amz-checksum-* (header or trailer), as S3 does for the operations
// that require one.
func requireDigest(q *request) error {
	if q.Header.Get("Content-Md5") != "" || q.pay.trailerAlg != integrity.NoChecksum {
		return nil
	}
	for _, a := range integrity.Algorithms {
		if q.Header.Get(a.Header()) != "" {
			return nil
		}
	}
	return s3err.New(s3err.InvalidRequest, "Missing required header for this request: Content-MD5 or x-amz-checksum-*")
}

func (api *API) putBucketLifecycle(q *request) (response, error) {
	if err := requireDigest(q); err != nil {
		return nil, err
	}
	data, err := api.readBody(q)
	if err != nil {
		return nil, err
	}
	lc, err := parseLifecycle(data)
	if err != nil {
		return nil, err
	}
	if err := api.buckets.SetBucketLifecycle(ctxOf(q), q.actor, q.bucket, lc); err != nil {
		return nil, err
	}
	return empty{}, nil
}

func (api *API) getBucketLifecycle(q *request) (response, error) {
	lc, err := api.buckets.GetBucketLifecycle(ctxOf(q), q.actor, q.bucket)
	if err != nil {
		return nil, err
	}
	return xmlResponse{body: lifecycleOut{Xmlns: s3NS, Rules: lc.Rules}}, nil
}

func (api *API) deleteBucketLifecycle(q *request) (response, error) {
	if err := api.buckets.SetBucketLifecycle(ctxOf(q), q.actor, q.bucket, nil); err != nil {
		return nil, err
	}
	return empty{status: http.StatusNoContent}, nil
}

// lifecycleDay is the day x-amz-expiration counts in.
func (api *API) lifecycleDay() meta.Day {
	if api.cfg.LifecycleDay > 0 {
		return meta.Day(api.cfg.LifecycleDay)
	}
	return meta.Lifecycle24h
}

// expirationHeader sets x-amz-expiration when a rule of b will expire o,
// its key's current version.
func (api *API) expirationHeader(h http.Header, b meta.Bucket, o meta.Object) {
	if !o.IsLatest {
		return
	}
	if v := object.ExpirationHeader(b, o, api.lifecycleDay()); v != "" {
		h.Set("X-Amz-Expiration", v)
	}
}

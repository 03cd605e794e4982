package s3api

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// CORS (docs/cors.md). A bucket's configuration is S3's schema as
// meta.CORS: parseCORS reads a body strictly (parseXML) and checks it with
// meta.CheckCORS, and meta.CORS.Match is the one reading of it, for the
// preflight (an OPTIONS request, answered without authentication) and
// for actual requests: Handler calls setCORS once for every request that
// carries Origin and addresses a bucket, before anything else answers, so
// that every response of the bucket (errors included, signed, presigned
// or anonymous) carries the matching rule's headers. A request without
// Origin costs nothing more.

// corsOut is GetBucketCors's body.
type corsOut struct {
	XMLName xml.Name        `xml:"CORSConfiguration"`
	Xmlns   string          `xml:"xmlns,attr"`
	Rules   []meta.CORSRule `xml:"CORSRule"`
}

// corsVary is the Vary of every response of a bucket with a CORS
// configuration to a request with Origin (S3's).
const corsVary = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"

// parseCORS reads and checks a PutBucketCors body.
func parseCORS(data []byte) (*meta.CORS, error) {
	if len(data) > meta.MaxCORSBody {
		return nil, s3err.New(s3err.InvalidRequest, "The CORS configuration must not exceed 64 KB.")
	}
	var c meta.CORS
	if err := parseXML(data, &c); err != nil {
		return nil, err
	}
	if err := meta.CheckCORS(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

func (api *API) putBucketCors(q *request) (response, error) {
	if err := requireDigest(q); err != nil {
		return nil, err
	}
	data, err := api.readBody(q)
	if err != nil {
		return nil, err
	}
	c, err := parseCORS(data)
	if err != nil {
		return nil, err
	}
	if err := api.buckets.SetBucketCORS(ctxOf(q), q.actor, q.bucket, c); err != nil {
		return nil, err
	}
	return empty{}, nil
}

func (api *API) getBucketCors(q *request) (response, error) {
	c, err := api.buckets.GetBucketCORS(ctxOf(q), q.actor, q.bucket)
	if err != nil {
		return nil, err
	}
	return xmlResponse{body: corsOut{Xmlns: s3NS, Rules: c.Rules}}, nil
}

func (api *API) deleteBucketCors(q *request) (response, error) {
	if err := api.buckets.SetBucketCORS(ctxOf(q), q.actor, q.bucket, nil); err != nil {
		return nil, err
	}
	return empty{status: http.StatusNoContent}, nil
}

// The preflight's refusals (S3's codes and texts).
var (
	errCORSForbidden = s3err.New(s3err.AccessForbidden, "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, "+
		"request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.")
	errCORSDisabled = s3err.New(s3err.AccessForbidden, "CORSResponse: CORS is not enabled for this bucket.")
)

// preflight answers an OPTIONS request on a bucket or an object: Origin
// and Access-Control-Request-Method are required, every header of
// Access-Control-Request-Headers must be a header name; then the first
// rule of the bucket's configuration that allows the origin, the method
// and every requested header answers 200 with its headers; none: 403.
// It needs no credentials (browsers send none).
func (api *API) preflight(q *request) (response, error) {
	origin := q.Header.Get("Origin")
	if origin == "" {
		return nil, s3err.New(s3err.BadRequest, "Insufficient information. Origin request header needed.")
	}
	method := q.Header.Get("Access-Control-Request-Method")
	if !meta.IsCORSMethod(method) {
		return nil, s3err.New(s3err.BadRequest, "Invalid Access-Control-Request-Method: "+method)
	}
	var headers []string
	if v := strings.Join(q.Header.Values("Access-Control-Request-Headers"), ","); v != "" {
		for _, raw := range strings.Split(v, ",") {
			h := strings.TrimSpace(raw)
			if h == "" || !meta.ValidCORSHeader(h) {
				return nil, s3err.New(s3err.BadRequest, `Access-Control-Request-Headers "`+raw+`" contains invalid character.`)
			}
			headers = append(headers, strings.ToLower(h))
		}
	}
	c, err := api.buckets.BucketCORS(ctxOf(q), q.bucket)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errCORSDisabled
	}
	rule, anyOrigin := c.Match(origin, method, headers)
	if rule == nil {
		return nil, errCORSForbidden
	}
	h := http.Header{}
	allowRule(h, rule, origin, anyOrigin)
	if len(headers) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(headers, ", "))
	}
	h.Set("Vary", corsVary)
	return empty{header: h}, nil
}

// allowRule sets the headers rule answers a request from origin with.
func allowRule(h http.Header, rule *meta.CORSRule, origin string, anyOrigin bool) {
	if anyOrigin {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	h.Set("Access-Control-Allow-Methods", strings.Join(rule.AllowedMethods, ", "))
	if len(rule.ExposeHeaders) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(rule.ExposeHeaders, ", "))
	}
	if rule.MaxAgeSeconds != nil {
		h.Set("Access-Control-Max-Age", strconv.Itoa(int(*rule.MaxAgeSeconds)))
	}
}

// setCORS sets the CORS headers of an actual request (not a preflight)
// that carries Origin, before it is answered: Vary when the bucket has a
// configuration, and the headers of the first rule that allows the origin
// and the method (Access-Control-Request-Method if the request carries
// one, as Ceph RGW and its s3-tests read it, else the request's own). The
// configuration comes with the bucket record (object.Service.BucketCORS:
// the metadata cache's); a missing bucket or a failed lookup sets nothing.
func (api *API) setCORS(w http.ResponseWriter, q *request, origin string) {
	c, err := api.buckets.BucketCORS(ctxOf(q), q.bucket)
	if err != nil || c == nil {
		return
	}
	h := w.Header()
	h.Set("Vary", corsVary)
	method := q.Header.Get("Access-Control-Request-Method")
	if !meta.IsCORSMethod(method) {
		method = q.Method
	}
	if rule, anyOrigin := c.Match(origin, method, nil); rule != nil {
		allowRule(h, rule, origin, anyOrigin)
	}
}

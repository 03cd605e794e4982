package s3api

import (
	"encoding/xml"
	"io"
	"net/http"
	"strconv"
)

// Bucket policies (docs/policies.md): the document is JSON, stored as
// written; the object service validates it (MalformedPolicy,
// PolicyTooLarge) and decides every request with it.

func (api *API) putBucketPolicy(q *request) (response, error) {
	doc, err := api.readBody(q)
	if err != nil {
		return nil, err
	}
	if err := api.buckets.PutBucketPolicy(ctxOf(q), q.actor, q.bucket, doc); err != nil {
		return nil, err
	}
	return empty{status: http.StatusNoContent}, nil
}

func (api *API) getBucketPolicy(q *request) (response, error) {
	doc, err := api.buckets.GetBucketPolicy(ctxOf(q), q.actor, q.bucket)
	if err != nil {
		return nil, err
	}
	return jsonDoc(doc), nil
}

func (api *API) deleteBucketPolicy(q *request) (response, error) {
	if err := api.buckets.DeleteBucketPolicy(ctxOf(q), q.actor, q.bucket); err != nil {
		return nil, err
	}
	return empty{status: http.StatusNoContent}, nil
}

// policyStatus is GetBucketPolicyStatus's body.
type policyStatus struct {
	XMLName  xml.Name `xml:"PolicyStatus"`
	Xmlns    string   `xml:"xmlns,attr"`
	IsPublic bool     `xml:"IsPublic"`
}

func (api *API) getBucketPolicyStatus(q *request) (response, error) {
	public, err := api.buckets.GetBucketPolicyStatus(ctxOf(q), q.actor, q.bucket)
	if err != nil {
		return nil, err
	}
	return xmlResponse{body: policyStatus{Xmlns: s3NS, IsPublic: public}}, nil
}

// jsonDoc writes a policy document as S3 does: the JSON as stored.
type jsonDoc string

func (d jsonDoc) respond(w http.ResponseWriter, q *request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(d)))
	w.WriteHeader(http.StatusOK)
	if q.Method != http.MethodHead {
		io.WriteString(w, string(d))
	}
}

package s3api

import (
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// TestBucketPolicy: Put/Get/DeleteBucketPolicy and GetBucketPolicyStatus
// on the wire: the document comes back as written (JSON), refusals are
// MalformedPolicy/PolicyTooLarge and change nothing, a missing policy is
// NoSuchBucketPolicy.
func TestBucketPolicy(t *testing.T) {
	e := newS3Env(t)
	e.alice("GET", "/b?policy", nil).want(t, 404, s3err.NoSuchBucketPolicy)
	e.alice("DELETE", "/b?policy", nil).want(t, 404, s3err.NoSuchBucketPolicy)
	e.alice("GET", "/b?policyStatus", nil).want(t, 404, s3err.NoSuchBucketPolicy)
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}`
	e.alice("PUT", "/b?policy", []byte(doc)).want(t, 204, "")
	r := e.alice("GET", "/b?policy", nil)
	r.want(t, 200, "")
	if got := r.Body.String(); got != doc {
		t.Errorf("GetBucketPolicy = %s, want the document as written", got)
	}
	if ct := r.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("GetBucketPolicy Content-Type %q", ct)
	}
	r = e.alice("GET", "/b?policyStatus", nil)
	r.want(t, 200, "")
	if !strings.Contains(r.Body.String(), "<IsPublic>true</IsPublic>") {
		t.Errorf("GetBucketPolicyStatus = %s, want IsPublic true", r.Body)
	}

	e.store.Writes = nil
	for _, tc := range []struct {
		name, doc, code, msg string
	}{
		{"not json", `{"Version":`, s3err.MalformedPolicy, "This policy contains invalid Json"},
		{"other bucket", strings.Replace(doc, "arn:aws:s3:::b/*", "arn:aws:s3:::other/*", 1), s3err.MalformedPolicy, "Policy has invalid resource"},
		{"unknown action", strings.Replace(doc, "s3:GetObject", "s3:GetObjects", 1), s3err.MalformedPolicy, "Policy has invalid action"},
		{"unknown key", strings.Replace(doc, `"Resource"`, `"Condition":{"StringEquals":{"aws:Nope":"x"}},"Resource"`, 1), s3err.MalformedPolicy, "Policy has an invalid condition key"},
		{"too large", strings.Replace(doc, `"Effect"`, `"Sid":"`+strings.Repeat("x", 20480)+`","Effect"`, 1), s3err.PolicyTooLarge, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.alice("PUT", "/b?policy", []byte(tc.doc))
			r.want(t, 400, tc.code)
			if !strings.Contains(r.message, tc.msg) {
				t.Errorf("message %q, want %q", r.message, tc.msg)
			}
			e.noWrites(t)
		})
	}
	if got := e.alice("GET", "/b?policy", nil).Body.String(); got != doc {
		t.Errorf("after refused puts the policy is %s", got)
	}
	e.do(req{method: "GET", target: "/b?policy", as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.do(req{method: "PUT", target: "/b?policy", body: []byte(doc), as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.do(req{method: "DELETE", target: "/b?policy", as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.noWrites(t)
	e.alice("POST", "/b?policyStatus", nil).want(t, 501, s3err.NotImplemented)

	private := `{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}}`
	e.alice("PUT", "/b?policy", []byte(private)).want(t, 204, "")
	if r := e.alice("GET", "/b?policyStatus", nil); !strings.Contains(r.Body.String(), "<IsPublic>false</IsPublic>") {
		t.Errorf("GetBucketPolicyStatus of an IP-bound policy = %s", r.Body)
	}
	e.alice("DELETE", "/b?policy", nil).want(t, 204, "")
	e.alice("GET", "/b?policy", nil).want(t, 404, s3err.NoSuchBucketPolicy)
}

package s3api

import (
	"cmp"
	"encoding/xml"
	"net/http"
	"slices"
	"strings"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// ACLs (docs/acl.md): Get/PutBucketAcl, Get/PutObjectAcl, the
// OwnershipControls of a bucket, and the ACL a write asks for with
// x-amz-acl or the x-amz-grant-* headers (CreateBucket, PutObject,
// CopyObject, CreateMultipartUpload).

const xsiNS = "http://www.w3.org/2001/XMLSchema-instance"

// accessControlPolicy is S3's AccessControlPolicy as Coffer answers it.
type accessControlPolicy struct {
	XMLName xml.Name   `xml:"AccessControlPolicy"`
	Xmlns   string     `xml:"xmlns,attr"`
	Owner   owner      `xml:"Owner"`
	Grants  []grantOut `xml:"AccessControlList>Grant"`
}

type grantOut struct {
	Grantee    granteeOut `xml:"Grantee"`
	Permission string     `xml:"Permission"`
}

type granteeOut struct {
	XmlnsXsi    string `xml:"xmlns:xsi,attr"`
	Type        string `xml:"xsi:type,attr"`
	ID          string `xml:"ID,omitempty"`
	DisplayName string `xml:"DisplayName,omitempty"`
	URI         string `xml:"URI,omitempty"`
}

// aclPolicyIn is an AccessControlPolicy body as a client sends it.
type aclPolicyIn struct {
	XMLName xml.Name `xml:"AccessControlPolicy"`
	Owner   *struct {
		ID          string `xml:"ID"`
		DisplayName string `xml:"DisplayName"`
	} `xml:"Owner"`
	Grants []struct {
		Grantee *struct {
			Type         string `xml:"http://www.w3.org/2001/XMLSchema-instance type,attr"`
			ID           string `xml:"ID"`
			DisplayName  string `xml:"DisplayName"`
			EmailAddress string `xml:"EmailAddress"`
			URI          string `xml:"URI"`
		} `xml:"Grantee"`
		Permission string `xml:"Permission"`
	} `xml:"AccessControlList>Grant"`
}

// policyOf is the AccessControlPolicy of a resource owned by ownerID.
// Group grants come first, then user grants, each in their stored order
// (as RGW lists them; ceph's s3-tests index the owner's grant after the
// groups').
func policyOf(ownerID string, grants []meta.Grant) accessControlPolicy {
	p := accessControlPolicy{Xmlns: s3NS, Owner: ownerOf(ownerID), Grants: make([]grantOut, 0, len(grants))}
	grants = slices.Clone(grants)
	slices.SortStableFunc(grants, func(a, b meta.Grant) int {
		return cmp.Compare(boolInt(a.Type != meta.GranteeGroup), boolInt(b.Type != meta.GranteeGroup))
	})
	for _, g := range grants {
		ge := granteeOut{XmlnsXsi: xsiNS, Type: g.Type}
		if g.Type == meta.GranteeUser {
			ge.ID, ge.DisplayName = g.ID, ownerOf(g.ID).DisplayName
		} else {
			ge.URI = g.URI
		}
		p.Grants = append(p.Grants, grantOut{Grantee: ge, Permission: string(g.Permission)})
	}
	return p
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// grantHeaders are the x-amz-grant-* headers and their permissions.
var grantHeaders = []struct {
	name string
	perm meta.Permission
}{
	{"X-Amz-Grant-Read", meta.PermRead},
	{"X-Amz-Grant-Write", meta.PermWrite},
	{"X-Amz-Grant-Read-Acp", meta.PermReadACP},
	{"X-Amz-Grant-Write-Acp", meta.PermWriteACP},
	{"X-Amz-Grant-Full-Control", meta.PermFullControl},
}

// hasACLHeaders reports whether h names an ACL (x-amz-acl or an
// x-amz-grant-* header).
func hasACLHeaders(h http.Header) (canned, grants bool) {
	for _, gh := range grantHeaders {
		grants = grants || len(h.Values(gh.name)) > 0
	}
	return h.Get("X-Amz-Acl") != "", grants
}

// aclHeaders reads the ACL a request's headers ask for: nil if none.
// x-amz-acl and x-amz-grant-* together are InvalidRequest (before either
// is read).
func aclHeaders(h http.Header) (*object.ACL, error) {
	hasCanned, hasGrants := hasACLHeaders(h)
	switch {
	case hasCanned && hasGrants:
		return nil, s3err.New(s3err.InvalidRequest, "Specifying both Canned ACLs and Header Grants is not allowed.")
	case hasCanned:
		canned := strings.TrimSpace(h.Get("X-Amz-Acl"))
		if _, err := meta.CannedACL(canned, "x", "x"); err != nil {
			return nil, s3err.New(s3err.InvalidArgument, err.Error())
		}
		return &object.ACL{Canned: canned}, nil
	case !hasGrants:
		return nil, nil
	}
	var grants []meta.Grant
	for _, gh := range grantHeaders {
		for _, v := range h.Values(gh.name) {
			gs, err := parseGrantHeader(v, gh.perm)
			if err != nil {
				return nil, err
			}
			grants = append(grants, gs...)
		}
	}
	return &object.ACL{Grants: grants}, nil
}

// parseGrantHeader reads an x-amz-grant-* value: grantees separated by
// commas, each id="…", emailAddress="…" or uri="…" (quotes optional).
func parseGrantHeader(v string, p meta.Permission) ([]meta.Grant, error) {
	var grants []meta.Grant
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		val = strings.TrimSpace(val)
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			val = val[1 : len(val)-1]
		}
		if !ok || val == "" {
			return nil, s3err.New(s3err.InvalidArgument, "malformed grant header: "+part)
		}
		g := meta.Grant{Permission: p}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "id":
			g.Type, g.ID = meta.GranteeUser, val
		case "emailaddress":
			g.Type, g.ID = object.GranteeEmail, val
		case "uri":
			g.Type, g.URI = meta.GranteeGroup, val
		default:
			return nil, s3err.New(s3err.InvalidArgument, "unknown grantee kind in a grant header: "+k)
		}
		grants = append(grants, g)
	}
	if grants == nil {
		return nil, s3err.New(s3err.InvalidArgument, "empty grant header")
	}
	return grants, nil
}

// parseACLBody reads an AccessControlPolicy body: MalformedACLError for
// one that is well-formed XML but not a valid ACL.
func parseACLBody(data []byte) (*object.ACL, error) {
	var in aclPolicyIn
	if err := parseXML(data, &in); err != nil {
		return nil, err
	}
	// S3's one message for every malformed ACL (clients compare it).
	malformed := func(string) error { return s3err.New(s3err.MalformedACLError, "") }
	if in.Owner == nil || strings.TrimSpace(in.Owner.ID) == "" {
		return nil, malformed("the AccessControlPolicy names no Owner")
	}
	grants := make([]meta.Grant, 0, len(in.Grants))
	for _, g := range in.Grants {
		if g.Grantee == nil {
			return nil, malformed("a Grant has no Grantee")
		}
		ge := g.Grantee
		grant := meta.Grant{Permission: meta.Permission(strings.TrimSpace(g.Permission))}
		switch ge.Type {
		case meta.GranteeUser:
			grant.Type, grant.ID = meta.GranteeUser, strings.TrimSpace(ge.ID)
		case object.GranteeEmail:
			grant.Type, grant.ID = object.GranteeEmail, strings.TrimSpace(ge.EmailAddress)
		case meta.GranteeGroup:
			grant.Type, grant.URI = meta.GranteeGroup, strings.TrimSpace(ge.URI)
		default:
			return nil, malformed("unknown grantee type " + ge.Type)
		}
		if grant.ID == "" && grant.URI == "" {
			return nil, malformed("a Grantee names no one")
		}
		if grant.Type == object.GranteeEmail {
			// Checked as a user grant; resolved by the service.
			if err := meta.CheckGrants([]meta.Grant{{Type: meta.GranteeUser, ID: grant.ID, Permission: grant.Permission}}); err != nil {
				return nil, malformed(err.Error())
			}
		} else if err := meta.CheckGrants([]meta.Grant{grant}); err != nil {
			return nil, malformed(err.Error())
		}
		grants = append(grants, grant)
	}
	return &object.ACL{Grants: grants}, nil
}

// aclOfRequest is the ACL a Put*Acl request asks for: by its headers or
// its body, never both (UnexpectedContent), never neither
// (MissingSecurityHeader). A request it refuses gets, before that
// refusal, the one its target gets (NoSuchBucket, AccessDenied): check
// says it (the bucket's, as the operation's actor).
func (api *API) aclOfRequest(q *request, check func() error) (object.ACL, error) {
	acl, err := api.readACLRequest(q)
	if err != nil {
		if cerr := check(); cerr != nil {
			return object.ACL{}, cerr
		}
	}
	return acl, err
}

func (api *API) readACLRequest(q *request) (object.ACL, error) {
	data, err := api.readBody(q)
	if err != nil {
		return object.ACL{}, err
	}
	canned, grants := hasACLHeaders(q.Header)
	switch {
	case (canned || grants) && len(data) > 0:
		return object.ACL{}, s3err.New(s3err.UnexpectedContent, "")
	case canned || grants:
		h, err := aclHeaders(q.Header)
		if err != nil {
			return object.ACL{}, err
		}
		return *h, nil
	case len(data) == 0:
		return object.ACL{}, s3err.New(s3err.MissingSecurityHeader, "Your request was missing a required header.")
	}
	b, err := parseACLBody(data)
	if err != nil {
		return object.ACL{}, err
	}
	return *b, nil
}

// bucketCheck is aclOfRequest's check of q's bucket.
func (api *API) bucketCheck(q *request) func() error {
	return func() error {
		_, err := api.buckets.GetBucket(ctxOf(q), q.actor, q.bucket)
		return err
	}
}

func (api *API) getBucketACL(q *request) (response, error) {
	b, grants, err := api.buckets.GetBucketACL(ctxOf(q), q.actor, q.bucket)
	if err != nil {
		return nil, err
	}
	return xmlResponse{body: policyOf(b.OwnerID, grants)}, nil
}

func (api *API) putBucketACL(q *request) (response, error) {
	acl, err := api.aclOfRequest(q, api.bucketCheck(q))
	if err != nil {
		return nil, err
	}
	if err := api.buckets.SetBucketACL(ctxOf(q), q.actor, q.bucket, acl); err != nil {
		return nil, err
	}
	return empty{}, nil
}

func (api *API) getObjectACL(q *request) (response, error) {
	vid, err := versionParam(q)
	if err != nil {
		return nil, err
	}
	o, err := api.objects.GetObjectACL(ctxOf(q), q.actor, q.bucket, q.key, vid)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	versionHeader(h, o.VersionID)
	return xmlResponse{body: policyOf(o.Owner, o.ACL), header: h}, nil
}

func (api *API) putObjectACL(q *request) (response, error) {
	vid, err := versionParam(q)
	if err != nil {
		return nil, err
	}
	acl, err := api.aclOfRequest(q, api.bucketCheck(q))
	if err != nil {
		return nil, err
	}
	o, err := api.objects.SetObjectACL(ctxOf(q), q.actor, q.bucket, q.key, vid, acl)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	versionHeader(h, o.VersionID)
	return empty{header: h}, nil
}

// ownershipControls is S3's OwnershipControls.
type ownershipControls struct {
	XMLName xml.Name `xml:"OwnershipControls"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	Rules   []struct {
		ObjectOwnership string `xml:"ObjectOwnership"`
	} `xml:"Rule"`
}

func (api *API) getBucketOwnership(q *request) (response, error) {
	o, err := api.buckets.GetBucketOwnership(ctxOf(q), q.actor, q.bucket)
	if err != nil {
		return nil, err
	}
	c := ownershipControls{Xmlns: s3NS}
	c.Rules = append(c.Rules, struct {
		ObjectOwnership string `xml:"ObjectOwnership"`
	}{string(o)})
	return xmlResponse{body: c}, nil
}

func (api *API) putBucketOwnership(q *request) (response, error) {
	data, err := api.readBody(q)
	if err != nil {
		return nil, err
	}
	var c ownershipControls
	if err := parseXML(data, &c); err != nil {
		return nil, err
	}
	if len(c.Rules) != 1 {
		return nil, s3err.New(s3err.MalformedXML, "OwnershipControls must hold exactly one Rule")
	}
	o, err := meta.ParseOwnership(c.Rules[0].ObjectOwnership)
	if err != nil {
		return nil, s3err.New(s3err.MalformedXML, err.Error())
	}
	if err := api.buckets.SetBucketOwnership(ctxOf(q), q.actor, q.bucket, o); err != nil {
		return nil, err
	}
	return empty{}, nil
}

func (api *API) deleteBucketOwnership(q *request) (response, error) {
	if err := api.buckets.SetBucketOwnership(ctxOf(q), q.actor, q.bucket, ""); err != nil {
		return nil, err
	}
	return empty{status: http.StatusNoContent}, nil
}

package s3api

import (
	"encoding/xml"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// TestACLHeaders: x-amz-acl and the x-amz-grant-* headers as S3 reads
// them, and the combinations it refuses.
func TestACLHeaders(t *testing.T) {
	all := meta.AllUsers
	tests := []struct {
		name string
		hdr  []string
		want *object.ACL
		code string
	}{
		{"none", nil, nil, ""},
		{"canned", []string{"X-Amz-Acl", "public-read"}, &object.ACL{Canned: "public-read"}, ""},
		{"unknown canned", []string{"X-Amz-Acl", "everyone"}, nil, s3err.InvalidArgument},
		{"grants", []string{"X-Amz-Grant-Read", `id="u1", emailAddress="a@b.c"`, "X-Amz-Grant-Full-Control", "uri=" + all},
			&object.ACL{Grants: []meta.Grant{
				{Type: meta.GranteeUser, ID: "u1", Permission: meta.PermRead},
				{Type: object.GranteeEmail, ID: "a@b.c", Permission: meta.PermRead},
				{Type: meta.GranteeGroup, URI: all, Permission: meta.PermFullControl}}}, ""},
		{"canned and grants", []string{"X-Amz-Acl", "private", "X-Amz-Grant-Read", "id=u1"}, nil, s3err.InvalidRequest},
		{"unknown grantee kind", []string{"X-Amz-Grant-Write", "name=u1"}, nil, s3err.InvalidArgument},
		{"empty grantee", []string{"X-Amz-Grant-Write", `id=""`}, nil, s3err.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				h.Add(tc.hdr[i], tc.hdr[i+1])
			}
			got, err := aclHeaders(h)
			if code := codeOf(err); code != tc.code {
				t.Fatalf("error %v, want %q", err, tc.code)
			}
			if (got == nil) != (tc.want == nil) || got != nil && (got.Canned != tc.want.Canned || !slices.Equal(got.Grants, tc.want.Grants)) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func codeOf(err error) string {
	if err == nil {
		return ""
	}
	return s3err.Translate(err).Code
}

// TestACLBody: the AccessControlPolicy body, and the policy Coffer
// answers (group grants first, xsi:type, the xsi namespace).
func TestACLBody(t *testing.T) {
	body := `<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Owner><ID>o</ID></Owner><AccessControlList>
<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>o</ID></Grantee><Permission>FULL_CONTROL</Permission></Grant>
<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="AmazonCustomerByEmail"><EmailAddress>b@x.io</EmailAddress></Grantee><Permission>WRITE_ACP</Permission></Grant>
<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group"><URI>` + meta.AuthenticatedUsers + `</URI></Grantee><Permission>READ</Permission></Grant>
</AccessControlList></AccessControlPolicy>`
	acl, err := parseACLBody([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []meta.Grant{{Type: meta.GranteeUser, ID: "o", Permission: meta.PermFullControl},
		{Type: object.GranteeEmail, ID: "b@x.io", Permission: meta.PermWriteACP},
		{Type: meta.GranteeGroup, URI: meta.AuthenticatedUsers, Permission: meta.PermRead}}
	if !slices.Equal(acl.Grants, want) {
		t.Errorf("parsed %+v, want %+v", acl.Grants, want)
	}
	for name, bad := range map[string]string{
		"unknown permission": strings.Replace(body, "WRITE_ACP", "ALL", 1),
		"unknown type":       strings.Replace(body, `xsi:type="Group"`, `xsi:type="Team"`, 1),
		"unknown group":      strings.Replace(body, meta.AuthenticatedUsers, "http://example.com/g", 1),
		"empty ID":           strings.Replace(body, "<ID>o</ID></Grantee>", "<ID></ID></Grantee>", 1),
	} {
		if _, err := parseACLBody([]byte(bad)); codeOf(err) != s3err.MalformedACLError {
			t.Errorf("%s: %v, want MalformedACLError", name, err)
		}
	}
	if _, err := parseACLBody([]byte(strings.Replace(body, "<Permission>READ", "<Color>red</Color><Permission>READ", 1))); codeOf(err) != s3err.MalformedXML {
		t.Errorf("an unknown element: %v, want MalformedXML", err)
	}
	out, err := xml.Marshal(policyOf("o", []meta.Grant{want[0], want[2]}))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, w := range []string{`<Owner><ID>o</ID><DisplayName>o</DisplayName></Owner>`,
		`<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group"><URI>` + meta.AuthenticatedUsers + `</URI></Grantee><Permission>READ</Permission></Grant>` +
			`<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>o</ID><DisplayName>o</DisplayName></Grantee><Permission>FULL_CONTROL</Permission></Grant>`} {
		if !strings.Contains(s, w) {
			t.Errorf("the policy answered:\n%s\nlacks\n%s", s, w)
		}
	}
}

// FuzzACL: the grant-header and AccessControlPolicy parsers never panic,
// and what they accept is a valid ACL (emails aside, which the service
// resolves).
func FuzzACL(f *testing.F) {
	f.Add(`id="u1", emailAddress="a@b.c", uri=http://acs.amazonaws.com/groups/global/AllUsers`,
		`<AccessControlPolicy><AccessControlList><Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>o</ID></Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>`)
	f.Add(`,,=`, `<AccessControlPolicy/>`)
	f.Fuzz(func(t *testing.T, header, body string) {
		check := func(acl *object.ACL) {
			for _, g := range acl.Grants {
				if g.Type == object.GranteeEmail {
					g.Type = meta.GranteeUser
				}
				if err := meta.CheckGrants([]meta.Grant{g}); err != nil {
					t.Fatalf("accepted an invalid grant %+v: %v", g, err)
				}
			}
		}
		if gs, err := parseGrantHeader(header, meta.PermRead); err == nil {
			for _, g := range gs {
				if g.ID == "" && g.URI == "" {
					t.Fatalf("accepted an empty grantee from %q", header)
				}
			}
		}
		if acl, err := parseACLBody([]byte(body)); err == nil {
			check(acl)
		}
	})
}

// TestACLOperations: the ACL and ownership operations through the
// handler, on the service's fake: canned and body ACLs written and read
// back, versionId, the ownership controls' round trip and errors.
func TestACLOperations(t *testing.T) {
	e := newS3Env(t)
	r := e.alice("GET", "/b?acl", nil)
	r.want(t, 200, "")
	if body := r.Body.String(); !strings.Contains(body, `<Owner><ID>alice</ID><DisplayName>alice</DisplayName></Owner>`) ||
		!strings.Contains(body, `xsi:type="CanonicalUser"><ID>alice</ID>`) || !strings.Contains(body, "<Permission>FULL_CONTROL</Permission>") {
		t.Errorf("GetBucketAcl of a new bucket:\n%s", body)
	}
	e.alice("PUT", "/b?acl", nil, "X-Amz-Acl", "public-read").want(t, 200, "")
	if body := e.alice("GET", "/b?acl", nil).Body.String(); !strings.Contains(body, `xsi:type="Group"><URI>`+meta.AllUsers+`</URI></Grantee><Permission>READ</Permission>`) {
		t.Errorf("GetBucketAcl after public-read:\n%s", body)
	}
	e.alice("PUT", "/b?acl", nil).want(t, 400, s3err.MissingSecurityHeader)
	e.alice("PUT", "/b?acl", []byte("<AccessControlPolicy><Owner><ID>alice</ID></Owner></AccessControlPolicy>"), "X-Amz-Acl", "private").want(t, 400, s3err.UnexpectedContent)
	e.alice("PUT", "/nope?acl", nil).want(t, 404, s3err.NoSuchBucket)
	e.alice("PUT", "/b/k", []byte("data"), "X-Amz-Acl", "authenticated-read").want(t, 200, "")
	if body := e.alice("GET", "/b/k?acl", nil).Body.String(); !strings.Contains(body, meta.AuthenticatedUsers) {
		t.Errorf("GetObjectAcl after a PutObject with authenticated-read:\n%s", body)
	}
	policy := `<AccessControlPolicy><Owner><ID>alice</ID></Owner><AccessControlList><Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>bob</ID></Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>`
	e.alice("PUT", "/b/k?acl", []byte(policy)).want(t, 200, "")
	if body := e.alice("GET", "/b/k?acl", nil).Body.String(); !strings.Contains(body, "<ID>bob</ID>") || strings.Contains(body, meta.AuthenticatedUsers) {
		t.Errorf("GetObjectAcl after PutObjectAcl:\n%s", body)
	}
	e.alice("GET", "/b/k?acl&versionId=bad", nil).want(t, 400, s3err.InvalidArgument)
	e.alice("GET", "/b?ownershipControls", nil).want(t, 404, s3err.OwnershipControlsNotFound)
	oc := `<OwnershipControls><Rule><ObjectOwnership>BucketOwnerPreferred</ObjectOwnership></Rule></OwnershipControls>`
	e.alice("PUT", "/b?ownershipControls", []byte(oc)).want(t, 200, "")
	if body := e.alice("GET", "/b?ownershipControls", nil).Body.String(); !strings.Contains(body, "<ObjectOwnership>BucketOwnerPreferred</ObjectOwnership>") {
		t.Errorf("GetBucketOwnershipControls:\n%s", body)
	}
	e.alice("PUT", "/b?ownershipControls", []byte(strings.Replace(oc, "BucketOwnerPreferred", "Everyone", 1))).want(t, 400, s3err.MalformedXML)
	e.alice("DELETE", "/b?ownershipControls", nil).want(t, 204, "")
	e.alice("GET", "/b?ownershipControls", nil).want(t, 404, s3err.OwnershipControlsNotFound)
}

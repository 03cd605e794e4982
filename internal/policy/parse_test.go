package policy

import (
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// stmt wraps one statement's members into a 2012-10-17 bucket policy.
func stmt(members string) string {
	return `{"Version":"2012-10-17","Statement":[{` + members + `}]}`
}

const okStmt = `"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`

// condStmt names its actions with a wildcard, so any condition key
// applies (S3 checks keys only against actions named outright).
const condStmt = `"Effect":"Allow","Principal":"*","Action":"s3:Get*","Resource":"arn:aws:s3:::bkt/*"`

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, doc, msg string
	}{
		{"empty", ``, "first byte must be '{'"},
		{"array", `[]`, "first byte must be '{'"},
		{"bad json", `{"Version":`, "invalid Json"},
		{"no statement", `{"Version":"2012-10-17"}`, "Missing required field Statement"},
		{"empty statement", `{"Version":"2012-10-17","Statement":[]}`, "Statement is empty"},
		{"bad version", `{"Version":"2012-10-18","Statement":[{` + okStmt + `}]}`, "valid version string"},
		{"unknown top field", `{"Version":"2012-10-17","Foo":1,"Statement":[{` + okStmt + `}]}`, "unknown field"},
		{"field case matters", `{"version":"2012-10-17","Statement":[{` + okStmt + `}]}`, "unknown field"},
		{"statement not object", `{"Statement":["x"]}`, "Statement must be an object"},
		{"no effect", stmt(`"Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`), "Missing required field Effect"},
		{"bad effect", stmt(`"Effect":"allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`), "Invalid effect"},
		{"no principal", stmt(`"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`), "Missing required field Principal"},
		{"bad principal", stmt(`"Effect":"Allow","Principal":"some*one","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`), "Invalid principal"},
		{"principal type", stmt(`"Effect":"Allow","Principal":{"Federated":"cognito-identity.amazonaws.com"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`), "Invalid principal"},
		{"principal wildcard arn", stmt(`"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::*:root"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`), "Invalid principal"},
		{"unknown principal", stmt(`"Effect":"Allow","Principal":{"AWS":"nobody"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`), "Invalid principal"},
		{"both principals", stmt(`"Effect":"Allow","Principal":"*","NotPrincipal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`), "both Principal"},
		{"no action", stmt(`"Effect":"Allow","Principal":"*","Resource":"arn:aws:s3:::bkt/*"`), "Missing required field Action"},
		{"unknown action", stmt(`"Effect":"Allow","Principal":"*","Action":"s3:GetObjectz","Resource":"arn:aws:s3:::bkt/*"`), "invalid action"},
		{"other service", stmt(`"Effect":"Allow","Principal":"*","Action":"iam:*","Resource":"arn:aws:s3:::bkt/*"`), "invalid action"},
		{"wildcard matching nothing", stmt(`"Effect":"Allow","Principal":"*","Action":"s3:Frob*","Resource":"arn:aws:s3:::bkt/*"`), "invalid action"},
		{"action number", stmt(`"Effect":"Allow","Principal":"*","Action":7,"Resource":"arn:aws:s3:::bkt/*"`), "invalid action"},
		{"no resource", stmt(`"Effect":"Allow","Principal":"*","Action":"s3:GetObject"`), "Missing required field Resource"},
		{"other bucket", stmt(`"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other/*"`), "invalid resource"},
		{"not an s3 arn", stmt(`"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:sqs:::bkt/*"`), "invalid resource"},
		{"star resource in a bucket policy", stmt(`"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"*"`), "invalid resource"},
		{"object action on bucket", stmt(`"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt"`), "does not apply"},
		{"bucket action on objects", stmt(`"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bkt/*"`), "does not apply"},
		{"bad variable", stmt(`"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/${aws:nope}/*"`), "policy variable"},
		{"unterminated variable", stmt(`"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/${aws:username"`), "policy variable"},
		{"unknown operator", stmt(okStmt + `,"Condition":{"StringEqualz":{"aws:UserAgent":"x"}}`), "Invalid Condition type : StringEqualz"},
		{"NullIfExists", stmt(okStmt + `,"Condition":{"NullIfExists":{"aws:UserAgent":"true"}}`), "Invalid Condition type"},
		{"unknown key", stmt(okStmt + `,"Condition":{"StringEquals":{"aws:Nope":"x"}}`), "invalid condition key"},
		{"tag key without tag", stmt(okStmt + `,"Condition":{"StringEquals":{"s3:ExistingObjectTag/":"x"}}`), "invalid condition key"},
		{"bad number", stmt(okStmt + `,"Condition":{"NumericLessThan":{"s3:max-keys":"ten"}}`), "Invalid Condition value"},
		{"bad date", stmt(okStmt + `,"Condition":{"DateLessThan":{"aws:CurrentTime":"yesterday"}}`), "Invalid Condition value"},
		{"bad bool", stmt(okStmt + `,"Condition":{"Bool":{"aws:SecureTransport":"yes"}}`), "Invalid Condition value"},
		{"bad cidr", stmt(okStmt + `,"Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/33"}}`), "Invalid IP address in Conditions"},
		{"source ip not an address under Null", stmt(okStmt + `,"Condition":{"Null":{"aws:SourceIp":"true"}}`), "Invalid IP address in Conditions"},
		{"star among principals", stmt(`"Effect":"Allow","Principal":["*","u1"],"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`), "Invalid principal"},
		{"empty principal", stmt(`"Effect":"Allow","Principal":"","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`), "Invalid principal"},
		{"empty principal list", stmt(`"Effect":"Allow","Principal":{"AWS":[]},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`), "Invalid principal"},
		{"prefix on GetObject", stmt(okStmt + `,"Condition":{"StringEquals":{"s3:prefix":"foo"}}`), "Conditions do not apply"},
		{"acl on one of two actions", stmt(`"Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::bkt/*","Condition":{"StringEquals":{"s3:x-amz-acl":"private"}}`), "Conditions do not apply"},
		{"version id on GetObject", stmt(okStmt + `,"Condition":{"StringEquals":{"s3:VersionId":"v"}}`), "Conditions do not apply"},
		{"lower-case operator", stmt(okStmt + `,"Condition":{"stringequals":{"aws:UserAgent":"x"}}`), "Invalid Condition type : stringequals"},
		{"unknown set qualifier", stmt(okStmt + `,"Condition":{"ForSomeValues:StringEquals":{"aws:UserAgent":"x"}}`), "Invalid Condition type : ForSomeValues:StringEquals"},
		{"bad arn", stmt(okStmt + `,"Condition":{"ArnLike":{"aws:SourceArn":"arn:aws"}}`), "Invalid Condition value"},
		{"object value", stmt(okStmt + `,"Condition":{"StringEquals":{"aws:UserAgent":{"a":1}}}`), "Invalid Condition value"},
		{"empty value list", stmt(okStmt + `,"Condition":{"StringEquals":{"aws:UserAgent":[]}}`), "Invalid Condition value"},
		{"duplicate sid", `{"Version":"2012-10-17","Statement":[{"Sid":"a",` + okStmt + `},{"Sid":"a",` + okStmt + `}]}`, "unique"},
	}
	known := func(id string) bool { return id != "nobody" }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc), ParseOptions{Bucket: "bkt", KnownPrincipal: known})
			e := errcode.As(err)
			if e == nil {
				t.Fatalf("Parse = %v, want MalformedPolicy", err)
			}
			if e.Code != errcode.InvalidArgument || e.Detail["s3_code"] != "MalformedPolicy" {
				t.Errorf("error %v: code %v s3_code %v", err, e.Code, e.Detail["s3_code"])
			}
			if !strings.Contains(e.Message, c.msg) {
				t.Errorf("message %q, want it to contain %q", e.Message, c.msg)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	for name, doc := range map[string]string{
		"statement object":    `{"Version":"2012-10-17","Statement":{` + okStmt + `}}`,
		"old version":         `{"Version":"2008-10-17","Statement":[{` + okStmt + `}]}`,
		"no version":          `{"Statement":[{` + okStmt + `}]}`,
		"principal shorthand": stmt(`"Effect":"Allow","Principal":["u1","u2"],"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`),
		"acl on PutObject":    stmt(`"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::bkt/*","Condition":{"StringEquals":{"s3:x-amz-acl":"private"}}`),
		"AWS star":            stmt(`"Effect":"Allow","Principal":{"AWS":"*"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`),
		"service":             stmt(`"Effect":"Allow","Principal":{"Service":"logging.s3.amazonaws.com"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::bkt/*"`),
		"canonical user":      stmt(`"Effect":"Allow","Principal":{"CanonicalUser":"abc"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`),
		"principal list":      stmt(`"Effect":"Allow","Principal":{"AWS":["a","arn:aws:iam::b:root","arn:aws:iam::c:user/K"]},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`),
		"s3 star":             stmt(`"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt/*"`),
		"star action":         stmt(`"Effect":"Allow","Principal":"*","Action":"*","Resource":"arn:aws:s3:::bkt/*"`),
		"lower-case action":   stmt(`"Effect":"Allow","Principal":"*","Action":"s3:getobject","Resource":"arn:aws:s3:::bkt/*"`),
		"NotAction":           stmt(`"Effect":"Deny","Principal":"*","NotAction":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`),
		"NotResource":         stmt(`"Effect":"Deny","Principal":"*","Action":"s3:GetObject","NotResource":"arn:aws:s3:::bkt/public/*"`),
		"wildcard key":        stmt(`"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/a?c/*"`),
		"IfExists":            stmt(okStmt + `,"Condition":{"StringEqualsIfExists":{"aws:UserAgent":"x"}}`),
		"ForAllValues":        stmt(okStmt + `,"Condition":{"ForAllValues:StringEquals":{"s3:RequestObjectTagKeys":["a","b"]}}`),
		"ForAnyValue IfEx":    stmt(okStmt + `,"Condition":{"ForAnyValue:StringLikeIfExists":{"s3:RequestObjectTagKeys":["a*"]}}`),
		"epoch date":          stmt(okStmt + `,"Condition":{"DateGreaterThan":{"aws:EpochTime":1700000000}}`),
		"number value":        stmt(condStmt + `,"Condition":{"NumericEquals":{"s3:max-keys":[10,"20"]}}`),
		"bool value":          stmt(okStmt + `,"Condition":{"Bool":{"aws:SecureTransport":true}}`),
		"escaped variable":    stmt(`"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/${*}/${aws:username, 'anon'}"`),
		"grant keys":          stmt(condStmt + `,"Condition":{"StringEquals":{"s3:x-amz-grant-read":"id=1","s3:object-lock-mode":"GOVERNANCE"}}`),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(doc), ParseOptions{Bucket: "bkt"}); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Without a bucket (a key's own policy): any bucket, no principal.
	if _, err := Parse([]byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}`), ParseOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestParseTooLarge(t *testing.T) {
	doc := stmt(`"Sid":"` + strings.Repeat("x", DefaultMaxSize) + `",` + okStmt)
	_, err := Parse([]byte(doc), ParseOptions{Bucket: "bkt"})
	if e := errcode.As(err); e == nil || e.Code != errcode.TooLarge || e.Detail["s3_code"] != "PolicyTooLarge" {
		t.Fatalf("Parse of %d bytes = %v, want PolicyTooLarge", len(doc), err)
	}
	small := stmt(okStmt)
	if _, err := Parse([]byte(small), ParseOptions{Bucket: "bkt", MaxSize: len(small) - 1}); errcode.Of(err) != errcode.TooLarge {
		t.Fatalf("MaxSize: %v", err)
	}
	if _, err := Parse([]byte(small), ParseOptions{Bucket: "bkt", MaxSize: len(small)}); err != nil {
		t.Fatalf("at MaxSize: %v", err)
	}
}

func TestUses(t *testing.T) {
	p, err := Parse([]byte(stmt(okStmt+`,"Condition":{"StringEquals":{"s3:ExistingObjectTag/Color":"red"}}`)), ParseOptions{Bucket: "bkt"})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Uses("s3:existingobjecttag/") {
		t.Error("Uses(s3:existingobjecttag/) = false")
	}
	if p.Uses("s3:requestobjecttag/") || p.Uses("aws:sourceip") {
		t.Error("Uses reports a key the policy does not name")
	}
	if p.Statements() != 1 {
		t.Errorf("Statements = %d", p.Statements())
	}
}

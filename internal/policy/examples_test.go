package policy

import (
	"testing"
)

// The AWS documentation's bucket-policy examples ("Examples of Amazon S3
// bucket policies", the IAM guide's condition examples), rewritten as
// data: each policy with requests and the decision AWS's rules give.

type probe struct {
	name string
	req  Request
	want Decision
}

// req builds a request; ctx is key, value pairs (a key repeated gives it
// several values).
func req(user, action, resource string, ctx ...string) Request {
	r := Request{Principal: Principal{UserID: user, Anonymous: user == ""}, Action: action, Resource: resource,
		Context: map[string][]string{}}
	for i := 0; i+1 < len(ctx); i += 2 {
		r.Context[ctx[i]] = append(r.Context[ctx[i]], ctx[i+1])
	}
	return r
}

func TestAWSExamples(t *testing.T) {
	const b = "amzn-s3-demo-bucket"
	obj := "arn:aws:s3:::" + b + "/photos/cat.jpg"
	bkt := "arn:aws:s3:::" + b
	cases := []struct {
		name   string
		doc    string
		public bool
		probes []probe
	}{
		{
			name: "public read of objects",
			doc: `{"Version":"2012-10-17","Statement":[{"Sid":"PublicRead","Effect":"Allow","Principal":"*",
				"Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::amzn-s3-demo-bucket/*"]}]}`,
			public: true,
			probes: []probe{
				{"anonymous get", req("", "s3:GetObject", obj), Allow},
				{"anonymous get version", req("", "s3:GetObjectVersion", obj), Allow},
				{"anonymous put", req("", "s3:PutObject", obj), NoMatch},
				{"list is the bucket", req("", "s3:ListBucket", bkt), NoMatch},
				{"other bucket", req("", "s3:GetObject", "arn:aws:s3:::other/photos/cat.jpg"), NoMatch},
			},
		},
		{
			name: "IP allow with an excluded address",
			doc: `{"Version":"2012-10-17","Id":"S3PolicyId1","Statement":[{"Sid":"IPAllow","Effect":"Allow","Principal":"*",
				"Action":"s3:*","Resource":"arn:aws:s3:::amzn-s3-demo-bucket/*",
				"Condition":{"IpAddress":{"aws:SourceIp":"54.240.143.0/24"},"NotIpAddress":{"aws:SourceIp":"54.240.143.188/32"}}}]}`,
			public: false,
			probes: []probe{
				{"in range", req("", "s3:GetObject", obj, "aws:sourceip", "54.240.143.7"), Allow},
				{"excluded address", req("", "s3:GetObject", obj, "aws:sourceip", "54.240.143.188"), NoMatch},
				{"outside", req("", "s3:PutObject", obj, "aws:sourceip", "54.240.144.1"), NoMatch},
				{"no source ip", req("", "s3:GetObject", obj), NoMatch},
			},
		},
		{
			name: "deny outside IPv4 and IPv6 ranges",
			doc: `{"Version":"2012-10-17","Statement":[{"Sid":"IPDeny","Effect":"Deny","Principal":"*","Action":"s3:*",
				"Resource":["arn:aws:s3:::amzn-s3-demo-bucket","arn:aws:s3:::amzn-s3-demo-bucket/*"],
				"Condition":{"NotIpAddress":{"aws:SourceIp":["192.0.2.0/24","2001:DB8:1234:5678::/64"]}}},
				{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:root"},"Action":"s3:*",
				"Resource":["arn:aws:s3:::amzn-s3-demo-bucket","arn:aws:s3:::amzn-s3-demo-bucket/*"]}]}`,
			probes: []probe{
				{"v4 inside", req("111122223333", "s3:GetObject", obj, "aws:sourceip", "192.0.2.44"), Allow},
				{"v6 inside", req("111122223333", "s3:ListBucket", bkt, "aws:sourceip", "2001:db8:1234:5678::1"), Allow},
				{"v4-mapped v6 inside", req("111122223333", "s3:GetObject", obj, "aws:sourceip", "::ffff:192.0.2.9"), Allow},
				{"v6 outside", req("111122223333", "s3:GetObject", obj, "aws:sourceip", "2001:db8:1234:5679::1"), Deny},
				{"v4 outside", req("111122223333", "s3:GetObject", obj, "aws:sourceip", "198.51.100.1"), Deny},
				{"other account inside", req("444455556666", "s3:GetObject", obj, "aws:sourceip", "192.0.2.44"), NoMatch},
			},
		},
		{
			name: "require HTTPS",
			doc: `{"Version":"2012-10-17","Statement":[{"Sid":"RestrictToTLSRequestsOnly","Effect":"Deny","Principal":"*",
				"Action":"s3:*","Resource":["arn:aws:s3:::amzn-s3-demo-bucket","arn:aws:s3:::amzn-s3-demo-bucket/*"],
				"Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`,
			probes: []probe{
				{"http", req("u1", "s3:GetObject", obj, "aws:securetransport", "false"), Deny},
				{"https", req("u1", "s3:GetObject", obj, "aws:securetransport", "true"), NoMatch},
				{"key missing", req("u1", "s3:GetObject", obj), NoMatch},
			},
		},
		{
			name: "HTTP referer",
			doc: `{"Version":"2012-10-17","Id":"HTTP referer policy example","Statement":[{"Sid":"Allow only GET requests originating from www.example.com and example.com.",
				"Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":"arn:aws:s3:::amzn-s3-demo-bucket/*",
				"Condition":{"StringLike":{"aws:Referer":["http://www.example.com/*","http://example.com/*"]}}}]}`,
			public: true,
			probes: []probe{
				{"referer", req("", "s3:GetObject", obj, "aws:referer", "http://www.example.com/index.html"), Allow},
				{"other referer", req("", "s3:GetObject", obj, "aws:referer", "http://evil.example/"), NoMatch},
				{"case matters", req("", "s3:GetObject", obj, "aws:referer", "HTTP://www.example.com/x"), NoMatch},
			},
		},
		{
			name: "home folder per user with policy variables",
			doc: `{"Version":"2012-10-17","Statement":[
				{"Sid":"AllowListingOfUserFolder","Effect":"Allow","Principal":{"AWS":["u1","u2"]},"Action":"s3:ListBucket",
				 "Resource":"arn:aws:s3:::amzn-s3-demo-bucket","Condition":{"StringLike":{"s3:prefix":["home/${aws:username}/*","home/${aws:username}"]}}},
				{"Sid":"AllowAllS3ActionsInUserFolder","Effect":"Allow","Principal":{"AWS":["u1","u2"]},"Action":["s3:GetObject","s3:PutObject","s3:DeleteObject"],
				 "Resource":"arn:aws:s3:::amzn-s3-demo-bucket/home/${aws:username}/*"}]}`,
			probes: []probe{
				{"own folder list", req("u1", "s3:ListBucket", bkt, "aws:username", "alice", "s3:prefix", "home/alice/"), Allow},
				{"other folder list", req("u1", "s3:ListBucket", bkt, "aws:username", "alice", "s3:prefix", "home/bob/"), NoMatch},
				{"own object", req("u2", "s3:PutObject", "arn:aws:s3:::"+b+"/home/bob/notes.txt", "aws:username", "bob"), Allow},
				{"other's object", req("u2", "s3:GetObject", "arn:aws:s3:::"+b+"/home/alice/notes.txt", "aws:username", "bob"), NoMatch},
				{"no username", req("u2", "s3:GetObject", "arn:aws:s3:::"+b+"/home//x"), NoMatch},
				{"not a named principal", req("u3", "s3:GetObject", "arn:aws:s3:::"+b+"/home/carol/x", "aws:username", "carol"), NoMatch},
			},
		},
		{
			name: "require SSE-KMS and deny unencrypted",
			doc: `{"Version":"2012-10-17","Statement":[
				{"Sid":"DenyIncorrectEncryptionHeader","Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::amzn-s3-demo-bucket/*",
				 "Condition":{"StringNotEquals":{"s3:x-amz-server-side-encryption":"aws:kms"}}},
				{"Sid":"DenyUnencryptedObjectUploads","Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::amzn-s3-demo-bucket/*",
				 "Condition":{"Null":{"s3:x-amz-server-side-encryption":"true"}}}]}`,
			probes: []probe{
				{"kms", req("u1", "s3:PutObject", obj, "s3:x-amz-server-side-encryption", "aws:kms"), NoMatch},
				{"AES256", req("u1", "s3:PutObject", obj, "s3:x-amz-server-side-encryption", "AES256"), Deny},
				{"none", req("u1", "s3:PutObject", obj), Deny},
				{"get unaffected", req("u1", "s3:GetObject", obj), NoMatch},
			},
		},
		{
			name: "objects tagged for public reading",
			doc: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject",
				"Resource":"arn:aws:s3:::amzn-s3-demo-bucket/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/public":"yes"}}}]}`,
			public: true,
			probes: []probe{
				{"tagged", req("", "s3:GetObject", obj, "s3:existingobjecttag/public", "yes"), Allow},
				{"tag no", req("", "s3:GetObject", obj, "s3:existingobjecttag/public", "no"), NoMatch},
				{"untagged", req("", "s3:GetObject", obj), NoMatch},
			},
		},
		{
			name: "uploads must carry only allowed tag keys",
			doc: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:root"},
				"Action":["s3:PutObject","s3:PutObjectTagging"],"Resource":"arn:aws:s3:::amzn-s3-demo-bucket/*",
				"Condition":{"ForAllValues:StringLike":{"s3:RequestObjectTagKeys":["Owner","CreationDate"]},
				             "ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":["Owner"]}}}]}`,
			probes: []probe{
				{"allowed keys", req("111122223333", "s3:PutObject", obj, "s3:requestobjecttagkeys", "Owner", "s3:requestobjecttagkeys", "CreationDate"), Allow},
				{"extra key", req("111122223333", "s3:PutObject", obj, "s3:requestobjecttagkeys", "Owner", "s3:requestobjecttagkeys", "Project"), NoMatch},
				{"owner missing", req("111122223333", "s3:PutObject", obj, "s3:requestobjecttagkeys", "CreationDate"), NoMatch},
				{"no tags", req("111122223333", "s3:PutObject", obj), NoMatch},
			},
		},
		{
			name: "cross-account upload with bucket-owner-full-control",
			doc: `{"Version":"2012-10-17","Statement":[{"Sid":"AllowCrossAccountUpload","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:user/AKIAEXAMPLE"},
				"Action":"s3:PutObject","Resource":"arn:aws:s3:::amzn-s3-demo-bucket/*",
				"Condition":{"StringEquals":{"s3:x-amz-acl":"bucket-owner-full-control"}}}]}`,
			probes: []probe{
				{"with acl", Request{Principal: Principal{UserID: "111122223333", KeyID: "AKIAEXAMPLE"}, Action: "s3:PutObject", Resource: obj,
					Context: map[string][]string{"s3:x-amz-acl": {"bucket-owner-full-control"}}}, Allow},
				{"other key", Request{Principal: Principal{UserID: "111122223333", KeyID: "AKIAOTHER"}, Action: "s3:PutObject", Resource: obj,
					Context: map[string][]string{"s3:x-amz-acl": {"bucket-owner-full-control"}}}, NoMatch},
				{"without acl", Request{Principal: Principal{UserID: "111122223333", KeyID: "AKIAEXAMPLE"}, Action: "s3:PutObject", Resource: obj}, NoMatch},
			},
		},
		{
			name: "deny old TLS and require MFA for deletes",
			doc: `{"Version":"2012-10-17","Statement":[
				{"Sid":"EnforceTLSv12orHigher","Effect":"Deny","Principal":{"AWS":"*"},"Action":["s3:*"],
				 "Resource":["arn:aws:s3:::amzn-s3-demo-bucket/*","arn:aws:s3:::amzn-s3-demo-bucket"],"Condition":{"NumericLessThan":{"s3:TlsVersion":1.2}}},
				{"Sid":"RequireMFA","Effect":"Deny","Principal":"*","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::amzn-s3-demo-bucket/*",
				 "Condition":{"Null":{"aws:MultiFactorAuthAge":true}}}]}`,
			probes: []probe{
				{"tls 1.0", req("u1", "s3:GetObject", obj, "s3:tlsversion", "1.0"), Deny},
				{"tls 1.3", req("u1", "s3:GetObject", obj, "s3:tlsversion", "1.3"), NoMatch},
				{"delete without mfa", req("u1", "s3:DeleteObject", obj, "s3:tlsversion", "1.3"), Deny},
				{"delete with mfa", req("u1", "s3:DeleteObject", obj, "s3:tlsversion", "1.3", "aws:multifactorauthage", "30"), NoMatch},
			},
		},
		{
			name: "limit max-keys and a time window",
			doc: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::amzn-s3-demo-bucket",
				"Condition":{"NumericLessThanEquals":{"s3:max-keys":"10"},"DateGreaterThan":{"aws:CurrentTime":"2020-04-01T00:00:00Z"},
				"DateLessThan":{"aws:CurrentTime":"2020-06-30T23:59:59Z"}}}]}`,
			public: true,
			probes: []probe{
				{"in window", req("", "s3:ListBucket", bkt, "s3:max-keys", "10", "aws:currenttime", "2020-05-01T12:00:00Z"), Allow},
				{"too many keys", req("", "s3:ListBucket", bkt, "s3:max-keys", "11", "aws:currenttime", "2020-05-01T12:00:00Z"), NoMatch},
				{"after window", req("", "s3:ListBucket", bkt, "s3:max-keys", "5", "aws:currenttime", "2021-01-01T00:00:00Z"), NoMatch},
			},
		},
		{
			name: "deny everyone but one account (NotPrincipal)",
			doc: `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","NotPrincipal":{"AWS":["arn:aws:iam::111122223333:root"]},
				"Action":"s3:*","Resource":["arn:aws:s3:::amzn-s3-demo-bucket","arn:aws:s3:::amzn-s3-demo-bucket/*"]}]}`,
			probes: []probe{
				{"the account", req("111122223333", "s3:GetObject", obj), NoMatch},
				{"another", req("444455556666", "s3:GetObject", obj), Deny},
				{"anonymous", req("", "s3:ListBucket", bkt), Deny},
			},
		},
		{
			name: "source VPC endpoint restricts a public grant",
			doc: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::amzn-s3-demo-bucket/*",
				"Condition":{"StringEquals":{"aws:SourceVpce":"vpce-1a2b3c4d"}}}]}`,
			public: false,
			probes: []probe{
				{"from the endpoint", req("", "s3:GetObject", obj, "aws:sourcevpce", "vpce-1a2b3c4d"), Allow},
				{"elsewhere", req("", "s3:GetObject", obj), NoMatch},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse([]byte(c.doc), ParseOptions{Bucket: b})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := p.IsPublic(); got != c.public {
				t.Errorf("IsPublic = %v, want %v", got, c.public)
			}
			for _, pr := range c.probes {
				if got := p.Evaluate(&pr.req); got != pr.want {
					t.Errorf("%s: Evaluate = %v, want %v", pr.name, got, pr.want)
				}
			}
		})
	}
}

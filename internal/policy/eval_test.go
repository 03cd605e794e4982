package policy

import (
	"testing"
)

// cond parses a one-statement policy allowing everyone s3:GetObject on
// bkt/* under the given Condition block.
func condPolicy(t *testing.T, block string) *Policy {
	t.Helper()
	p, err := Parse([]byte(stmt(condStmt+`,"Condition":`+block)), ParseOptions{Bucket: "bkt"})
	if err != nil {
		t.Fatalf("Parse %s: %v", block, err)
	}
	return p
}

// ctx builds a context from key, value pairs; a key with the value
// "<empty>" is present with no values.
func ctx(kv ...string) map[string][]string {
	m := map[string][]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "<empty>" {
			m[kv[i]] = []string{}
			continue
		}
		m[kv[i]] = append(m[kv[i]], kv[i+1])
	}
	return m
}

func TestOperators(t *testing.T) {
	type check struct {
		ctx  map[string][]string
		want bool
	}
	cases := []struct {
		name   string
		block  string
		checks []check
	}{
		{"StringEquals", `{"StringEquals":{"aws:UserAgent":["curl","wget"]}}`, []check{
			{ctx("aws:useragent", "curl"), true}, {ctx("aws:useragent", "Curl"), false}, {ctx("aws:useragent", "cur*"), false},
			{ctx(), false}, {ctx("aws:useragent", "x", "aws:useragent", "wget"), true}}},
		{"StringEquals has no wildcards", `{"StringEquals":{"aws:UserAgent":"cu*"}}`, []check{
			{ctx("aws:useragent", "curl"), false}, {ctx("aws:useragent", "cu*"), true}}},
		{"StringNotEquals", `{"StringNotEquals":{"aws:UserAgent":"curl"}}`, []check{
			{ctx("aws:useragent", "curl"), false}, {ctx("aws:useragent", "wget"), true}, {ctx(), true}}},
		{"StringEqualsIgnoreCase", `{"StringEqualsIgnoreCase":{"aws:UserAgent":"CuRl"}}`, []check{
			{ctx("aws:useragent", "curl"), true}, {ctx("aws:useragent", "CURL"), true}, {ctx("aws:useragent", "curls"), false}}},
		{"StringNotEqualsIgnoreCase", `{"StringNotEqualsIgnoreCase":{"aws:UserAgent":"curl"}}`, []check{
			{ctx("aws:useragent", "CURL"), false}, {ctx("aws:useragent", "wget"), true}}},
		{"StringLike", `{"StringLike":{"s3:prefix":["docs/*","a?c"]}}`, []check{
			{ctx("s3:prefix", "docs/"), true}, {ctx("s3:prefix", "docs/x/y"), true}, {ctx("s3:prefix", "abc"), true},
			{ctx("s3:prefix", "ac"), false}, {ctx("s3:prefix", "aéc"), true}, {ctx("s3:prefix", "Docs/"), false}, {ctx(), false}}},
		{"StringNotLike", `{"StringNotLike":{"s3:prefix":"private/*"}}`, []check{
			{ctx("s3:prefix", "private/x"), false}, {ctx("s3:prefix", "public/x"), true}, {ctx(), true}}},
		{"StringLike middle stars", `{"StringLike":{"aws:UserAgent":"*mid*end"}}`, []check{
			{ctx("aws:useragent", "xxmidyyend"), true}, {ctx("aws:useragent", "midend"), true}, {ctx("aws:useragent", "midendx"), false},
			{ctx("aws:useragent", "endmid"), false}}},
		{"NumericEquals", `{"NumericEquals":{"s3:max-keys":"10"}}`, []check{
			{ctx("s3:max-keys", "10"), true}, {ctx("s3:max-keys", "10.0"), true}, {ctx("s3:max-keys", "11"), false}, {ctx("s3:max-keys", "x"), false}}},
		{"NumericNotEquals", `{"NumericNotEquals":{"s3:max-keys":"10"}}`, []check{
			{ctx("s3:max-keys", "10"), false}, {ctx("s3:max-keys", "9"), true}, {ctx(), true}}},
		{"NumericLessThan", `{"NumericLessThan":{"s3:max-keys":10}}`, []check{
			{ctx("s3:max-keys", "9"), true}, {ctx("s3:max-keys", "10"), false}}},
		{"NumericLessThanEquals", `{"NumericLessThanEquals":{"s3:max-keys":10}}`, []check{
			{ctx("s3:max-keys", "10"), true}, {ctx("s3:max-keys", "11"), false}}},
		{"NumericGreaterThan", `{"NumericGreaterThan":{"s3:max-keys":10}}`, []check{
			{ctx("s3:max-keys", "11"), true}, {ctx("s3:max-keys", "10"), false}}},
		{"NumericGreaterThanEquals", `{"NumericGreaterThanEquals":{"s3:max-keys":10}}`, []check{
			{ctx("s3:max-keys", "10"), true}, {ctx("s3:max-keys", "9"), false}}},
		{"DateEquals", `{"DateEquals":{"aws:CurrentTime":"2026-01-02T03:04:05Z"}}`, []check{
			{ctx("aws:currenttime", "2026-01-02T03:04:05Z"), true}, {ctx("aws:currenttime", "2026-01-02T04:04:05+01:00"), true},
			{ctx("aws:currenttime", "2026-01-02T03:04:06Z"), false}, {ctx("aws:currenttime", "garbage"), false}}},
		{"DateNotEquals", `{"DateNotEquals":{"aws:CurrentTime":"2026-01-02"}}`, []check{
			{ctx("aws:currenttime", "2026-01-02T00:00:00Z"), false}, {ctx("aws:currenttime", "2026-01-03T00:00:00Z"), true}}},
		{"DateLessThan", `{"DateLessThan":{"aws:CurrentTime":"2026-01-02T00:00:00Z"}}`, []check{
			{ctx("aws:currenttime", "2026-01-01T23:59:59Z"), true}, {ctx("aws:currenttime", "2026-01-02T00:00:00Z"), false}}},
		{"DateLessThanEquals", `{"DateLessThanEquals":{"aws:CurrentTime":"2026-01-02T00:00:00Z"}}`, []check{
			{ctx("aws:currenttime", "2026-01-02T00:00:00Z"), true}, {ctx("aws:currenttime", "2026-01-02T00:00:01Z"), false}}},
		{"DateGreaterThan epoch", `{"DateGreaterThan":{"aws:EpochTime":"1700000000"}}`, []check{
			{ctx("aws:epochtime", "1700000001"), true}, {ctx("aws:epochtime", "1700000000"), false},
			{ctx("aws:epochtime", "2024-01-01T00:00:00Z"), true}}},
		{"DateGreaterThanEquals ISO vs epoch", `{"DateGreaterThanEquals":{"aws:CurrentTime":"2023-11-14T22:13:20Z"}}`, []check{
			{ctx("aws:currenttime", "1700000000"), true}, {ctx("aws:currenttime", "1699999999"), false}}},
		{"Bool", `{"Bool":{"aws:SecureTransport":"true"}}`, []check{
			{ctx("aws:securetransport", "true"), true}, {ctx("aws:securetransport", "TRUE"), true},
			{ctx("aws:securetransport", "false"), false}, {ctx(), false}}},
		{"IpAddress v4", `{"IpAddress":{"aws:SourceIp":["10.1.0.0/16","192.0.2.7"]}}`, []check{
			{ctx("aws:sourceip", "10.1.200.3"), true}, {ctx("aws:sourceip", "10.2.0.1"), false},
			{ctx("aws:sourceip", "192.0.2.7"), true}, {ctx("aws:sourceip", "192.0.2.8"), false},
			{ctx("aws:sourceip", "::ffff:10.1.0.1"), true}, {ctx("aws:sourceip", "bogus"), false}}},
		{"IpAddress v6", `{"IpAddress":{"aws:SourceIp":"2001:DB8:1234:5678::/64"}}`, []check{
			{ctx("aws:sourceip", "2001:db8:1234:5678:abcd::1"), true}, {ctx("aws:sourceip", "2001:db8:1234:5679::1"), false},
			{ctx("aws:sourceip", "10.0.0.1"), false}}},
		{"IpAddress mapped v4 in the policy", `{"IpAddress":{"aws:SourceIp":"::ffff:10.0.0.0/104"}}`, []check{
			{ctx("aws:sourceip", "10.9.9.9"), true}, {ctx("aws:sourceip", "11.0.0.1"), false}}},
		{"NotIpAddress", `{"NotIpAddress":{"aws:SourceIp":["127.0.0.0/8","::1/128"]}}`, []check{
			{ctx("aws:sourceip", "127.0.0.1"), false}, {ctx("aws:sourceip", "::1"), false},
			{ctx("aws:sourceip", "192.0.2.1"), true}, {ctx(), true}}},
		{"ArnEquals", `{"ArnEquals":{"aws:SourceArn":"arn:aws:s3:::logs"}}`, []check{
			{ctx("aws:sourcearn", "arn:aws:s3:::logs"), true}, {ctx("aws:sourcearn", "arn:aws:s3:::logs2"), false}}},
		{"ArnLike", `{"ArnLike":{"aws:SourceArn":"arn:aws:sns:*:123456789012:topic-*"}}`, []check{
			{ctx("aws:sourcearn", "arn:aws:sns:us-east-1:123456789012:topic-a"), true},
			{ctx("aws:sourcearn", "arn:aws:sns:us-east-1:999:123456789012:topic-a"), false},
			{ctx("aws:sourcearn", "arn:aws:sns:us-east-1:123456789012"), false}}},
		{"ArnNotEquals", `{"ArnNotEquals":{"aws:SourceArn":"arn:aws:s3:::logs"}}`, []check{
			{ctx("aws:sourcearn", "arn:aws:s3:::logs"), false}, {ctx("aws:sourcearn", "arn:aws:s3:::other"), true}, {ctx(), true}}},
		{"ArnNotLike", `{"ArnNotLike":{"aws:SourceArn":"arn:aws:s3:::log*"}}`, []check{
			{ctx("aws:sourcearn", "arn:aws:s3:::logs"), false}, {ctx("aws:sourcearn", "arn:aws:s3:::data"), true}}},
		{"Null true", `{"Null":{"s3:x-amz-server-side-encryption":"true"}}`, []check{
			{ctx(), true}, {ctx("s3:x-amz-server-side-encryption", "AES256"), false}}},
		{"Null false", `{"Null":{"s3:x-amz-server-side-encryption":false}}`, []check{
			{ctx(), false}, {ctx("s3:x-amz-server-side-encryption", "AES256"), true}}},
		{"IfExists", `{"StringEqualsIfExists":{"s3:x-amz-acl":"private"}}`, []check{
			{ctx(), true}, {ctx("s3:x-amz-acl", "private"), true}, {ctx("s3:x-amz-acl", "public-read"), false}}},
		{"NumericLessThanIfExists", `{"NumericLessThanIfExists":{"s3:max-keys":"100"}}`, []check{
			{ctx(), true}, {ctx("s3:max-keys", "99"), true}, {ctx("s3:max-keys", "100"), false}}},
		{"ForAnyValue", `{"ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":["a","b"]}}`, []check{
			{ctx("s3:requestobjecttagkeys", "x", "s3:requestobjecttagkeys", "b"), true},
			{ctx("s3:requestobjecttagkeys", "x"), false}, {ctx(), false}, {ctx("s3:requestobjecttagkeys", "<empty>"), false}}},
		{"ForAnyValue negated", `{"ForAnyValue:StringNotEquals":{"s3:RequestObjectTagKeys":["a","b"]}}`, []check{
			{ctx("s3:requestobjecttagkeys", "a", "s3:requestobjecttagkeys", "x"), true},
			{ctx("s3:requestobjecttagkeys", "a", "s3:requestobjecttagkeys", "b"), false}, {ctx(), false}}},
		{"ForAllValues", `{"ForAllValues:StringLike":{"s3:RequestObjectTagKeys":["a*","b"]}}`, []check{
			{ctx("s3:requestobjecttagkeys", "a1", "s3:requestobjecttagkeys", "b"), true},
			{ctx("s3:requestobjecttagkeys", "a1", "s3:requestobjecttagkeys", "c"), false},
			// over an empty set, every value matches
			{ctx(), true}, {ctx("s3:requestobjecttagkeys", "<empty>"), true}}},
		{"ForAllValues negated", `{"ForAllValues:StringNotEquals":{"s3:RequestObjectTagKeys":["secret"]}}`, []check{
			{ctx("s3:requestobjecttagkeys", "a", "s3:requestobjecttagkeys", "b"), true},
			{ctx("s3:requestobjecttagkeys", "a", "s3:requestobjecttagkeys", "secret"), false}, {ctx(), true}}},
		{"ForAnyValue IfExists", `{"ForAnyValue:StringEqualsIfExists":{"s3:RequestObjectTagKeys":"a"}}`, []check{
			{ctx(), true}, {ctx("s3:requestobjecttagkeys", "b"), false}}},
		{"several keys are ANDed", `{"StringEquals":{"aws:UserAgent":"curl","s3:prefix":"p"},"Bool":{"aws:SecureTransport":"true"}}`, []check{
			{ctx("aws:useragent", "curl", "s3:prefix", "p", "aws:securetransport", "true"), true},
			{ctx("aws:useragent", "curl", "s3:prefix", "p", "aws:securetransport", "false"), false},
			{ctx("aws:useragent", "curl", "aws:securetransport", "true"), false}}},
		{"variable in a value", `{"StringEquals":{"s3:prefix":"home/${aws:userid}/"}}`, []check{
			{ctx("s3:prefix", "home/u1/", "aws:userid", "u1"), true}, {ctx("s3:prefix", "home/u2/", "aws:userid", "u1"), false},
			{ctx("s3:prefix", "home//"), false}}},
		{"variable default", `{"StringEquals":{"s3:prefix":"home/${aws:username,'guest'}/"}}`, []check{
			{ctx("s3:prefix", "home/guest/"), true}, {ctx("s3:prefix", "home/ann/", "aws:username", "ann"), true}}},
		{"escaped wildcard", `{"StringLike":{"s3:prefix":"a${*}b*"}}`, []check{
			{ctx("s3:prefix", "a*bxx"), true}, {ctx("s3:prefix", "axxb"), false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := condPolicy(t, c.block)
			for i, ch := range c.checks {
				r := Request{Principal: Principal{Anonymous: true}, Action: "s3:GetObject", Resource: "arn:aws:s3:::bkt/k", Context: ch.ctx}
				want := NoMatch
				if ch.want {
					want = Allow
				}
				if got := p.Evaluate(&r); got != want {
					t.Errorf("check %d %v: %v, want %v", i, ch.ctx, got, want)
				}
			}
		})
	}
}

func TestVariablesOnlyIn2012(t *testing.T) {
	doc := `{"Version":"2008-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/${aws:username}/*"}]}`
	p, err := Parse([]byte(doc), ParseOptions{Bucket: "bkt"})
	if err != nil {
		t.Fatal(err)
	}
	r := req("", "s3:GetObject", "arn:aws:s3:::bkt/ann/x", "aws:username", "ann")
	if got := p.Evaluate(&r); got != NoMatch {
		t.Errorf("2008 policy substituted a variable: %v", got)
	}
	r = req("", "s3:GetObject", "arn:aws:s3:::bkt/${aws:username}/x")
	if got := p.Evaluate(&r); got != Allow {
		t.Errorf("2008 policy: literal ${...}: %v", got)
	}
}

func TestMatching(t *testing.T) {
	doc := `{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Principal":{"AWS":["owner1","arn:aws:iam::acct2:root","arn:aws:iam::acct3:user/KEY3"],"CanonicalUser":"canon4"},
		 "Action":["s3:Get*","s3:listbucket"],"Resource":["arn:aws:s3:::bkt/Docs/*","arn:aws:s3:::bkt"]},
		{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/Docs/secret?.txt"},
		{"Effect":"Deny","Principal":"*","NotAction":["s3:Get*","s3:List*"],"Resource":"arn:aws:s3:::bkt/Docs/*"},
		{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","NotResource":"arn:aws:s3:::bkt/Docs/*"}]}`
	p, err := Parse([]byte(doc), ParseOptions{Bucket: "bkt"})
	if err != nil {
		t.Fatal(err)
	}
	key := func(k string) string { return "arn:aws:s3:::bkt/" + k }
	for _, c := range []struct {
		name string
		r    Request
		want Decision
	}{
		{"account by id", req("owner1", "s3:GetObject", key("Docs/a")), Allow},
		{"key by bare id", Request{Principal: Principal{UserID: "x", KeyID: "owner1"}, Action: "s3:GetObject", Resource: key("Docs/a")}, Allow},
		{"account root arn", req("acct2", "s3:GetObjectTagging", key("Docs/a")), Allow},
		{"user arn needs the key", req("acct3", "s3:GetObject", key("Docs/a")), NoMatch},
		{"user arn with the key", Request{Principal: Principal{UserID: "acct3", KeyID: "KEY3"}, Action: "s3:GetObject", Resource: key("Docs/a")}, Allow},
		{"canonical user", req("canon4", "s3:GetObject", key("Docs/a")), Allow},
		{"anonymous is nobody named", req("", "s3:GetObject", key("Docs/a")), NoMatch},
		{"action case-insensitive", req("owner1", "S3:GETOBJECT", key("Docs/a")), Allow},
		{"lower-case policy action", req("owner1", "s3:ListBucket", "arn:aws:s3:::bkt"), Allow},
		{"resource case-sensitive", req("owner1", "s3:GetObject", key("docs/a")), NoMatch},
		{"unknown action", req("owner1", "s3:GetFrobnicator", key("Docs/a")), Allow},
		{"deny wins with ?", req("owner1", "s3:GetObject", key("Docs/secret1.txt")), Deny},
		{"? is one character", req("owner1", "s3:GetObject", key("Docs/secret12.txt")), Allow},
		{"NotAction deny", req("owner1", "s3:DeleteObject", key("Docs/a")), Deny},
		{"NotAction spares", req("owner1", "s3:ListBucket", "arn:aws:s3:::bkt"), Allow},
		{"NotResource allow", req("", "s3:PutObject", key("Uploads/a")), Allow},
		{"NotResource excluded", req("", "s3:PutObject", key("Docs/a")), Deny},
	} {
		if got := p.Evaluate(&c.r); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestIsPublic(t *testing.T) {
	for _, c := range []struct {
		block string
		want  bool
	}{
		{`{}`, true},
		{`{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, false},
		{`{"IpAddress":{"aws:SourceIp":"0.0.0.0/0"}}`, true},
		{`{"IpAddress":{"aws:SourceIp":"2001:db8::/32"}}`, false},
		{`{"IpAddress":{"aws:SourceIp":"::/0"}}`, true},
		{`{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, true},
		{`{"StringEquals":{"aws:SourceVpc":"vpc-1"}}`, false},
		{`{"StringLike":{"aws:SourceVpc":"vpc-*"}}`, true},
		{`{"StringEquals":{"aws:SourceVpc":"vpc-${aws:username}"}}`, true},
		{`{"StringEqualsIfExists":{"aws:SourceVpc":"vpc-1"}}`, true},
		{`{"StringEquals":{"aws:PrincipalAccount":"111122223333"}}`, false},
		{`{"ArnEquals":{"aws:SourceArn":"arn:aws:s3:::logs"}}`, false},
		{`{"ArnLike":{"aws:SourceArn":"arn:aws:s3:::log*"}}`, true},
		{`{"StringEquals":{"aws:UserAgent":"curl"}}`, true},
		{`{"Bool":{"aws:SecureTransport":"true"}}`, true},
	} {
		p := condPolicy(t, c.block)
		if got := p.IsPublic(); got != c.want {
			t.Errorf("IsPublic with %s = %v, want %v", c.block, got, c.want)
		}
	}
	for doc, want := range map[string]bool{
		stmt(`"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`):                             false,
		stmt(`"Effect":"Allow","Principal":{"AWS":"u1"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`):                   false,
		stmt(`"Effect":"Allow","Principal":{"AWS":["*"]},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`):                  true,
		stmt(`"Effect":"Allow","NotPrincipal":{"AWS":"u1"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`):                true,
		stmt(`"Effect":"Allow","Principal":{"CanonicalUser":"c1"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"`):         false,
		stmt(`"Effect":"Allow","Principal":{"Service":"logging.s3.amazonaws.com"},"Action":"s3:*","Resource":"arn:aws:s3:::bkt/*"`): false,
	} {
		p, err := Parse([]byte(doc), ParseOptions{Bucket: "bkt"})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.IsPublic(); got != want {
			t.Errorf("IsPublic(%s) = %v, want %v", doc, got, want)
		}
	}
}

// TestEvaluateAllocatesNothing keeps the hot path free of allocations.
func TestEvaluateAllocatesNothing(t *testing.T) {
	p, err := Parse([]byte(bench20), ParseOptions{Bucket: "bench"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Request{benchMatch, benchMiss} {
		if n := testing.AllocsPerRun(100, func() { p.Evaluate(&r) }); n != 0 {
			t.Errorf("Evaluate(%s %s) allocates %v times", r.Action, r.Resource, n)
		}
	}
}

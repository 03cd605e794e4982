package policy

import (
	"fmt"
	"strings"
	"testing"
)

// bench20 is a realistic 20-statement bucket policy: per-team prefixes
// with IP, TLS, referer, tag and time conditions, a few Denies.
var bench20 = func() string {
	var s []string
	for i := 0; i < 16; i++ {
		s = append(s, fmt.Sprintf(`{"Sid":"team%d","Effect":"Allow","Principal":{"AWS":["arn:aws:iam::acct%d:root","key%d"]},
			"Action":["s3:GetObject","s3:PutObject","s3:DeleteObject","s3:GetObjectTagging"],
			"Resource":"arn:aws:s3:::bench/teams/team%d/*",
			"Condition":{"IpAddress":{"aws:SourceIp":["10.%d.0.0/16","2001:db8:%x::/48"]},"Bool":{"aws:SecureTransport":"true"}}}`, i, i, i, i, i, i))
	}
	s = append(s,
		`{"Sid":"list","Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bench",
		  "Condition":{"StringLike":{"s3:prefix":["public/*","teams/${aws:userid}/*"]},"NumericLessThanEquals":{"s3:max-keys":"1000"}}}`,
		`{"Sid":"public","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bench/public/*",
		  "Condition":{"StringLike":{"aws:Referer":["https://www.example.com/*","https://example.com/*"]},"DateLessThan":{"aws:CurrentTime":"2030-01-01T00:00:00Z"}}}`,
		`{"Sid":"denyHTTP","Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::bench","arn:aws:s3:::bench/*"],
		  "Condition":{"Bool":{"aws:SecureTransport":"false"}}}`,
		`{"Sid":"denySecret","Effect":"Deny","Principal":"*","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::bench/*/secret/*",
		  "Condition":{"StringNotEquals":{"s3:ExistingObjectTag/clearance":"high"}}}`)
	return `{"Version":"2012-10-17","Id":"bench","Statement":[` + strings.Join(s, ",") + `]}`
}()

// benchMatch is allowed by the 15th statement; benchMiss matches none.
var (
	benchMatch = Request{Principal: Principal{UserID: "acct15", KeyID: "AKIA15"}, Action: "s3:GetObject",
		Resource: "arn:aws:s3:::bench/teams/team15/reports/2026/q3.pdf",
		Context: map[string][]string{"aws:sourceip": {"10.15.3.4"}, "aws:securetransport": {"true"},
			"aws:userid": {"acct15"}, "aws:currenttime": {"2026-11-27T06:00:00Z"}, "aws:useragent": {"aws-sdk-go-v2/1.30"}}}
	benchMiss = Request{Principal: Principal{UserID: "stranger", KeyID: "AKIAX"}, Action: "s3:PutObject",
		Resource: "arn:aws:s3:::bench/teams/team3/upload.bin",
		Context: map[string][]string{"aws:sourceip": {"192.0.2.1"}, "aws:securetransport": {"true"},
			"aws:userid": {"stranger"}, "aws:currenttime": {"2026-11-27T06:00:00Z"}}}
)

func BenchmarkEvaluate20Statements(b *testing.B) {
	p, err := Parse([]byte(bench20), ParseOptions{Bucket: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	if p.Statements() != 20 {
		b.Fatalf("%d statements", p.Statements())
	}
	for _, c := range []struct {
		name string
		r    Request
		want Decision
	}{{"match", benchMatch, Allow}, {"nomatch", benchMiss, NoMatch}} {
		b.Run(c.name, func(b *testing.B) {
			if got := p.Evaluate(&c.r); got != c.want {
				b.Fatalf("Evaluate = %v, want %v", got, c.want)
			}
			b.ReportAllocs()
			for b.Loop() {
				p.Evaluate(&c.r)
			}
		})
	}
}

func BenchmarkParse20Statements(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse([]byte(bench20), ParseOptions{Bucket: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
}

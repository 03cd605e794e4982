package policy

import (
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// FuzzParse: Parse never panics, fails only with MalformedPolicy or
// PolicyTooLarge, and a parsed policy answers the same request the same
// way every time (and the same as a second parse of the document).
func FuzzParse(f *testing.F) {
	f.Add([]byte(bench20), "s3:GetObject", "arn:aws:s3:::bench/teams/team15/x", "10.15.0.1")
	f.Add([]byte(stmt(okStmt)), "s3:GetObject", "arn:aws:s3:::bkt/k", "::1")
	f.Add([]byte(stmt(okStmt+`,"Condition":{"ForAllValues:StringLike":{"s3:prefix":["a*${aws:username}?"]},"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`)),
		"s3:ListBucket", "arn:aws:s3:::bkt", "10.1.1.1")
	f.Add([]byte(`{"Statement":{"Effect":"Deny","NotPrincipal":{"AWS":"x"},"NotAction":"s3:*","NotResource":"arn:aws:s3:::bkt/*?*"}}`),
		"S3:PUTOBJECT", "arn:aws:s3:::bkt/é", "")
	f.Add([]byte(stmt(okStmt+`,"Condition":{"DateLessThanIfExists":{"aws:CurrentTime":"2020-01-01"},"ArnLike":{"aws:SourceArn":"arn:*:s3:::*"}}`)),
		"s3:GetObject", "arn:aws:s3:::bkt/k", "1.2.3.4")
	f.Fuzz(func(t *testing.T, doc []byte, action, resource, ip string) {
		for _, o := range []ParseOptions{{Bucket: "bkt"}, {}} {
			p, err := Parse(doc, o)
			if err != nil {
				if e := errcode.As(err); e == nil || (e.Detail["s3_code"] != "MalformedPolicy" && e.Detail["s3_code"] != "PolicyTooLarge") {
					t.Fatalf("Parse error %v is not MalformedPolicy/PolicyTooLarge", err)
				}
				continue
			}
			q, err := Parse(doc, o)
			if err != nil {
				t.Fatalf("second Parse failed: %v", err)
			}
			_ = p.IsPublic()
			_ = p.Uses("s3:existingobjecttag/")
			ctx := map[string][]string{"aws:sourceip": {ip}, "s3:prefix": {resource}, "aws:username": {action},
				"aws:currenttime": {"2026-01-01T00:00:00Z"}, "aws:sourcearn": {resource}, "s3:requestobjecttagkeys": {ip, action}}
			for _, pr := range []Principal{{Anonymous: true}, {UserID: "x"}, {UserID: action, KeyID: ip}} {
				r := Request{Principal: pr, Action: action, Resource: resource, Context: ctx}
				d := p.Evaluate(&r)
				if d2, d3 := p.Evaluate(&r), q.Evaluate(&r); d2 != d || d3 != d {
					t.Fatalf("Evaluate not deterministic: %v %v %v", d, d2, d3)
				}
			}
		}
	})
}

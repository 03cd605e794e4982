package postpolicy

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestParse: S3's answers (versitygw's and ceph's suites check these
// texts) to documents that do not parse, and what a valid one holds.
func TestParse(t *testing.T) {
	const exp = `"expiration": "2144-11-08T04:19:33Z"`
	for _, tc := range []struct{ doc, msg string }{
		{"", "Invalid Policy: Expecting '{' but found End-of-Input"},
		{"!", "Invalid Policy: invalid Base64 encoding."},
		{b64("invalid json"), "Invalid Policy: Invalid JSON."},
		{b64(`{"conditions": []}`), "Invalid Policy: Policy missing expiration."},
		{b64(`{"expiration": true, "conditions": []}`), "Invalid Policy: Invalid JSON."},
		{b64(`{"expiration": "invalid", "conditions": []}`), "Invalid Policy: Invalid 'expiration' value: 'invalid'"},
		{b64(`{"expiration": "2026-11-27 10:00:00+00:00", "conditions": []}`), "Invalid 'expiration' value"},
		{b64(`{` + exp + `}`), "Invalid Policy: Policy missing conditions."},
		{b64(`{` + exp + `, "CONDITIONS": []}`), `Invalid Policy: Unexpected: "CONDITIONS"`},
		{b64(`{` + exp + `, "conditions": [], "extra": "field"}`), `Invalid Policy: Unexpected: "extra"`},
		{b64(`{` + exp + `, "conditions": [], "conditions": []}`), "Invalid Policy: Invalid JSON."},
		{b64(`{` + exp + `, "conditions": true}`), "Invalid Policy: Invalid 'conditions' value: must be a List."},
		{b64(`{` + exp + `, "conditions": [true]}`), "Invalid Policy: Invalid condition test: must be a List or Object."},
		{b64(`{` + exp + `, "conditions": [[]]}`), "Invalid Policy: Invalid Condition: missing operation identifier."},
		{b64(`{` + exp + `, "conditions": [["invalid", "$a", "b"]]}`), "Invalid Policy: Invalid Condition: unknown operation 'invalid'."},
		{b64(`{` + exp + `, "conditions": [["eq", "$a", "b", "c"]]}`), "Invalid Policy: Invalid eq: wrong number of arguments."},
		{b64(`{` + exp + `, "conditions": [["eq", false, "b"]]}`), "Invalid Policy: Invalid JSON."},
		{b64(`{` + exp + `, "conditions": [["eq", "$a", true]]}`), "Invalid Policy: Invalid JSON."},
		{b64(`{` + exp + `, "conditions": [["content-length-range", 0]]}`), "Invalid content-length-range: wrong number of arguments."},
		{b64(`{` + exp + `, "conditions": [["content-length-range", 12, false]]}`), "Invalid Policy: Invalid JSON."},
		{b64(`{` + exp + `, "conditions": [["content-length-range", "1", "14"]]}`), "Invalid Policy: Invalid JSON."},
		{b64(`{` + exp + `, "conditions": [["content-length-range", 1.5, 14]]}`), "Invalid Policy: Invalid JSON."},
		{b64(`{` + exp + `, "conditions": [["content-length-range", -1, 0]]}`), "Invalid content-length-range"},
		{b64(`{` + exp + `, "conditions": [["content-length-range", 5, 4]]}`), "Invalid content-length-range"},
		{b64(`{` + exp + `, "conditions": [{}]}`), "Invalid Policy: Invalid Simple-Condition: Simple-Conditions must have exactly one property specified."},
		{b64(`{` + exp + `, "conditions": [{"a": "1", "b": "2"}]}`), "exactly one property"},
		{b64(`{` + exp + `, "conditions": [{"expires": true}]}`), "Invalid Policy: Invalid Simple-Condition: value must be a string."},
		{b64(`{` + exp + `, "conditions": []} trailing`), "Invalid Policy: Invalid JSON."},
		{strings.Repeat("A", MaxPolicy+4), "larger than"},
	} {
		_, err := Parse(tc.doc)
		if s3err.CodeOf(err) != s3err.InvalidPolicyDocument || !strings.Contains(errcode.As(err).Message, tc.msg) {
			t.Errorf("Parse(%.60q) = %v, want InvalidPolicyDocument %q", tc.doc, err, tc.msg)
		}
	}
	p, err := Parse(b64(`{` + exp + `, "conditions": [{"Bucket": "b"}, ["STARTS-WITH", "$Key", "up/"],
		["content-length-range", 1, 100], ["content-length-range", 10, 1000]]}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.MinLength != 10 || p.MaxLength != 100 || len(p.Conditions) != 2 || p.Conditions[1].Field != "key" || p.Conditions[1].Op != "starts-with" {
		t.Errorf("%+v", p)
	}
	if want := time.Date(2144, 11, 8, 4, 19, 33, 0, time.UTC); !p.Expiration.Equal(want) {
		t.Errorf("expiration %v", p.Expiration)
	}
}

// TestCheck: conditions, coverage and expiry against a form's fields.
func TestCheck(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	pol := func(conds string) *Policy {
		t.Helper()
		p, err := Parse(b64(`{"expiration": "2026-11-27T11:00:00Z", "conditions": [` + conds + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	f := func(kv ...string) []Field {
		var fs []Field
		for i := 0; i+1 < len(kv); i += 2 {
			fs = append(fs, Field{kv[i], kv[i+1]})
		}
		return fs
	}
	for _, tc := range []struct {
		name   string
		conds  string
		fields []Field
		msg    string // "" allowed
	}{
		{"eq", `["eq", "$content-type", "text/plain"]`, f("Content-Type", "text/plain"), ""},
		{"eq fails", `["eq","$content-type","text/plain"]`, f("content-type", "image/jpeg"), `Policy Condition failed: ["eq","$content-type","text/plain"]`},
		{"simple fails", `{"content-type": "application/xml"}`, f("content-type", "text/html"), `Policy Condition failed: ["eq", "$content-type", "application/xml"]`},
		{"starts-with", `["starts-with", "$x-amz-meta-env", "prod"]`, f("x-amz-meta-env", "production"), ""},
		{"starts-with empty", `["starts-with", "$x-amz-meta-tag", ""]`, f("x-amz-meta-tag", "anything"), ""},
		{"starts-with fails", `["starts-with","$x-amz-meta-path","allowed/"]`, f("x-amz-meta-path", "forbidden/value"), `["starts-with","$x-amz-meta-path","allowed/"]`},
		{"content types all match", `["starts-with", "$content-type", "text/"]`, f("content-type", "text/plain, text/html"), ""},
		{"one content type does not", `["starts-with","$content-type","text/"]`, f("content-type", "text/plain, image/jpeg"), `["starts-with","$content-type","text/"]`},
		{"field absent", `["starts-with","$x-amz-meta-foo","bar"]`, nil, "Policy Condition failed"},
		{"no dollar", `["eq","content-type","binary/octet-stream"]`, f("content-type", "binary/octet-stream"), `["eq","content-type","binary/octet-stream"]`},
		{"extra", ``, f("x-amz-meta-custom", "v"), "Extra input fields: x-amz-meta-custom"},
		{"extra keeps case-folded name", `{"key": "k"}`, f("key", "k", "Content-Type", "x"), "Extra input fields: content-type"},
		{"exempt", ``, f("x-ignore-custom", "v", "policy", "p", "x-amz-signature", "s", "AWSAccessKeyId", "a", "signature", "s", "file", "", "x-amz-checksum-sha256", "c"), ""},
		{"case-insensitive names", `{"KEY": "k"}`, f("kEy", "k"), ""},
		{"values are case-sensitive", `{"key": "K"}`, f("key", "k"), "Policy Condition failed"},
	} {
		err := pol(tc.conds).Check(tc.fields, now)
		switch {
		case tc.msg == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.msg != "" && (s3err.CodeOf(err) != s3err.AccessDenied || !strings.Contains(errcode.As(err).Message, "Invalid according to Policy: ") ||
			!strings.Contains(errcode.As(err).Message, tc.msg)):
			t.Errorf("%s: %v, want AccessDenied %q", tc.name, err, tc.msg)
		}
	}
	if err := pol(``).Check(nil, time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC)); err == nil ||
		errcode.As(err).Message != "Invalid according to Policy: Policy expired." {
		t.Errorf("expired: %v", err)
	}
}

// FuzzParse: any policy field either parses into a policy whose
// checks never panic, or is InvalidPolicyDocument.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"expiration": "2144-11-08T04:19:33Z", "conditions": [{"bucket": "b"}, ["starts-with", "$key", ""], ["content-length-range", 0, 10]]}`,
		`{"expiration": "2144-11-08T04:19:33Z", "conditions": [["eq", "$a", "b"]]}`,
		`{"conditions": [[]]}`, `{"expiration": 1}`, `[]`, `{"expiration": "2144-11-08T04:19:33Z", "conditions": [{}]}`,
	} {
		f.Add(b64(s))
	}
	f.Fuzz(func(t *testing.T, doc string) {
		p, err := Parse(doc)
		if err != nil {
			if s3err.CodeOf(err) != s3err.InvalidPolicyDocument {
				t.Fatalf("Parse: %v", err)
			}
			return
		}
		if p.MinLength < 0 || (p.MaxLength >= 0 && p.MaxLength < p.MinLength) {
			t.Fatalf("range %d..%d", p.MinLength, p.MaxLength)
		}
		_ = p.Check([]Field{{"key", "k"}, {"Content-Type", "text/plain"}}, time.Now())
	})
}

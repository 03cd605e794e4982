// Package postpolicy is the policy document of S3's browser POST uploads
// (PostObject): Parse validates a form's base64 policy once, and
// Policy.Check answers whether the form's fields satisfy it. Both answer
// S3's errors, with S3's texts (through s3err): InvalidPolicyDocument
// (400) for a document that does not parse, AccessDenied (403, "Invalid
// according to Policy: ...") for a form the policy does not allow.
//
// # The document
//
//	{"expiration": "2026-12-01T12:00:00Z",
//	 "conditions": [
//	   {"bucket": "photos"},                       exact match
//	   ["eq", "$acl", "private"],                  exact match
//	   ["starts-with", "$key", "user/alice/"],     prefix ("" matches anything)
//	   ["content-length-range", 1, 10485760]]}     the file's size, in bytes
//
// Field names are case-insensitive, values are not. Every field of the form
// must be named by a condition, except those S3 exempts (Exempt). The file
// part's size is not a field: Policy.MinLength and MaxLength bound it, and
// the caller enforces them while the file streams.
package postpolicy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// MaxPolicy bounds the base64 policy field (S3 bounds the fields before
// the file to 20 KiB in all).
const MaxPolicy = 20 << 10

// Condition is one condition of a policy.
type Condition struct {
	// Op is "eq" or "starts-with" (exact matches are "eq").
	Op string
	// Field is the lower-case field name, without its "$"; "" for a
	// condition that names no field ("key" instead of "$key"), which no
	// form satisfies.
	Field string
	Value string
	text  string // the condition as error messages quote it
}

// Policy is a parsed policy document.
type Policy struct {
	Expiration time.Time
	Conditions []Condition
	// MinLength and MaxLength bound the file's size (content-length-range);
	// without that condition 0 and -1 (no bound).
	MinLength, MaxLength int64
}

// Field is one form field, as the form sent it.
type Field struct{ Name, Value string }

func invalid(format string, args ...any) error {
	return s3err.New(s3err.InvalidPolicyDocument, "Invalid Policy: "+fmt.Sprintf(format, args...))
}

var errJSON = s3err.New(s3err.InvalidPolicyDocument, "Invalid Policy: Invalid JSON.")

func denied(format string, args ...any) error {
	return s3err.New(s3err.AccessDenied, "Invalid according to Policy: "+fmt.Sprintf(format, args...))
}

// Parse decodes and validates a form's policy field: base64 of a JSON
// object with exactly "expiration" (RFC 3339) and "conditions" (a list of
// conditions, each a one-property object or a list of an operation and its
// arguments). Anything else is InvalidPolicyDocument with S3's reason.
func Parse(b64 string) (*Policy, error) {
	if len(b64) > MaxPolicy {
		return nil, invalid("Policy is larger than %d bytes.", MaxPolicy)
	}
	if b64 == "" {
		return nil, invalid("Expecting '{' but found End-of-Input")
	}
	doc, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, invalid("invalid Base64 encoding.")
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errJSON
	}
	p := &Policy{MaxLength: -1}
	var haveExp, haveConds bool
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, errJSON
		}
		name, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, errJSON
		}
		switch name {
		case "expiration":
			if haveExp {
				return nil, errJSON
			}
			haveExp = true
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, errJSON
			}
			if p.Expiration, err = time.Parse(time.RFC3339Nano, s); err != nil {
				return nil, invalid("Invalid 'expiration' value: '%s'", s3err.Clip(s))
			}
		case "conditions":
			if haveConds {
				return nil, errJSON
			}
			haveConds = true
			if err := p.parseConditions(raw); err != nil {
				return nil, err
			}
		default:
			return nil, invalid("Unexpected: %q", s3err.Clip(name))
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, errJSON
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errJSON
	}
	switch {
	case !haveExp:
		return nil, invalid("Policy missing expiration.")
	case !haveConds:
		return nil, invalid("Policy missing conditions.")
	}
	return p, nil
}

func (p *Policy) parseConditions(raw json.RawMessage) error {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		return invalid("Invalid 'conditions' value: must be a List.")
	}
	for _, c := range list {
		c = bytes.TrimSpace(c)
		var err error
		switch {
		case len(c) > 0 && c[0] == '[':
			err = p.parseList(c)
		case len(c) > 0 && c[0] == '{':
			err = p.parseSimple(c)
		default:
			err = invalid("Invalid condition test: must be a List or Object.")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseSimple parses {"field": "value"}, an exact match.
func (p *Policy) parseSimple(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return errJSON
	}
	if len(m) != 1 {
		return invalid("Invalid Simple-Condition: Simple-Conditions must have exactly one property specified.")
	}
	for name, v := range m {
		var value string
		if err := json.Unmarshal(v, &value); err != nil {
			return invalid("Invalid Simple-Condition: value must be a string.")
		}
		p.Conditions = append(p.Conditions, Condition{Op: "eq", Field: strings.ToLower(name), Value: value,
			text: `["eq", ` + jsonString("$"+name) + `, ` + jsonString(value) + `]`})
	}
	return nil
}

// parseList parses ["op", args...].
func (p *Policy) parseList(raw json.RawMessage) error {
	var args []json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		return errJSON
	}
	if len(args) == 0 {
		return invalid("Invalid Condition: missing operation identifier.")
	}
	var op string
	if err := json.Unmarshal(args[0], &op); err != nil {
		return errJSON
	}
	lop := strings.ToLower(op)
	switch lop {
	case "eq", "starts-with", "content-length-range":
	default:
		return invalid("Invalid Condition: unknown operation '%s'.", s3err.Clip(op))
	}
	if len(args) != 3 {
		return invalid("Invalid %s: wrong number of arguments.", lop)
	}
	if lop == "content-length-range" {
		min, err1 := integer(args[1])
		max, err2 := integer(args[2])
		if err1 != nil || err2 != nil {
			return errJSON
		}
		if min < 0 || max < min {
			return invalid("Invalid content-length-range: expecting 0 <= minimum <= maximum, got %d and %d.", min, max)
		}
		// Several ranges: the file must satisfy all of them.
		p.MinLength = maxOf(p.MinLength, min)
		if p.MaxLength < 0 || max < p.MaxLength {
			p.MaxLength = max
		}
		return nil
	}
	var field, value string
	if json.Unmarshal(args[1], &field) != nil || json.Unmarshal(args[2], &value) != nil {
		return errJSON
	}
	c := Condition{Op: lop, Value: value, text: string(raw)}
	if name, ok := strings.CutPrefix(field, "$"); ok {
		c.Field = strings.ToLower(name)
	}
	p.Conditions = append(p.Conditions, c)
	return nil
}

// integer is a JSON integer (not a string of one, as json.Number takes).
func integer(raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || raw[0] == '"' {
		return 0, errJSON
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, err
	}
	return n.Int64()
}

func maxOf(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// jsonString is s as a JSON string, without HTML escapes.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// Exempt reports whether a form field (lower-case name) needs no
// condition: the signature and policy themselves, the file, fields named
// x-ignore-*, as S3 documents; and x-amz-checksum-* fields, which only
// constrain the upload further (the file must match them) and which S3
// accepts uncovered (ceph's s3-tests test_post_object_upload_checksum).
func Exempt(name string) bool {
	switch name {
	case "x-amz-signature", "file", "policy", "awsaccesskeyid", "signature":
		return true
	}
	return strings.HasPrefix(name, "x-ignore-") || strings.HasPrefix(name, "x-amz-checksum-")
}

// Check answers whether fields satisfy p at now: the policy has not
// expired (AccessDenied "Policy expired."), every condition holds
// ("Policy Condition failed: ..."; a condition on a field the form does
// not have compares with ""), and every field but the exempt ones is named
// by a condition ("Extra input fields: ..."). Field names are compared
// case-insensitively. A starts-with condition on Content-Type must hold
// for every comma-separated type of the field.
func (p *Policy) Check(fields []Field, now time.Time) error {
	if !now.Before(p.Expiration) {
		return denied("Policy expired.")
	}
	values := make(map[string]string, len(fields))
	for _, f := range fields {
		values[strings.ToLower(f.Name)] = f.Value
	}
	covered := make(map[string]bool, len(p.Conditions))
	for _, c := range p.Conditions {
		if c.Field == "" {
			return denied("Policy Condition failed: %s", c.text)
		}
		covered[c.Field] = true
		if !c.holds(values[c.Field]) {
			return denied("Policy Condition failed: %s", c.text)
		}
	}
	for _, f := range fields {
		n := strings.ToLower(f.Name)
		if !covered[n] && !Exempt(n) {
			return denied("Extra input fields: %s", n)
		}
	}
	return nil
}

func (c *Condition) holds(v string) bool {
	if c.Op == "eq" {
		return v == c.Value
	}
	if c.Field == "content-type" {
		for _, t := range strings.Split(v, ",") {
			if !strings.HasPrefix(strings.TrimSpace(t), c.Value) {
				return false
			}
		}
		return true
	}
	return strings.HasPrefix(v, c.Value)
}

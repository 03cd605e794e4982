package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// DefaultMaxSize is S3's limit on a bucket policy: 20 KiB.
const DefaultMaxSize = 20480

// The policy language versions.
const (
	Version2012 = "2012-10-17" // the current one: policy variables
	Version2008 = "2008-10-17" // the old one, still accepted; no variables
)

// ParseOptions say what kind of policy is parsed.
type ParseOptions struct {
	// Bucket, when set, makes this a bucket policy of that bucket: every
	// Resource must be in it, and each statement must name a resource its
	// actions apply to (as S3 requires).
	Bucket string
	// MaxSize is the largest document accepted, in bytes. Default
	// DefaultMaxSize.
	MaxSize int
	// KnownPrincipal, when set, reports whether a principal ID names an
	// account or key; a policy naming another is MalformedPolicy
	// ("Invalid principal in policy"), as S3 answers for an unknown
	// account. Nil accepts any ID.
	KnownPrincipal func(id string) bool
}

// Policy is a parsed, validated policy. It is immutable and safe for
// concurrent use.
type Policy struct {
	// Version and ID are the document's Version and Id.
	Version, ID string
	stmts       []statement
	keys        []string // every condition key named, lower case, sorted
}

type statement struct {
	sid  string
	deny bool

	anyPrincipal bool // "*"
	principals   []principalRef
	notPrincipal bool

	actions   actionSet
	actionPat []glob // the Action patterns, for an action not in actionNames
	notAction bool

	anyResource bool
	resources   []glob
	notResource bool

	conds []condition
}

// malformed is S3's MalformedPolicy with the reason.
func malformed(format string, args ...any) error {
	return &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf(format, args...),
		Detail: map[string]any{"s3_code": "MalformedPolicy"}}
}

// Parse validates a policy document and compiles it for Evaluate. Every
// error is an *errcode.Error: InvalidArgument with Detail["s3_code"]
// "MalformedPolicy" and a message saying what is wrong, or TooLarge with
// "PolicyTooLarge".
func Parse(doc []byte, o ParseOptions) (*Policy, error) {
	max := o.MaxSize
	if max <= 0 {
		max = DefaultMaxSize
	}
	if len(doc) > max {
		return nil, &errcode.Error{Code: errcode.TooLarge,
			Message: fmt.Sprintf("Policy exceeds the maximum allowed document size (%d bytes).", max),
			Detail:  map[string]any{"s3_code": "PolicyTooLarge"}}
	}
	doc = bytes.TrimSpace(doc)
	if len(doc) == 0 || doc[0] != '{' {
		return nil, malformed("Policies must be valid JSON and the first byte must be '{'")
	}
	top, err := object(doc)
	if err != nil {
		return nil, malformed("This policy contains invalid Json")
	}
	p := &Policy{Version: Version2008}
	for k, v := range top {
		switch k {
		case "Version":
			if err := json.Unmarshal(v, &p.Version); err != nil || (p.Version != Version2012 && p.Version != Version2008) {
				return nil, malformed("The policy must contain a valid version string")
			}
		case "Id":
			if err := json.Unmarshal(v, &p.ID); err != nil {
				return nil, malformed("Policy Id must be a string")
			}
		case "Statement":
		default:
			return nil, malformed("Policy has an unknown field: %s", k)
		}
	}
	raw, ok := top["Statement"]
	if !ok {
		return nil, malformed("Missing required field Statement")
	}
	var list []json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		list = []json.RawMessage{raw}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, malformed("Statement must be an object or an array of objects")
	}
	if len(list) == 0 {
		return nil, malformed("Could not parse the policy: Statement is empty!")
	}
	keys := map[string]bool{}
	sids := map[string]bool{}
	for _, r := range list {
		s, err := p.statement(r, o)
		if err != nil {
			return nil, err
		}
		if s.sid != "" {
			if sids[s.sid] {
				return nil, malformed("Statement IDs (SID) in a single policy must be unique: %s", s.sid)
			}
			sids[s.sid] = true
		}
		for _, c := range s.conds {
			keys[c.key] = true
		}
		p.stmts = append(p.stmts, s)
	}
	for k := range keys {
		p.keys = append(p.keys, k)
	}
	sort.Strings(p.keys)
	return p, nil
}

// object decodes a JSON object into its members, raw.
func object(b []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("not an object")
	}
	return m, nil
}

// strings decodes a string or an array of strings.
func stringList(b json.RawMessage) ([]string, bool) {
	var one string
	if json.Unmarshal(b, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(b, &many) == nil && len(many) > 0 {
		return many, true
	}
	return nil, false
}

func (p *Policy) statement(raw json.RawMessage, o ParseOptions) (statement, error) {
	var s statement
	m, err := object(raw)
	if err != nil {
		return s, malformed("Statement must be an object")
	}
	for k := range m {
		switch k {
		case "Sid", "Effect", "Principal", "NotPrincipal", "Action", "NotAction", "Resource", "NotResource", "Condition":
		default:
			return s, malformed("Statement has an unknown field: %s", k)
		}
	}
	if v, ok := m["Sid"]; ok {
		if json.Unmarshal(v, &s.sid) != nil {
			return s, malformed("Sid must be a string")
		}
	}
	var effect string
	if v, ok := m["Effect"]; !ok {
		return s, malformed("Missing required field Effect")
	} else if json.Unmarshal(v, &effect) != nil {
		return s, malformed("Invalid effect: %s", bytes.TrimSpace(v))
	} else if effect != "Allow" && effect != "Deny" {
		return s, malformed("Invalid effect: %s", effect)
	}
	s.deny = effect == "Deny"

	if err := s.principal(m, o); err != nil {
		return s, err
	}
	if err := s.action(m); err != nil {
		return s, err
	}
	if err := s.resource(m, p.Version, o); err != nil {
		return s, err
	}
	if v, ok := m["Condition"]; ok {
		if s.conds, err = conditions(v, p.Version); err != nil {
			return s, err
		}
		if o.Bucket != "" && !s.notAction {
			if err := s.conditionsApply(); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

func (s *statement) principal(m map[string]json.RawMessage, o ParseOptions) error {
	v, ok := m["Principal"]
	nv, nok := m["NotPrincipal"]
	switch {
	case ok && nok:
		return malformed("A statement cannot have both Principal and NotPrincipal")
	case nok:
		v, s.notPrincipal = nv, true
	case !ok:
		if o.Bucket != "" {
			return malformed("Missing required field Principal")
		}
		// A key's own policy names no principal: it is the key's.
		s.anyPrincipal = true
		return nil
	}
	if t := bytes.TrimSpace(v); len(t) > 0 && t[0] != '{' {
		// "*", or (versitygw's shorthand, which AWS refuses) an ID or a
		// list of IDs: as {"AWS": …}.
		v = json.RawMessage(`{"AWS":` + string(t) + `}`)
	}
	pm, err := object(v)
	if err != nil || len(pm) == 0 {
		return malformed("Invalid principal in policy")
	}
	for typ, ids := range pm {
		list, ok := stringList(ids)
		if !ok || len(list) > 1 && slices.Contains(list, "*") {
			return malformed("Invalid principal in policy")
		}
		for _, id := range list {
			switch typ {
			case "AWS":
				if id == "*" {
					s.anyPrincipal = true
					continue
				}
				ref, ok := principalID(id)
				if !ok || (o.KnownPrincipal != nil && !o.KnownPrincipal(ref.id)) {
					return malformed("Invalid principal in policy")
				}
				s.principals = append(s.principals, ref)
			case "Service":
				// An AWS service (logging.s3.amazonaws.com): Coffer has none
				// that make requests, so the statement never matches it.
				continue
			case "CanonicalUser":
				if id == "" || (o.KnownPrincipal != nil && !o.KnownPrincipal(id)) {
					return malformed("Invalid principal in policy")
				}
				s.principals = append(s.principals, principalRef{id: id, account: true})
			default:
				return malformed("Invalid principal in policy")
			}
		}
	}
	return nil
}

// principalRef is one principal a statement names.
type principalRef struct {
	id      string // an account (user) ID, or an access key ID
	key     string // with id an account: the key of that account
	account bool   // id is an account, not a key
	either  bool   // a bare ID: an account or a key
}

func (r *principalRef) matches(p *Principal) bool {
	switch {
	case p.Anonymous:
		return false
	case r.either:
		return p.UserID == r.id || p.KeyID == r.id
	case r.key != "":
		return p.UserID == r.id && p.KeyID == r.key
	}
	return p.UserID == r.id
}

// principalID reads an AWS principal: a bare ID names an account or an
// access key; "arn:aws:iam::ID:root" the account ID;
// "arn:aws:iam::ID:user/NAME" the access key NAME of account ID (Coffer's
// accounts have keys, not IAM users).
func principalID(s string) (principalRef, bool) {
	rest, ok := strings.CutPrefix(s, "arn:aws:iam::")
	if !ok {
		if s == "" || strings.ContainsAny(s, "*?:/") {
			return principalRef{}, false
		}
		return principalRef{id: s, either: true}, true
	}
	acct, res, ok := strings.Cut(rest, ":")
	if !ok || acct == "" || strings.ContainsAny(acct, "*?/") {
		return principalRef{}, false
	}
	if res == "root" {
		return principalRef{id: acct, account: true}, true
	}
	if name, ok := strings.CutPrefix(res, "user/"); ok && name != "" && !strings.ContainsAny(name, "*?/") {
		return principalRef{id: acct, key: name, account: true}, true
	}
	return principalRef{}, false
}

func (s *statement) action(m map[string]json.RawMessage) error {
	v, ok := m["Action"]
	nv, nok := m["NotAction"]
	switch {
	case ok && nok:
		return malformed("A statement cannot have both Action and NotAction")
	case nok:
		v, s.notAction = nv, true
	case !ok:
		return malformed("Missing required field Action")
	}
	list, ok := stringList(v)
	if !ok {
		return malformed("Policy has invalid action")
	}
	for _, a := range list {
		g, err := compileGlob(a, globOptions{wild: true, fold: true})
		if err != nil {
			return err
		}
		n := 0
		for i, name := range actionNames {
			if g.match(name, nil) {
				s.actions.set(i)
				n++
			}
		}
		if n == 0 && a != "*" {
			return malformed("Policy has invalid action")
		}
		s.actionPat = append(s.actionPat, g)
	}
	return nil
}

func (s *statement) resource(m map[string]json.RawMessage, version string, o ParseOptions) error {
	v, ok := m["Resource"]
	nv, nok := m["NotResource"]
	switch {
	case ok && nok:
		return malformed("A statement cannot have both Resource and NotResource")
	case nok:
		v, s.notResource = nv, true
	case !ok:
		return malformed("Missing required field Resource")
	}
	list, ok := stringList(v)
	if !ok {
		return malformed("Policy has invalid resource")
	}
	var hasBucket, hasObject bool
	for _, r := range list {
		if r == "*" {
			if o.Bucket != "" {
				return malformed("Policy has invalid resource")
			}
			s.anyResource, hasBucket, hasObject = true, true, true
			continue
		}
		path, ok := strings.CutPrefix(r, "arn:aws:s3:::")
		if !ok || path == "" {
			return malformed("Policy has invalid resource")
		}
		bucket, _, isObject := strings.Cut(path, "/")
		if o.Bucket != "" && bucket != o.Bucket {
			return malformed("Policy has invalid resource")
		}
		if isObject {
			hasObject = true
		} else {
			hasBucket = true
		}
		if strings.ContainsAny(bucket, "*?") {
			// a wildcard bucket may name buckets and objects
			hasBucket, hasObject = true, true
		}
		g, err := compileGlob(r, globOptions{wild: true, vars: version == Version2012})
		if err != nil {
			return err
		}
		s.resources = append(s.resources, g)
	}
	if o.Bucket == "" || s.notAction || s.notResource {
		return nil
	}
	// Each action named outright must apply to a resource named.
	for i, name := range actionNames {
		if !s.actions.has(i) || !explicit(s.actionPat, name) {
			continue
		}
		switch actionKind(name) {
		case kindBucket:
			if !hasBucket {
				return malformed("Action does not apply to any resource(s) in statement")
			}
		case kindObject:
			if !hasObject {
				return malformed("Action does not apply to any resource(s) in statement")
			}
		}
	}
	return nil
}

// explicit reports whether the action patterns name action without a
// wildcard.
func explicit(pats []glob, action string) bool {
	for i := range pats {
		if t, ok := pats[i].literal(); ok && t == asciiLower(action) {
			return true
		}
	}
	return false
}

// Statements is the number of statements.
func (p *Policy) Statements() int { return len(p.stmts) }

// Uses reports whether a condition names a key starting with prefix
// (lower case), e.g. "s3:existingobjecttag/": callers fetch what such keys
// need only when a policy uses them.
func (p *Policy) Uses(prefix string) bool {
	for _, k := range p.keys {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// conditionsApply refuses a condition on a key that an action the
// statement names outright cannot have (S3's check; wildcards are not
// checked).
func (s *statement) conditionsApply() error {
	for _, c := range s.conds {
		allowed, ok := keyActions[c.key]
		if !ok {
			continue
		}
		for i := range s.actionPat {
			a, lit := s.actionPat[i].literal()
			if !lit || a == "*" {
				continue
			}
			if !slices.Contains(allowed, strings.TrimPrefix(a, "s3:")) {
				return malformed("Conditions do not apply to combination of actions and resources in statement")
			}
		}
	}
	return nil
}

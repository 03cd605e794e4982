package object

import (
	"context"
	"github.com/coffer-storage/coffer/internal/audit"
	"strings"
	"sync"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/policy"
)

// Bucket policies (issue 21; docs/policies.md). A bucket's policy is its
// JSON document in the bucket record (meta.Bucket.Policy), validated by
// policy.Parse when it is written; decide evaluates it on every request,
// parsed once per document and kept in a small cache keyed by its text.

// PutBucketPolicy validates doc as a policy of bucket name and stores it:
// MalformedPolicy or PolicyTooLarge (errcode InvalidArgument/TooLarge)
// change nothing; NotImplemented for a gateway bucket.
func (s *Service) PutBucketPolicy(ctx context.Context, a Actor, name string, doc []byte) (err error) {
	defer func() { s.audit(ctx, a, audit.BucketPolicy, audit.Target{Bucket: name}, err) }()
	b, err := s.authorize(ctx, a, name, "s3:PutBucketPolicy", "")
	if err != nil {
		return err
	}
	if b.IsGateway() {
		return errGatewayUnsupported("bucket policies")
	}
	p, err := policy.Parse(doc, policy.ParseOptions{Bucket: name, KnownPrincipal: s.knownPrincipal(ctx)})
	if err != nil {
		return err
	}
	if b.PublicAccessBlock != nil && b.PublicAccessBlock.BlockPublicPolicy && p.IsPublic() {
		return errcode.New(errcode.PermissionDenied, "the bucket's BlockPublicPolicy setting refuses a public policy")
	}
	s.policies.put(string(doc), p)
	return s.meta.SetBucketPolicy(ctx, name, string(doc))
}

// GetBucketPolicy returns bucket name's policy document as it was
// written: NotFound (resource "bucket_policy") if it has none.
func (s *Service) GetBucketPolicy(ctx context.Context, a Actor, name string) (string, error) {
	b, err := s.authorize(ctx, a, name, "s3:GetBucketPolicy", "")
	if err != nil {
		return "", err
	}
	if b.IsGateway() {
		return "", errGatewayUnsupported("bucket policies")
	}
	if b.Policy == "" {
		return "", meta.ErrNoBucketPolicy(name)
	}
	return b.Policy, nil
}

// DeleteBucketPolicy removes bucket name's policy (none: nothing to do,
// as S3 answers 204 then too).
func (s *Service) DeleteBucketPolicy(ctx context.Context, a Actor, name string) (err error) {
	defer func() {
		s.auditReason(ctx, a, audit.BucketPolicy, audit.Target{Bucket: name}, audit.ReasonDeleted, err)
	}()
	b, err := s.authorize(ctx, a, name, "s3:DeleteBucketPolicy", "")
	if err != nil {
		return err
	}
	if b.IsGateway() {
		return errGatewayUnsupported("bucket policies")
	}
	if b.Policy == "" {
		return nil
	}
	return s.meta.SetBucketPolicy(ctx, name, "")
}

// GetBucketPolicyStatus reports whether bucket name's policy makes it
// public (policy.IsPublic): NotFound (resource "bucket_policy") if it has
// none.
func (s *Service) GetBucketPolicyStatus(ctx context.Context, a Actor, name string) (bool, error) {
	b, err := s.authorize(ctx, a, name, "s3:GetBucketPolicyStatus", "")
	if err != nil {
		return false, err
	}
	if b.IsGateway() {
		return false, errGatewayUnsupported("bucket policies")
	}
	if b.Policy == "" {
		return false, meta.ErrNoBucketPolicy(name)
	}
	p, err := s.policies.get(b.Bucket)
	if err != nil {
		return false, err
	}
	return p.IsPublic(), nil
}

// knownPrincipal reports whether a policy's principal ID names an
// account (or an account's access key).
func (s *core) knownPrincipal(ctx context.Context) func(string) bool {
	return func(id string) bool {
		if _, err := s.meta.GetUser(ctx, id); err == nil {
			return true
		}
		if s.meta.AccessKeys != nil {
			if _, err := s.meta.GetAccessKey(ctx, id); err == nil {
				return true
			}
		}
		return false
	}
}

// policyCacheSize bounds the parsed policies kept: one per distinct
// document in use (a replaced document's entry ages out).
const policyCacheSize = 512

// policyCache keeps parsed policies by their document's text, so a
// request evaluates a compiled policy and never parses JSON. byBucket
// remembers each bucket's last document: a request finds it by the
// bucket's short name, and the document compares equal at once while the
// record (and so the string) is the cached one, instead of hashing the
// whole document (up to 20 KiB) on every request.
type policyCache struct {
	mu       sync.RWMutex
	m        map[string]*policy.Policy
	byBucket map[string]lastPolicy
}

type lastPolicy struct {
	doc string
	p   *policy.Policy
}

// get returns b's parsed policy, nil if it has none.
func (c *policyCache) get(b meta.Bucket) (*policy.Policy, error) {
	if b.Policy == "" {
		return nil, nil
	}
	c.mu.RLock()
	if e, ok := c.byBucket[b.Name]; ok && e.doc == b.Policy {
		c.mu.RUnlock()
		return e.p, nil
	}
	p := c.m[b.Policy]
	c.mu.RUnlock()
	if p != nil {
		c.remember(b, p)
		return p, nil
	}
	// Validated when written: parse it again without the principal check
	// (an account deleted since does not void the policy) or the size cap.
	p, err := policy.Parse([]byte(b.Policy), policy.ParseOptions{Bucket: b.Name, MaxSize: len(b.Policy)})
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "the stored policy of bucket %q does not parse", b.Name)
	}
	c.put(b.Policy, p)
	c.remember(b, p)
	return p, nil
}

// remember makes p b's last document.
func (c *policyCache) remember(b meta.Bucket, p *policy.Policy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byBucket == nil || len(c.byBucket) >= policyCacheSize {
		c.byBucket = make(map[string]lastPolicy)
	}
	c.byBucket[b.Name] = lastPolicy{b.Policy, p}
}

func (c *policyCache) put(doc string, p *policy.Policy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*policy.Policy)
	}
	if len(c.m) >= policyCacheSize {
		for k := range c.m { // drop one at random
			delete(c.m, k)
			break
		}
	}
	c.m[doc] = p
}

// keyUser is what a policy offers to say which condition keys it names.
type keyUser interface{ Uses(prefix string) bool }

// The condition keys the decision adds to the API layer's.
var (
	objectTagKeys = []string{"s3:existingobjecttag/"}
	timeKeys      = []string{"aws:currenttime", "aws:epochtime"}
)

// uses reports whether an evaluator may condition on a key with one of
// the prefixes: it says it does, or it cannot say (it has no Uses).
func uses(prefixes []string, evs ...policy.Evaluator) bool {
	for _, e := range evs {
		if e == nil {
			continue
		}
		u, ok := e.(keyUser)
		if !ok {
			return true
		}
		for _, p := range prefixes {
			if u.Uses(p) {
				return true
			}
		}
	}
	return false
}

// addObjectTags adds the current version's tags of key in native bucket b
// to the request as s3:ExistingObjectTag/<key> (none when the object is
// missing).
func (s *core) addObjectTags(ctx context.Context, b meta.Bucket, key string, req *policy.Request) error {
	if b.IsGateway() {
		return nil
	}
	o, err := s.meta.GetObject(ctx, b.Name, key)
	if errcode.Is(err, errcode.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, t := range o.Tags {
		req.Context["s3:existingobjecttag/"+strings.ToLower(t.Key)] = []string{t.Value}
	}
	return nil
}

// GetPublicAccessBlock returns bucket name's Block Public Access settings:
// NotFound (resource "public_access_block") if it has none.
func (s *Service) GetPublicAccessBlock(ctx context.Context, a Actor, name string) (meta.PublicAccessBlock, error) {
	b, err := s.authorize(ctx, a, name, "s3:GetBucketPublicAccessBlock", "")
	if err != nil {
		return meta.PublicAccessBlock{}, err
	}
	if b.IsGateway() {
		return meta.PublicAccessBlock{}, errGatewayUnsupported("public access blocks")
	}
	if b.PublicAccessBlock == nil {
		return meta.PublicAccessBlock{}, meta.ErrNoPublicAccessBlock(name)
	}
	return *b.PublicAccessBlock, nil
}

// SetPublicAccessBlock replaces bucket name's Block Public Access settings
// (nil: none; S3's DeletePublicAccessBlock, which needs
// s3:PutBucketPublicAccessBlock too).
func (s *Service) SetPublicAccessBlock(ctx context.Context, a Actor, name string, pab *meta.PublicAccessBlock) (err error) {
	defer func() {
		s.auditReason(ctx, a, audit.PublicAccess, audit.Target{Bucket: name}, deleted(pab == nil), err)
	}()
	b, err := s.authorize(ctx, a, name, "s3:PutBucketPublicAccessBlock", "")
	if err != nil {
		return err
	}
	if b.IsGateway() {
		return errGatewayUnsupported("public access blocks")
	}
	return s.meta.SetBucketPublicAccessBlock(ctx, name, pab)
}

// restricted reports whether b's RestrictPublicBuckets setting voids the
// Allows of its policy p for a (anyone but the owner), p being public.
func restricted(b meta.Bucket, p policy.Evaluator, owner bool) bool {
	if owner || b.PublicAccessBlock == nil || !b.PublicAccessBlock.RestrictPublicBuckets {
		return false
	}
	pub, ok := p.(interface{ IsPublic() bool })
	return ok && pub.IsPublic()
}

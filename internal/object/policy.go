package object

import (
	"context"
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
func (s *Service) PutBucketPolicy(ctx context.Context, a Actor, name string, doc []byte) error {
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

// DeleteBucketPolicy removes bucket name's policy: NotFound (resource
// "bucket_policy") if it has none, as S3 answers.
func (s *Service) DeleteBucketPolicy(ctx context.Context, a Actor, name string) error {
	b, err := s.authorize(ctx, a, name, "s3:DeleteBucketPolicy", "")
	if err != nil {
		return err
	}
	if b.IsGateway() {
		return errGatewayUnsupported("bucket policies")
	}
	if b.Policy == "" {
		return meta.ErrNoBucketPolicy(name)
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
// request evaluates a compiled policy and never parses JSON.
type policyCache struct {
	mu sync.RWMutex
	m  map[string]*policy.Policy
}

// get returns b's parsed policy, nil if it has none.
func (c *policyCache) get(b meta.Bucket) (*policy.Policy, error) {
	if b.Policy == "" {
		return nil, nil
	}
	c.mu.RLock()
	p := c.m[b.Policy]
	c.mu.RUnlock()
	if p != nil {
		return p, nil
	}
	// Validated when written: parse it again without the principal check
	// (an account deleted since does not void the policy) or the size cap.
	p, err := policy.Parse([]byte(b.Policy), policy.ParseOptions{Bucket: b.Name, MaxSize: len(b.Policy)})
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "the stored policy of bucket %q does not parse", b.Name)
	}
	c.put(b.Policy, p)
	return p, nil
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

// tagUser is what a policy offers to say which condition keys it needs.
type tagUser interface{ Uses(prefix string) bool }

// needsObjectTags reports whether an evaluator conditions on the object's
// existing tags.
func needsObjectTags(evs ...policy.Evaluator) bool {
	for _, e := range evs {
		if u, ok := e.(tagUser); ok && u.Uses("s3:existingobjecttag/") {
			return true
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

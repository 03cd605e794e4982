package object

import (
	"context"
	"strconv"
	"strings"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/policy"
)

// Actor is who an operation acts for, and the facts about the request
// that policies condition on.
type Actor struct {
	// UserID is the acting account, "" for anonymous.
	UserID string
	// Share: the actor acts through a share link of UserID's, which reads
	// only buckets UserID owns (never a public-read bucket of another
	// account that took the name of a bucket the link's owner deleted).
	Share bool
	// KeyID is the access key the request was signed with, if any.
	KeyID string
	// Scope narrows what the actor may do (a scoped key's or app token's
	// inline policy): every action must be allowed by it, even the
	// owner's. nil: unscoped.
	Scope policy.Evaluator
	// Op is the S3 action the API layer named for this request
	// ("s3:GetBucketVersioning"). Only the service's multi-purpose methods
	// read it (GetBucket, GetLock, the upload lookups), with their own
	// default when it is ""; every other method names its action itself.
	Op string
	// Context holds the request's condition keys (lower-case names, see
	// policy.Request.Context), filled by the API layer; decide adds
	// aws:currenttime and aws:epochtime.
	Context map[string][]string
	// Describe, when Context is nil, builds the condition keys on their
	// first use (the S3 API: an owner's request on a bucket without a
	// policy, by an unscoped key, is decided without them).
	Describe func() map[string][]string
}

// conditions returns the request's condition keys: Context, or what
// Describe builds.
func (a Actor) conditions() map[string][]string {
	if a.Context == nil && a.Describe != nil {
		return a.Describe()
	}
	return a.Context
}

// listing returns a as it asks for a listing of prefix: the condition key
// s3:prefix is the prefix the listing uses, whichever API asked (S3 sets
// it from the query, the file API does not), so that a scope bound to a
// prefix answers both alike.
func (a Actor) listing(prefix string) Actor {
	if prefix == "" {
		return a
	}
	cur := a.conditions()
	c := make(map[string][]string, len(cur)+1)
	for k, v := range cur {
		c[k] = v
	}
	c["s3:prefix"] = []string{prefix}
	a.Context, a.Describe = c, nil
	return a
}

// opOr returns a.Op, or def if the API named no action.
func (a Actor) opOr(def string) string {
	if a.Op != "" {
		return a.Op
	}
	return def
}

// The actions of the file API that S3 has no name for. Policies cannot
// name them (policy.Parse knows only S3's actions), so only the bucket's
// owner, unscoped, may do them.
const (
	actionCreateShare = "coffer:CreateShare"
)

// authorize loads bucket name, decides whether a may do action on it (on
// key, for object actions; "" for bucket actions) and resolves its
// backend.
func (s *core) authorize(ctx context.Context, a Actor, name, action, key string) (bucket, error) {
	if err := ValidBucketName(name); err != nil {
		return bucket{}, ErrNoBucket(name)
	}
	b, err := s.loadBucket(ctx, a, name)
	if err != nil {
		return bucket{}, err
	}
	if err := s.decide(ctx, b, a, action, key); err != nil {
		return bucket{}, err
	}
	return bucket{Bucket: b, backend: s.backendOf(b)}, nil
}

// loadBucket reads bucket name for a request of a: NotFound if missing
// (Unauthenticated for anonymous), and for a share link a bucket its
// owner does not own.
func (s *core) loadBucket(ctx context.Context, a Actor, name string) (meta.Bucket, error) {
	b, err := s.meta.GetBucket(ctx, name)
	if err != nil {
		if errcode.Is(err, errcode.NotFound) {
			if a.UserID == "" {
				return meta.Bucket{}, errcode.New(errcode.Unauthenticated, "authentication required")
			}
			return meta.Bucket{}, ErrNoBucket(name)
		}
		return meta.Bucket{}, err
	}
	if a.Share && b.OwnerID != a.UserID {
		return meta.Bucket{}, ErrNoBucket(name)
	}
	return b, nil
}

// decide answers whether a may do action on bucket b (on key, for object
// actions), in AWS's order:
//  1. an explicit Deny in a's scope or in the bucket policy: denied;
//  2. a scope that does not Allow: denied (a scope only narrows);
//  3. the bucket's owner: allowed;
//  4. the bucket policy Allows: allowed;
//  5. an ACL grant allows: allowed;
//  6. a public-read bucket (the file API's visibility, a preset of this
//     model): s3:GetObject and s3:GetObjectVersion allowed to anyone;
//  7. denied: Unauthenticated for anonymous, PermissionDenied otherwise.
//
// The owner may always read, replace and delete the bucket policy, so a
// policy can never lock its owner out.
func (s *core) decide(ctx context.Context, b meta.Bucket, a Actor, action, key string) error {
	v, err := s.verdictOf(ctx, b, a, action, key)
	if err == nil && v == refused {
		err = denied(a, b.Name)
	}
	return err
}

// verdict is why decide allows an action, or refused.
type verdict int

const (
	refused  verdict = iota // nothing allows it (no explicit Deny either)
	byOwner                 // a owns the bucket
	byPolicy                // the bucket policy allows it
	byACL                   // the bucket's ACL allows it
	byPublic                // the bucket's public-read visibility allows it
)

// verdictOf is decide's answer and why: an error for an explicit Deny
// (or a scope that does not allow), refused when nothing allows it.
func (s *core) verdictOf(ctx context.Context, b meta.Bucket, a Actor, action, key string) (verdict, error) {
	owner := a.UserID != "" && a.UserID == b.OwnerID
	bp, err := s.bucketPolicy(b)
	if err != nil {
		if !owner || !isPolicyAction(action) {
			return refused, err
		}
		bp = nil // the owner may still replace or delete a broken policy
	}
	if a.Scope == nil && bp == nil && owner {
		return byOwner, nil // the common case: no document to consult
	}
	req := s.policyRequest(a, b.Name, action, key, bp, a.Scope)
	if key != "" && uses(objectTagKeys, bp, a.Scope) {
		if err := s.addObjectTags(ctx, b, key, req); err != nil {
			return refused, err
		}
	}
	scope := policy.NoMatch
	if a.Scope != nil {
		if scope = a.Scope.Evaluate(req); scope != policy.Allow {
			return refused, denied(a, b.Name)
		}
	}
	bucketSays := policy.NoMatch
	if bp != nil {
		bucketSays = bp.Evaluate(req)
		if bucketSays == policy.Allow && restricted(b, bp, owner) {
			bucketSays = policy.NoMatch // RestrictPublicBuckets: a public policy grants no one else
		}
	}
	switch {
	case owner && isPolicyAction(action):
		return byOwner, nil
	case bucketSays == policy.Deny:
		return refused, denied(a, b.Name)
	case owner:
		return byOwner, nil
	case bucketSays == policy.Allow:
		return byPolicy, nil
	case s.aclAllows(ctx, b, a, action, key):
		return byACL, nil
	case (action == "s3:GetObject" || action == "s3:GetObjectVersion") && b.Visibility == meta.PublicRead:
		return byPublic, nil
	}
	return refused, nil
}

// checkScope decides an action on no existing bucket (CreateBucket,
// ListBuckets): only a's scope can refuse it.
func (s *core) checkScope(a Actor, action, name string) error {
	if a.Scope == nil {
		return nil
	}
	if a.Scope.Evaluate(s.policyRequest(a, name, action, "", a.Scope)) != policy.Allow {
		return errcode.New(errcode.PermissionDenied, "this key may not %s", strings.TrimPrefix(action, "s3:"))
	}
	return nil
}

// policyRequest is the question the evaluators evs are asked. The
// request's keys are a's, with aws:CurrentTime and aws:EpochTime added
// (in a copy: a.Context is the API layer's) only when an evaluator may
// use them, or the object's tags to come: the common request shares a's
// map.
func (s *core) policyRequest(a Actor, name, action, key string, evs ...policy.Evaluator) *policy.Request {
	res := "arn:aws:s3:::" + name
	if key != "" {
		res += "/" + key
	}
	cur := a.conditions()
	ctx := cur
	if uses(timeKeys, evs...) || key != "" && uses(objectTagKeys, evs...) {
		now := s.now().UTC()
		ctx = make(map[string][]string, len(cur)+2)
		for k, v := range cur {
			ctx[k] = v
		}
		ctx["aws:currenttime"] = []string{now.Format("2006-01-02T15:04:05Z")}
		ctx["aws:epochtime"] = []string{strconv.FormatInt(now.Unix(), 10)}
	}
	return &policy.Request{
		Principal: policy.Principal{Anonymous: a.UserID == "", UserID: a.UserID, KeyID: a.KeyID},
		Action:    action, Resource: res, Context: ctx,
	}
}

// versionActions are the actions S3 names differently on a named
// version of an object (?versionId=).
var versionActions = map[string]string{
	"s3:GetObject":           "s3:GetObjectVersion",
	"s3:DeleteObject":        "s3:DeleteObjectVersion",
	"s3:GetObjectAcl":        "s3:GetObjectVersionAcl",
	"s3:PutObjectAcl":        "s3:PutObjectVersionAcl",
	"s3:GetObjectTagging":    "s3:GetObjectVersionTagging",
	"s3:PutObjectTagging":    "s3:PutObjectVersionTagging",
	"s3:DeleteObjectTagging": "s3:DeleteObjectVersionTagging",
	"s3:GetObjectAttributes": "s3:GetObjectVersionAttributes",
}

// VersionedAction returns the action on a named version of an object
// (S3's s3:GetObjectVersion for s3:GetObject), or action itself for the
// latest (versionID "") and for actions S3 does not rename.
func VersionedAction(action, versionID string) string {
	if v, ok := versionActions[action]; ok && versionID != "" {
		return v
	}
	return action
}

// isPolicyAction reports whether action reads or changes a bucket policy
// (the owner's always: no lock-out).
func isPolicyAction(action string) bool {
	switch action {
	case "s3:GetBucketPolicy", "s3:PutBucketPolicy", "s3:DeleteBucketPolicy":
		return true
	}
	return false
}

// denied is the refusal of decide.
func denied(a Actor, name string) error {
	if a.UserID == "" {
		return errcode.New(errcode.Unauthenticated, "authentication required")
	}
	return errcode.New(errcode.PermissionDenied, "access to bucket %q denied", name)
}

// bucketPolicy returns b's bucket policy, nil if it has none.
func (s *core) bucketPolicy(b meta.Bucket) (policy.Evaluator, error) {
	p, err := s.policies.get(b)
	if p == nil || err != nil {
		return nil, err // never a typed nil in the interface
	}
	return p, nil
}

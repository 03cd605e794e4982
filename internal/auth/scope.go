package auth

import (
	"strings"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/policy"
)

// Scoped keys and app tokens
//
// A key's scope (meta.KeyScope) becomes a policy.Evaluator that the object
// service asks on every action (object.Actor.Scope): a scope only narrows,
// it never grants what the key's user may not do. The simple form is
// evaluated here (simpleScope); an inline policy by the policy language
// (keyPolicy).

// ScopeOf returns the evaluator of a key's scope: nil for an unscoped key,
// an error (nothing stored) for a scope that is not valid.
func ScopeOf(s meta.KeyScope) (policy.Evaluator, error) {
	if err := meta.CheckKeyScope(s); err != nil {
		return nil, err
	}
	switch {
	case !s.Scoped():
		return nil, nil
	case s.Policy != "":
		return keyPolicy(s.Policy)
	}
	return simpleScope{bucket: s.Bucket, prefix: s.Prefix,
		read:  s.Access == meta.AccessRead || s.Access == meta.AccessReadWrite,
		write: s.Access == meta.AccessWrite || s.Access == meta.AccessReadWrite,
		del:   s.Access == meta.AccessReadWrite,
	}, nil
}

// keyPolicy parses a key's inline policy with the policy language: an
// identity policy (it names no bucket of its own, and a statement without
// a Principal is the key's), at most meta.MaxKeyPolicy bytes. A policy
// that does not parse is InvalidArgument (S3 code MalformedPolicy) with
// the reason.
func keyPolicy(doc string) (policy.Evaluator, error) {
	p, err := policy.Parse([]byte(doc), policy.ParseOptions{MaxSize: meta.MaxKeyPolicy})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// simpleScope is the simple form of a key's scope: one bucket (or every
// bucket), a key prefix in it, and an access. What each access allows
// (docs/keys.md says the same):
//
//   - read: s3:GetObject, s3:GetObjectVersion, the object's tags,
//     attributes, retention and legal hold (Get*) on keys under the
//     prefix; s3:ListBucket and s3:ListBucketVersions of the bucket when
//     the listing's prefix (s3:prefix) is under the key's prefix (any
//     listing if the key has no prefix: HeadBucket is a ListBucket without
//     a prefix, so a prefix-scoped key cannot HEAD its bucket, as with an
//     AWS policy that conditions on s3:prefix); s3:ListAllMyBuckets only
//     for a key of every bucket.
//   - write: s3:PutObject (PUT, copy destination, the multipart upload's
//     create, parts and complete), s3:AbortMultipartUpload,
//     s3:ListMultipartUploadParts and the object's tags (Put and Delete)
//     on keys under the prefix; s3:ListBucketMultipartUploads with the
//     listing's prefix under the key's. No reads and no deletes: a
//     write-only key is a drop box (it can replace an object, which
//     versioning keeps).
//   - read-write: both, and s3:DeleteObject and s3:DeleteObjectVersion on
//     keys under the prefix.
//
// Every access may ask s3:GetBucketLocation of its bucket. Nothing else
// is allowed: no bucket creation, deletion or configuration, no ACLs,
// object lock settings, shares or policies.
//
// An object action asked of the bucket itself (no key: the API layer's
// pre-checks that the bucket exists, such as DeleteObjects' before its
// per-key deletes) is allowed when the access allows it in that bucket;
// each key is asked again when it is touched.
type simpleScope struct {
	bucket, prefix   string
	read, write, del bool
}

// The object actions of each access.
var (
	readActions = set("s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectTagging", "s3:GetObjectVersionTagging",
		"s3:GetObjectAttributes", "s3:GetObjectVersionAttributes", "s3:GetObjectRetention", "s3:GetObjectLegalHold")
	writeActions = set("s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts",
		"s3:PutObjectTagging", "s3:PutObjectVersionTagging", "s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging")
	deleteActions = set("s3:DeleteObject", "s3:DeleteObjectVersion")
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Evaluate implements policy.Evaluator: Allow or NoMatch (the simple form
// never denies explicitly).
func (s simpleScope) Evaluate(r *policy.Request) policy.Decision {
	res, ok := strings.CutPrefix(r.Resource, "arn:aws:s3:::")
	if !ok {
		return policy.NoMatch
	}
	bucket, key, isObject := strings.Cut(res, "/")
	if r.Action == "s3:ListAllMyBuckets" {
		return verdict(s.bucket == "" && s.read)
	}
	if bucket == "" || s.bucket != "" && bucket != s.bucket {
		return policy.NoMatch
	}
	var allowed bool
	switch {
	case readActions[r.Action]:
		allowed = s.read
	case writeActions[r.Action]:
		allowed = s.write
	case deleteActions[r.Action]:
		allowed = s.del
	default:
		if isObject {
			return policy.NoMatch
		}
		switch r.Action {
		case "s3:ListBucket", "s3:ListBucketVersions":
			return verdict(s.read && s.listsUnder(r.Context["s3:prefix"]))
		case "s3:ListBucketMultipartUploads":
			return verdict(s.write && s.listsUnder(r.Context["s3:prefix"]))
		case "s3:GetBucketLocation":
			return policy.Allow
		}
		return policy.NoMatch
	}
	return verdict(allowed && (!isObject || strings.HasPrefix(key, s.prefix)))
}

// listsUnder reports whether a listing with prefixes (s3:prefix's values)
// stays under the key's prefix.
func (s simpleScope) listsUnder(prefixes []string) bool {
	if s.prefix == "" {
		return true
	}
	if len(prefixes) == 0 {
		return false
	}
	for _, p := range prefixes {
		if !strings.HasPrefix(p, s.prefix) {
			return false
		}
	}
	return true
}

func verdict(allow bool) policy.Decision {
	if allow {
		return policy.Allow
	}
	return policy.NoMatch
}

package auth

import (
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/policy"
)

// FuzzSimpleScope: the simple form never allows anything outside its
// bucket and prefix: an Allow on an object names a key under the prefix
// in the bucket; on a bucket, the bucket itself, and a listing's prefix
// under the key's; ListAllMyBuckets only for a key of every bucket; and
// never an action outside the three accesses' sets.
func FuzzSimpleScope(f *testing.F) {
	f.Add("b", "p/", "read", "s3:GetObject", "arn:aws:s3:::b/p/a", "p/")
	f.Add("b", "", "write", "s3:PutObject", "arn:aws:s3:::b/x", "")
	f.Add("", "", "read", "s3:ListAllMyBuckets", "arn:aws:s3:::", "")
	f.Add("b", "p/", "read-write", "s3:ListBucket", "arn:aws:s3:::b", "p/q")
	f.Fuzz(func(t *testing.T, bucket, prefix, access, action, resource, listPrefix string) {
		sc := meta.KeyScope{Bucket: bucket, Prefix: prefix, Access: access}
		ev, err := ScopeOf(sc)
		if err != nil || ev == nil {
			return
		}
		r := &policy.Request{Action: action, Resource: resource, Context: map[string][]string{}}
		if listPrefix != "" {
			r.Context["s3:prefix"] = []string{listPrefix}
		}
		if ev.Evaluate(r) != policy.Allow {
			return
		}
		if !readActions[action] && !writeActions[action] && !deleteActions[action] {
			switch action {
			case "s3:ListBucket", "s3:ListBucketVersions", "s3:ListBucketMultipartUploads", "s3:GetBucketLocation", "s3:ListAllMyBuckets":
			default:
				t.Fatalf("%+v allowed %s", sc, action)
			}
		}
		if action == "s3:ListAllMyBuckets" {
			if bucket != "" {
				t.Fatalf("%+v allowed ListAllMyBuckets", sc)
			}
			return
		}
		res, ok := strings.CutPrefix(resource, "arn:aws:s3:::")
		if !ok {
			t.Fatalf("%+v allowed %s on %q", sc, action, resource)
		}
		b, key, isObject := strings.Cut(res, "/")
		if bucket != "" && b != bucket || b == "" {
			t.Fatalf("%+v allowed %s on bucket %q", sc, action, b)
		}
		if isObject && !strings.HasPrefix(key, prefix) {
			t.Fatalf("%+v allowed %s on key %q", sc, action, key)
		}
		if strings.HasPrefix(action, "s3:List") && prefix != "" && !strings.HasPrefix(listPrefix, prefix) {
			t.Fatalf("%+v allowed %s with prefix %q", sc, action, listPrefix)
		}
	})
}

// FuzzParseAppToken: parsing never panics, and what it accepts is exactly
// "coffer_" + ID + "_" + 64 lower-case hex digits.
func FuzzParseAppToken(f *testing.F) {
	f.Add("coffer_CTABC_" + strings.Repeat("0a", 32))
	f.Add("coffer_CT_" + strings.Repeat("f", 64))
	f.Add("coffer_CFX_" + strings.Repeat("1", 64))
	f.Add("eyJhbGciOi")
	f.Fuzz(func(t *testing.T, token string) {
		id, secret, ok := parseAppToken(token)
		if !ok {
			return
		}
		if AppTokenPrefix+id+"_"+secret != token || !strings.HasPrefix(id, "CT") || strings.Contains(id, "_") || len(secret) != 64 {
			t.Fatalf("parseAppToken(%q) = %q, %q", token, id, secret)
		}
	})
}

// BenchmarkSimpleScope is the cost a scoped key adds to each request: one
// evaluation of the simple form (docs/keys.md).
func BenchmarkSimpleScope(b *testing.B) {
	ev, err := ScopeOf(meta.KeyScope{Bucket: "photos", Prefix: "uploads/2026/", Access: meta.AccessReadWrite})
	if err != nil {
		b.Fatal(err)
	}
	r := &policy.Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::photos/uploads/2026/11/27/IMG_0001.jpg"}
	for b.Loop() {
		if ev.Evaluate(r) != policy.Allow {
			b.Fatal("refused")
		}
	}
}

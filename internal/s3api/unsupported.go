package s3api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// A rule is one row of the table of request headers and query parameters
// that Coffer does not implement (or implements only some values of). The
// table is applied in one place (API.checkRequest, called by the handler
// wrapper before any operation runs), so that no operation can answer a
// success that silently ignores what the client asked for: a server-side
// encryption header that did not encrypt, a storage class that was not
// used, a tag that was not stored. docs/s3.md lists the same table
// ("Refused headers and parameters"); a test keeps the two in step.
type rule struct {
	// name is the header (case-insensitive) or, with param, the query
	// parameter. A trailing "*" matches every header with that prefix.
	name  string
	param bool
	// ops are the operations the rule applies to; nil means every
	// operation but those in notOps.
	ops, notOps []string
	// allow lists the values that are accepted (case-insensitively);
	// valid, if set, decides instead. With neither, any value is refused.
	allow []string
	valid func(string) bool
	// check, if set, verifies an accepted value against the request (and
	// returns the S3 error itself).
	check func(api *API, q *request, value string) error
	// code is the S3 error for a refused value (NotImplemented if empty)
	// and why its message.
	code, why string
	// except lists header names (lower case) a prefix rule does not match:
	// the ones other rules of the table decide.
	except []string
	// canon is name as a canonical header key (set by indexRules for
	// exact header names).
	canon string
}

// Operation groups of the table.
var (
	aclOps       = []string{"CreateBucket", "PutObject", "CopyObject", "CreateMultipartUpload", "PutBucketAcl", "PutObjectAcl", "PostObject"}
	objectWrites = []string{"PutObject", "CopyObject", "CreateMultipartUpload"}
	// sseOps have rows of their own for x-amz-server-side-encryption.
	sseOps    = append(slices.Clip(objectWrites), "UploadPart", "CompleteMultipartUpload", "GetObject", "HeadObject")
	bucketOps = []string{
		"HeadBucket", "DeleteBucket", "GetBucketLocation", "GetBucketVersioning",
		"ListObjects", "ListObjectsV2", "ListObjectVersions", "ListMultipartUploads", "DeleteObjects",
		"PutObject", "CopyObject", "GetObject", "HeadObject", "DeleteObject",
		"CreateMultipartUpload", "UploadPart", "UploadPartCopy", "CompleteMultipartUpload",
		"AbortMultipartUpload", "ListParts", "PutBucketEncryption", "GetBucketEncryption", "DeleteBucketEncryption",
		"PutBucketVersioning", "GetObjectTagging", "PutObjectTagging", "DeleteObjectTagging",
		"GetBucketTagging", "PutBucketTagging", "DeleteBucketTagging",
		"PutBucketLifecycleConfiguration", "GetBucketLifecycleConfiguration", "DeleteBucketLifecycle",
		"PutObjectLockConfiguration", "GetObjectLockConfiguration", "PutObjectRetention", "GetObjectRetention",
		"PutObjectLegalHold", "GetObjectLegalHold", "GetObjectAttributes",
		"PutBucketCors", "GetBucketCors", "DeleteBucketCors",
		"PutBucketPolicy", "GetBucketPolicy", "DeleteBucketPolicy", "GetBucketPolicyStatus",
		"PutPublicAccessBlock", "GetPublicAccessBlock", "DeletePublicAccessBlock",
	}
)

// rules is the table. The first rule a request breaks answers it.
func rules() []rule {
	const (
		sse  = "this server-side encryption option is not implemented by Coffer"
		sseC = "server-side encryption with customer keys (SSE-C) applies to PutObject, GetObject, HeadObject, CopyObject and the multipart upload operations only"
		lock = "the x-amz-object-lock-* headers apply to PutObject, CopyObject and CreateMultipartUpload only"
		acl  = "x-amz-acl and x-amz-grant-* apply to CreateBucket, PutObject, CopyObject, CreateMultipartUpload, PutBucketAcl and PutObjectAcl only"
	)
	return []rule{
		// Encryption (docs/encryption.md): SSE-S3 and SSE-KMS on the
		// writes that choose an object's encryption (PutObject, CopyObject,
		// CreateMultipartUpload); SSE-C there, on reads, and on the part
		// uploads and completion of an SSE-C upload (the handlers check the
		// key); the copy source's key on the two copies. Everything else is
		// refused: no header that would have encrypted is ignored.
		{name: "x-amz-server-side-encryption", ops: objectWrites, valid: anyValue, check: checkSSE},
		{name: "x-amz-server-side-encryption-aws-kms-key-id", ops: objectWrites, valid: anyValue, check: checkKMSKeyID},
		{name: "x-amz-server-side-encryption-bucket-key-enabled", ops: objectWrites,
			allow: []string{"true", "false"}, code: s3err.InvalidArgument, why: "must be true or false"},
		{name: "x-amz-server-side-encryption-customer-*", notOps: []string{"PutObject", "GetObject", "HeadObject", "CopyObject",
			"CreateMultipartUpload", "UploadPart", "UploadPartCopy", "CompleteMultipartUpload"}, why: sseC},
		{name: "x-amz-copy-source-server-side-encryption-customer-*", notOps: []string{"CopyObject", "UploadPartCopy"}, why: sseC},
		// A part is written under its upload's encryption: a part upload
		// may repeat it (SDKs and ceph's s3-tests send it), never change it.
		{name: "x-amz-server-side-encryption", ops: []string{"UploadPart", "CompleteMultipartUpload"}, valid: anyValue, check: checkPartSSE},
		{name: "x-amz-server-side-encryption-aws-kms-key-id", ops: []string{"UploadPart", "CompleteMultipartUpload"}, valid: anyValue, check: checkPartSSE},
		// On a read, S3 answers 400: the object's encryption decides.
		{name: "x-amz-server-side-encryption", ops: []string{"GetObject", "HeadObject"}, code: s3err.InvalidArgument,
			why: "x-amz-server-side-encryption is not supported on GET and HEAD: an object is read as it was written"},
		{name: "x-amz-server-side-encryption-aws-kms-key-id", ops: []string{"GetObject", "HeadObject"}, code: s3err.InvalidArgument,
			why: "x-amz-server-side-encryption-aws-kms-key-id is not supported on GET and HEAD: an object is read as it was written"},
		{name: "x-amz-server-side-encryption", notOps: sseOps, why: sse},
		{name: "x-amz-server-side-encryption-aws-kms-key-id", notOps: sseOps, why: sse},
		{name: "x-amz-server-side-encryption-bucket-key-enabled", notOps: []string{"PutObject", "CopyObject", "CreateMultipartUpload"}, why: sse},
		{name: "x-amz-server-side-encryption-context", why: sse},
		// Any other x-amz-server-side-encryption-* header is one Coffer
		// does not know: refused, never ignored.
		{name: "x-amz-server-side-encryption-*", why: sse, except: []string{
			"x-amz-server-side-encryption-aws-kms-key-id", "x-amz-server-side-encryption-bucket-key-enabled",
			"x-amz-server-side-encryption-context", "x-amz-server-side-encryption-customer-algorithm",
			"x-amz-server-side-encryption-customer-key", "x-amz-server-side-encryption-customer-key-md5"}},
		// Object lock, legal hold, retention (lock.go): the writes read
		// the x-amz-object-lock-* headers; CreateBucket makes a bucket
		// with object lock.
		{name: "x-amz-object-lock-*", notOps: objectWrites, why: lock},
		{name: "x-amz-bucket-object-lock-enabled", ops: []string{"CreateBucket"}, allow: []string{"true", "false"},
			code: s3err.InvalidArgument, why: "x-amz-bucket-object-lock-enabled must be true or false"},
		// Object ownership (acl.go) at creation.
		{name: "x-amz-object-ownership", ops: []string{"CreateBucket"},
			allow: []string{"BucketOwnerEnforced", "BucketOwnerPreferred", "ObjectWriter"}, code: s3err.InvalidArgument,
			why: "x-amz-object-ownership must be BucketOwnerEnforced, BucketOwnerPreferred or ObjectWriter"},
		// ACLs (acl.go): read by CreateBucket, the object writes and
		// Put*Acl; refused elsewhere, never ignored.
		{name: "x-amz-acl", notOps: aclOps, why: acl},
		{name: "x-amz-grant-*", notOps: aclOps, why: acl},
		// Tags: x-amz-tagging is read by PutObject, CopyObject and
		// CreateMultipartUpload (tagging.go).
		{name: "x-amz-tagging-directive", ops: []string{"CopyObject"}, allow: []string{"COPY", "REPLACE"},
			code: s3err.InvalidArgument, why: "Unknown tagging directive."},
		// Storage classes and website hosting.
		{name: "x-amz-storage-class", ops: objectWrites, allow: []string{"STANDARD"}, why: "Coffer has one storage class, STANDARD"},
		{name: "x-amz-website-redirect-location", ops: objectWrites, why: "website hosting is not implemented by Coffer"},
		// Standard headers S3 stores with an object.
		// Checksums Coffer would not verify.
		{name: "x-amz-checksum-algorithm", ops: []string{"CopyObject"},
			why: "a copy keeps the source's checksum; Coffer does not compute another one"},
		// A checksum of an algorithm Coffer does not verify (S3's SHA512,
		// MD5, XXHASH64, XXHASH3, XXHASH128, or a name S3 does not know):
		// refused, never stored as if it had been checked.
		{name: "x-amz-checksum-*", except: readChecksumHeaders(),
			why: "Coffer verifies CRC32, CRC32C, CRC64NVME, SHA1 and SHA256 checksums only"},
		// Appends and conditions Coffer does not evaluate.
		{name: "x-amz-write-offset-bytes", ops: []string{"PutObject"}, why: "appending to objects is not implemented by Coffer"},
		{name: "x-amz-if-match-last-modified-time", ops: []string{"DeleteObject"}, why: "this delete condition is not implemented by Coffer"},
		{name: "x-amz-if-match-size", ops: []string{"DeleteObject"}, why: "this delete condition is not implemented by Coffer"},
		{name: "x-amz-if-match-initiated-time", ops: []string{"AbortMultipartUpload"}, why: "this abort condition is not implemented by Coffer"},
		// Owner checks, implemented.
		{name: "x-amz-expected-bucket-owner", ops: bucketOps, valid: anyValue, check: expectedBucketOwner},
		{name: "x-amz-source-expected-bucket-owner", ops: []string{"CopyObject", "UploadPartCopy"}, valid: anyValue, check: expectedSourceOwner},
		// Requester Pays and MFA delete are features Coffer does not
		// have: a client relying on them is told so.
		{name: "x-amz-request-payer", why: "Requester Pays is not implemented by Coffer"},
		{name: "x-amz-mfa", ops: []string{"DeleteObject", "DeleteObjects", "PutBucketVersioning"}, why: "MFA delete is not implemented by Coffer"},
		// Read by the removals and PutObjectRetention (lock.go).
		{name: "x-amz-bypass-governance-retention", ops: []string{"DeleteObject", "DeleteObjects", "PutObjectRetention"}, allow: []string{"true", "false"},
			code: s3err.InvalidArgument, why: "x-amz-bypass-governance-retention must be true or false"},
		// No object is ever archived: no RestoreStatus is the right answer.
		{name: "x-amz-optional-object-attributes", ops: []string{"ListObjects", "ListObjectsV2"}, allow: []string{"RestoreStatus"},
			code: s3err.InvalidArgument, why: "x-amz-optional-object-attributes must be RestoreStatus"},
	}
}

// readChecksumHeaders are the x-amz-checksum-* headers Coffer reads: one per
// algorithm it verifies, and the algorithm, type and mode headers.
func readChecksumHeaders() []string {
	hs := []string{"x-amz-checksum-algorithm", "x-amz-checksum-type", "x-amz-checksum-mode"}
	for _, a := range integrity.Algorithms {
		hs = append(hs, strings.ToLower(a.Header()))
	}
	return hs
}

func anyValue(string) bool { return true }

func expectedBucketOwner(api *API, q *request, want string) error {
	return api.checkOwner(q, q.bucket, want)
}

func expectedSourceOwner(api *API, q *request, want string) error {
	b, _, _, err := copySource(q.Header)
	if err != nil {
		return err
	}
	return api.checkOwner(q, b, want)
}

// checkOwner answers AccessDenied unless bucket's owner is want. Only the
// owner can see who owns a bucket, so anyone else is denied too (also on a
// public-read bucket).
func (api *API) checkOwner(q *request, bucket, want string) error {
	b, err := api.buckets.GetBucket(ctxOf(q), q.actor, bucket)
	if err != nil {
		return err
	}
	if b.OwnerID != want {
		return s3err.New(s3err.AccessDenied, "the bucket is not owned by the expected owner")
	}
	return nil
}

// ruleIndex is the table by operation, built once by New.
type ruleIndex map[string][]rule

// allOps is the key of the rules that apply to every operation.
const allOps = ""

func indexRules(rs []rule) ruleIndex {
	idx := ruleIndex{}
	for _, r := range rs {
		if !r.param && !strings.HasSuffix(r.name, "*") {
			r.canon = http.CanonicalHeaderKey(r.name)
		}
		if r.ops == nil {
			idx[allOps] = append(idx[allOps], r)
			continue
		}
		for _, op := range r.ops {
			idx[op] = append(idx[op], r)
		}
	}
	return idx
}

// checkRequest applies the table to a request for operation op.
func (api *API) checkRequest(op string, q *request) error {
	for _, set := range [2][]rule{api.rules[allOps], api.rules[op]} {
		for _, r := range set {
			if r.notOps != nil && slices.Contains(r.notOps, op) {
				continue
			}
			for _, h := range r.values(q) {
				if err := r.apply(api, q, h); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// field is one header or parameter a rule matched: its name as the
// client sent it (lower case for a header) and its value.
type field struct{ name, value string }

// values returns the header(s) or parameter of the rule present in q
// (nil if absent).
func (r *rule) values(q *request) []field {
	if r.param {
		// Fast path: the name cannot be there, not even percent-encoded.
		if raw := q.URL.RawQuery; !strings.Contains(raw, r.name) && !strings.Contains(raw, "%") {
			return nil
		}
		return fields(r.display(), q.query()[r.name])
	}
	if r.canon != "" {
		return fields(r.display(), q.Header[r.canon])
	}
	prefix := strings.TrimSuffix(r.name, "*")
	var fs []field
	for k, v := range q.Header {
		if len(k) >= len(prefix) && strings.EqualFold(k[:len(prefix)], prefix) && !slices.Contains(r.except, strings.ToLower(k)) {
			fs = append(fs, fields(strings.ToLower(k), v)...)
		}
	}
	return fs
}

func fields(name string, vs []string) []field {
	if len(vs) == 0 {
		return nil
	}
	fs := make([]field, len(vs))
	for i, v := range vs {
		fs[i] = field{name, v}
	}
	return fs
}

// apply checks one value against the rule. A refusal's message starts
// with the header or parameter refused, as the client sent it (a prefix
// rule's too), so that the client learns which one.
func (r *rule) apply(api *API, q *request, f field) error {
	v := strings.TrimSpace(f.value)
	ok := false
	switch {
	case r.valid != nil:
		ok = r.valid(v)
	default:
		for _, a := range r.allow {
			if strings.EqualFold(v, a) {
				ok = true
				break
			}
		}
	}
	if !ok {
		code := r.code
		if code == "" {
			code = s3err.NotImplemented
		}
		return s3err.New(code, f.name+": "+r.why)
	}
	if r.check != nil {
		return r.check(api, q, v)
	}
	return nil
}

// display is the rule's name as docs/s3.md and error messages show it.
func (r *rule) display() string {
	if r.param {
		return "?" + r.name
	}
	return strings.ToLower(r.name)
}

// checkSSE admits the SSE-S3 and SSE-KMS values of
// x-amz-server-side-encryption (requestSSE reads them).
func checkSSE(_ *API, _ *request, v string) error {
	switch v {
	case "AES256", "aws:kms":
		return nil
	case "aws:kms:dsse":
		return s3err.New(s3err.NotImplemented, "x-amz-server-side-encryption: aws:kms:dsse (dual-layer SSE-KMS) is not implemented by Coffer")
	}
	return s3err.New(s3err.InvalidArgument, "x-amz-server-side-encryption: the encryption method specified is not supported")
}

// checkPartSSE admits the x-amz-server-side-encryption (and KMS key id)
// of an UploadPart or CompleteMultipartUpload only when they name the encryption the upload was created
// with: the part is written under that one, whatever the headers say.
func checkPartSSE(api *API, q *request, _ string) error {
	if err := checkSSE(api, q, q.Header.Get("X-Amz-Server-Side-Encryption")); err != nil {
		return err
	}
	want := requestSSE(q.Header)
	u, err := api.uploads.GetUpload(ctxOf(q), q.actor, q.bucket, q.key, q.query().Get("uploadId"))
	if err != nil {
		return err
	}
	mode := crypt.Mode(u.EncryptionMode)
	switch {
	case want.Mode == crypt.ModeKMSKey && mode == crypt.ModeKMSKey && (want.KMSKeyID == "" || want.KMSKeyID == u.EncryptionKMSKey):
	case want.Mode == crypt.ModeServer && want.KMSKeyID == "" && q.Header.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id") == "" &&
		(mode == crypt.ModeServer || mode == 0 && api.buckets.EncryptsByDefault()):
	default:
		return s3err.New(s3err.InvalidArgument, "The server-side encryption headers of this part do not match the encryption the multipart upload was created with.")
	}
	return nil
}

// checkKMSKeyID admits a KMS key id only with aws:kms (as S3 does); the
// key itself is checked when the data key is made (KMS.NotFoundException).
func checkKMSKeyID(_ *API, q *request, v string) error {
	if q.Header.Get("X-Amz-Server-Side-Encryption") != "aws:kms" {
		return s3err.New(s3err.InvalidArgument, "Server Side Encryption with KMS managed key requires HTTP header x-amz-server-side-encryption : aws:kms")
	}
	if v == "" {
		return s3err.New(s3err.InvalidArgument, "x-amz-server-side-encryption-aws-kms-key-id must not be empty")
	}
	return nil
}

// Package sigv2 owns AWS Signature Version 2 for Coffer's S3 API: parsing
// the "AWS AccessKeyId:Signature" Authorization header and the
// AWSAccessKeyId / Signature / Expires query parameters of presigned URLs,
// building the StringToSign the way S3 documents it, and verifying
// HMAC-SHA1 signatures. SigV2 is what boto3's generate_presigned_url and
// aws cli's `s3 presign` produce against a custom endpoint by default;
// SigV4 (package sigv4) is preferred for everything else.
//
// Everything here is pure: no HTTP server, no storage, no global state. The
// caller supplies the secret of an access key through a Lookup function
// (the same contract as sigv4.Lookup) and the clock through Options.Now.
//
// # Verifying a request
//
//	if sigv2.IsSigned(r.Header.Get("Authorization"), r.URL.Query()) {
//		res, err := sigv2.Verify(r, vhostBucket, lookup, sigv2.Options{})
//		// apply res.QueryHeaders to r.Header; check the body against
//		// res.PayloadSHA256 if set
//	}
//
// Header authentication needs a Date or x-amz-date within Options.MaxSkew
// (15 minutes) of the clock. Presigned URLs are valid until Expires, which
// may be at most Options.MaxExpiry (seven days, as SigV4) ahead. Session
// tokens are refused. Signatures are compared in constant time.
//
// # StringToSign
//
//	HTTP-Verb \n Content-MD5 \n Content-Type \n Date \n
//	CanonicalizedAmzHeaders CanonicalizedResource
//
// Date is the Date header, or empty when x-amz-date is sent, or Expires for
// presigned URLs. CanonicalizedAmzHeaders are the x-amz-* headers, names
// lower-cased and sorted, values trimmed and repeated headers joined with
// ',', one "name:value\n" each (x-amz-date is left out of presigned URLs).
// CanonicalizedResource is "/" + the bucket for virtual-host-style requests,
// then the path exactly as sent on the wire (not decoded: "%c3%a9" and
// "%C3%A9" sign differently), then the sub-resources (see IsSubresource:
// acl, delete, location, partNumber, uploadId, uploads, versionId,
// versioning, versions, the response-* overrides, ...) sorted by name, with
// %-decoded values. No other query parameter is signed.
//
// # Compatibility
//
// Clients disagree where the documentation is silent; Verify accepts each
// variant seen in the wild, trying the documented string first (so a
// mismatch costs at most a few more HMACs and reports the documented
// string):
//   - with both Date and x-amz-date, botocore and MinIO sign the Date
//     header's value instead of an empty line; the documentation's own
//     DELETE example signs x-amz-date's value there and leaves x-amz-date
//     out of the x-amz-* headers;
//   - botocore signs a bucket-level path-style request ("/b?list-type=2")
//     with the resource "/b/", as the virtual-host form would be;
//   - a sub-resource sent as "uploads=" is signed "uploads=" by botocore
//     and "uploads" by others;
//   - botocore's presigned URLs carry Content-Type, Content-MD5 and x-amz-*
//     values as query parameters ("content-type=...", "x-amz-meta-a=...").
//     Where the request does not send the header, the parameter stands for
//     it: it is signed in its place and returned in Result.QueryHeaders for
//     the caller to act on, so a signed parameter is never ignored;
//   - a space in the Signature parameter is a '+' left unescaped.
//
// # Considerations
//
// SigV2 signs no body: bodies are unsigned, except that a signed
// x-amz-content-sha256 with a hex SHA-256 is returned in
// Result.PayloadSHA256 for the caller to verify (and aws-chunked
// STREAMING-* bodies are refused). Query parameters other than the
// sub-resources (list-type, prefix, marker, max-keys, ...) are not signed,
// as on S3: a presigned listing URL can be re-pointed at another prefix of
// the same bucket. The access key ID is not in the string to sign either:
// the secret the lookup returns for it binds the signature to the key. The
// host is signed only as the bucket of a virtual-host-style request. There
// is no key derivation, so there is no key cache.
//
// # Errors
//
// Errors are *errcode.Error values whose Err is one of the Err* kinds of
// this package (use errors.Is) and whose Detail["s3_code"] is the S3 error
// code (S3Code). Messages are client-safe; SignatureDoesNotMatch errors
// carry the documented string to sign in Detail, as S3 does.
package sigv2

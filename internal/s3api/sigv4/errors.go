package sigv4

import (
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// The kinds of failure. Every error returned by this package is an
// *errcode.Error whose Err is one of these values (so errors.Is works),
// whose Code is the errcode.Code noted below and whose Detail["s3_code"] is
// the S3 error code (see S3Code). Messages are safe to show to clients and
// never contain secrets or the expected signature.
var (
	// ErrMissingAuth: the request carries no SigV4 credentials at all. The
	// S3 layer may treat it as anonymous. AccessDenied; Unauthenticated.
	ErrMissingAuth error = s3err.NewKind("AccessDenied", errcode.Unauthenticated, "sigv4: request is not signed")

	// ErrUnsupportedAuth: signed with something other than SigV4 HMAC
	// (SigV2, SigV4a, session tokens), or with both header and query
	// authentication. InvalidRequest; InvalidArgument.
	ErrUnsupportedAuth error = s3err.NewKind("InvalidRequest", errcode.InvalidArgument, "sigv4: unsupported authentication mechanism")

	// ErrSignatureDoesNotMatch: the request, a chunk or the trailer is not
	// signed by the secret of the access key. SignatureDoesNotMatch;
	// Unauthenticated.
	ErrSignatureDoesNotMatch error = s3err.NewKind("SignatureDoesNotMatch", errcode.Unauthenticated, "sigv4: signature does not match")

	// ErrInvalidAccessKeyID: the lookup does not know the access key.
	// InvalidAccessKeyId; Unauthenticated.
	ErrInvalidAccessKeyID error = s3err.NewKind("InvalidAccessKeyId", errcode.Unauthenticated, "sigv4: unknown access key")

	// ErrAuthorizationHeaderMalformed: the Authorization header (or its
	// scope: region, service, date) is malformed or wrong.
	// AuthorizationHeaderMalformed; InvalidArgument.
	ErrAuthorizationHeaderMalformed error = s3err.NewKind("AuthorizationHeaderMalformed", errcode.InvalidArgument, "sigv4: malformed Authorization header")

	// ErrAuthorizationQueryParameters: the X-Amz-* query parameters of a
	// presigned URL are missing or malformed.
	// AuthorizationQueryParametersError; InvalidArgument.
	ErrAuthorizationQueryParameters error = s3err.NewKind("AuthorizationQueryParametersError", errcode.InvalidArgument, "sigv4: malformed presigned URL parameters")

	// ErrRequestTimeTooSkewed: the request time of a header-signed request
	// is too far from the server clock. RequestTimeTooSkewed;
	// Unauthenticated.
	ErrRequestTimeTooSkewed error = s3err.NewKind("RequestTimeTooSkewed", errcode.Unauthenticated, "sigv4: request time too skewed")

	// ErrRequestExpired: a presigned URL is past its X-Amz-Expires.
	// AccessDenied ("Request has expired"); Unauthenticated.
	ErrRequestExpired error = s3err.NewKind("AccessDenied", errcode.Unauthenticated, "sigv4: request has expired")

	// ErrRequestNotYetValid: a presigned URL's X-Amz-Date is in the future
	// by more than the allowed skew. AccessDenied; Unauthenticated.
	ErrRequestNotYetValid error = s3err.NewKind("AccessDenied", errcode.Unauthenticated, "sigv4: request is not valid yet")

	// ErrMissingDate: neither X-Amz-Date nor Date carries a valid time.
	// AccessDenied; Unauthenticated.
	ErrMissingDate error = s3err.NewKind("AccessDenied", errcode.Unauthenticated, "sigv4: missing or malformed request date")

	// ErrHeadersNotSigned: the request carries x-amz-* headers that are
	// not covered by the signature. AccessDenied; PermissionDenied.
	ErrHeadersNotSigned error = s3err.NewKind("AccessDenied", errcode.PermissionDenied, "sigv4: headers present that were not signed")

	// ErrMissingSecurityHeader: a header SigV4 requires is absent
	// (x-amz-content-sha256 for header authentication).
	// MissingSecurityHeader; InvalidArgument.
	ErrMissingSecurityHeader error = s3err.NewKind("MissingSecurityHeader", errcode.InvalidArgument, "sigv4: missing required header")

	// ErrContentSHA256Mismatch: the body's SHA-256 differs from
	// x-amz-content-sha256. XAmzContentSHA256Mismatch; ChecksumMismatch.
	ErrContentSHA256Mismatch error = s3err.NewKind("XAmzContentSHA256Mismatch", errcode.ChecksumMismatch, "sigv4: x-amz-content-sha256 mismatch")

	// ErrBadDigest: a trailing checksum differs from the data received.
	// BadDigest; ChecksumMismatch.
	ErrBadDigest error = s3err.NewKind("BadDigest", errcode.ChecksumMismatch, "sigv4: checksum mismatch")

	// ErrInvalidDigest: a trailing checksum value is not valid base64 of
	// the algorithm's size. InvalidDigest; InvalidArgument.
	ErrInvalidDigest error = s3err.NewKind("InvalidDigest", errcode.InvalidArgument, "sigv4: invalid checksum value")

	// ErrIncompleteBody: the body ended before the announced number of
	// bytes (x-amz-decoded-content-length, a chunk size, the final chunk).
	// IncompleteBody; IncompleteBody.
	ErrIncompleteBody error = s3err.NewKind("IncompleteBody", errcode.IncompleteBody, "sigv4: incomplete body")

	// ErrBodyTooLarge: the body carries more than x-amz-decoded-content-length
	// bytes. IncompleteBody; TooLarge.
	ErrBodyTooLarge error = s3err.NewKind("IncompleteBody", errcode.TooLarge, "sigv4: body longer than announced")

	// ErrMalformedBody: the aws-chunked framing or its trailer is malformed
	// (bad chunk header, oversized chunk, missing CRLF, undeclared trailer).
	// InvalidArgument; InvalidArgument.
	ErrMalformedBody error = s3err.NewKind("InvalidArgument", errcode.InvalidArgument, "sigv4: malformed aws-chunked body")

	// ErrInvalidArgument: a SigV4 header has an invalid value
	// (x-amz-content-sha256, x-amz-decoded-content-length, x-amz-trailer).
	// InvalidArgument; InvalidArgument.
	ErrInvalidArgument error = s3err.NewKind("InvalidArgument", errcode.InvalidArgument, "sigv4: invalid argument")
)

// S3Code returns the S3 error code (e.g. "SignatureDoesNotMatch") carried by
// err, or "" if err does not carry one.
func S3Code(err error) string { return s3err.CodeOf(err) }

// The error helpers both signing packages share live in s3err.
var (
	newError = s3err.Wrap
	with     = s3err.With
	clip     = s3err.Clip
)

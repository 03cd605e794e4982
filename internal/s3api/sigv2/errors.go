package sigv2

import (
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// The kinds of failure. Every error returned by this package is an
// *errcode.Error whose Err is one of these values (so errors.Is works),
// whose Code is the errcode.Code noted below and whose Detail["s3_code"] is
// the S3 error code (see S3Code). Messages are the ones S3 sends where S3
// has one, are safe to show to clients, and never contain the secret or
// the expected signature.
var (
	// ErrMissingAuth: the request carries no SigV2 credentials at all.
	// AccessDenied; Unauthenticated.
	ErrMissingAuth error = s3err.NewKind("AccessDenied", errcode.Unauthenticated, "sigv2: request is not signed")

	// ErrConflictingAuth: more than one authentication mechanism (the
	// Authorization header and query authentication, or SigV2 and SigV4
	// query parameters). InvalidArgument; InvalidArgument.
	ErrConflictingAuth error = s3err.NewKind("InvalidArgument", errcode.InvalidArgument, "sigv2: more than one authentication mechanism")

	// ErrUnsupportedAuth: session tokens (x-amz-security-token), which
	// Coffer does not issue. InvalidRequest; InvalidArgument.
	ErrUnsupportedAuth error = s3err.NewKind("InvalidRequest", errcode.InvalidArgument, "sigv2: unsupported authentication mechanism")

	// ErrMalformedHeader: the Authorization header is not
	// "AWS AccessKeyId:Signature". InvalidArgument; InvalidArgument.
	ErrMalformedHeader error = s3err.NewKind("InvalidArgument", errcode.InvalidArgument, "sigv2: malformed Authorization header")

	// ErrMalformedQuery: AWSAccessKeyId, Signature or Expires is missing,
	// repeated or malformed. AccessDenied; Unauthenticated.
	ErrMalformedQuery error = s3err.NewKind("AccessDenied", errcode.Unauthenticated, "sigv2: malformed query authentication")

	// ErrSignatureDoesNotMatch: the request is not signed by the secret of
	// the access key. SignatureDoesNotMatch; Unauthenticated.
	ErrSignatureDoesNotMatch error = s3err.NewKind("SignatureDoesNotMatch", errcode.Unauthenticated, "sigv2: signature does not match")

	// ErrInvalidAccessKeyID: the lookup does not know the access key.
	// InvalidAccessKeyId; Unauthenticated.
	ErrInvalidAccessKeyID error = s3err.NewKind("InvalidAccessKeyId", errcode.Unauthenticated, "sigv2: unknown access key")

	// ErrMissingDate: a header-signed request has neither a valid
	// x-amz-date nor a valid Date. AccessDenied; Unauthenticated.
	ErrMissingDate error = s3err.NewKind("AccessDenied", errcode.Unauthenticated, "sigv2: missing or malformed request date")

	// ErrRequestTimeTooSkewed: the request time of a header-signed request
	// is too far from the server clock. RequestTimeTooSkewed;
	// Unauthenticated.
	ErrRequestTimeTooSkewed error = s3err.NewKind("RequestTimeTooSkewed", errcode.Unauthenticated, "sigv2: request time too skewed")

	// ErrRequestExpired: a presigned URL is past its Expires.
	// AccessDenied ("Request has expired"); Unauthenticated.
	ErrRequestExpired error = s3err.NewKind("AccessDenied", errcode.Unauthenticated, "sigv2: request has expired")

	// ErrExpiresTooFar: a presigned URL's Expires is further ahead than
	// Options.MaxExpiry (seven days, as SigV4 allows). AccessDenied;
	// Unauthenticated.
	ErrExpiresTooFar error = s3err.NewKind("AccessDenied", errcode.Unauthenticated, "sigv2: expiry too far in the future")

	// ErrInvalidArgument: a signed header has a value SigV2 cannot honour
	// (x-amz-content-sha256 other than UNSIGNED-PAYLOAD or a hex SHA-256:
	// aws-chunked bodies need SigV4). InvalidArgument; InvalidArgument.
	ErrInvalidArgument error = s3err.NewKind("InvalidArgument", errcode.InvalidArgument, "sigv2: invalid argument")
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

package sigv4

import (
	"crypto/subtle"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// PostForm is the SigV4 authentication of a browser POST form: its
// x-amz-algorithm, x-amz-credential, x-amz-date and x-amz-signature
// fields, and the base64 policy they sign.
type PostForm struct {
	Algorithm, Credential, Date, Signature, Policy string
}

// VerifyPost authenticates a browser POST form (S3's PostObject): the
// signature is the hex HMAC-SHA256 of the base64 policy under the signing
// key of the credential's scope. The credential is parsed and its scope
// checked exactly as for header and presigned authentication (region,
// service, terminator, date = x-amz-date's day); unknown keys are
// ErrInvalidAccessKeyID, a wrong signature ErrSignatureDoesNotMatch.
// Malformed fields are ErrInvalidArgument errors whose details name the
// field ("argument_name", "argument_value"), as S3 answers. The request
// time is not bounded: the policy's expiration is (the caller checks it).
func VerifyPost(f PostForm, lookup Lookup, opts Options) (Result, error) {
	opts = opts.withDefaults()
	if f.Algorithm != Algorithm {
		return Result{}, argument(newError(ErrInvalidArgument, "Only AWS4-HMAC-SHA256 is supported"), "X-Amz-Algorithm", f.Algorithm)
	}
	t, ok := parseAmzDate(f.Date)
	if !ok {
		return Result{}, argument(newError(ErrInvalidArgument, "X-Amz-Date must be formated via ISO8601 Long format"), "X-Amz-Date", f.Date)
	}
	var a Authorization
	if msg := a.parseCredential(f.Credential); msg != "" {
		return Result{}, argument(newError(ErrInvalidArgument, "%s", msg), "x-amz-credential", f.Credential)
	}
	if err := checkScope(a, &opts, ErrInvalidArgument, ""); err != nil {
		// The same check as every SigV4 request; a POST form's answer
		// names the field.
		return Result{}, argument(errcode.As(err), "x-amz-credential", f.Credential)
	}
	if d := f.Date[:8]; d != a.Date {
		return Result{}, argument(newError(ErrInvalidArgument, "Invalid credential date %q. This date is not the same as X-Amz-Date: %q.", a.Date, d), "x-amz-credential", f.Credential)
	}
	secret, err := secretOf(lookup, a.AccessKeyID)
	if err != nil {
		return Result{}, err
	}
	key := opts.Keys.signingKey(secret, a.Date, a.Region, a.Service)
	sig := signature(key[:], []byte(f.Policy))
	if subtle.ConstantTimeCompare(sig[:], []byte(f.Signature)) != 1 {
		e := newError(ErrSignatureDoesNotMatch, "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
		with(e, "access_key_id", a.AccessKeyID)
		with(e, "signature_provided", f.Signature)
		return Result{}, with(e, "string_to_sign", f.Policy)
	}
	return Result{AccessKeyID: a.AccessKeyID, Payload: PayloadUnsigned, Signature: f.Signature,
		Scope: a.Scope(), AmzDate: f.Date, Time: t}, nil
}

// SignPost returns the x-amz-signature of a POST form's base64 policy
// for the credential scope date (yyyymmdd) and region: what a client
// computes (tests and tools).
func SignPost(secret, date, region, policy string) string {
	sig := signature(SigningKey(secret, date, region, DefaultService), []byte(policy))
	return string(sig[:])
}

func argument(e *errcode.Error, name, value string) *errcode.Error {
	with(e, "argument_name", name)
	return with(e, "argument_value", value)
}

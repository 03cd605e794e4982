package sigv2

import "crypto/subtle"

// VerifyPolicy authenticates a browser POST form signed with SigV2: the
// form's signature field must be the base64 HMAC-SHA1 of its (still
// base64-encoded) policy field under the secret of accessKeyID. Unknown
// keys are ErrInvalidAccessKeyID, a wrong signature
// ErrSignatureDoesNotMatch, as for Verify. The policy itself (expiry,
// conditions) is the caller's to check.
func VerifyPolicy(accessKeyID, signature, policy string, lookup Lookup) (Result, error) {
	secret, err := secretOf(lookup, accessKeyID)
	if err != nil {
		return Result{}, err
	}
	if subtle.ConstantTimeCompare([]byte(Sign(secret, []byte(policy))), []byte(signature)) != 1 {
		e := newError(ErrSignatureDoesNotMatch, "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
		with(e, "access_key_id", accessKeyID)
		with(e, "signature_provided", signature)
		return Result{}, with(e, "string_to_sign", policy)
	}
	return Result{AccessKeyID: accessKeyID}, nil
}

package s3api

import (
	"encoding/hex"
	"io"
	"strings"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
	"github.com/coffer-storage/coffer/internal/s3api/sigv2"
	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
)

// payload says how to read a request's body.
type payload struct {
	res        sigv4.Result
	signed     bool                // res is valid
	sha256     []byte              // declared SHA-256 of a PayloadSHA256 body
	sum        [32]byte            // sha256's bytes when a signature declared it (no allocation)
	trailerAlg integrity.Algorithm // checksum of an aws-chunked trailer
	// decodedLength is x-amz-decoded-content-length of aws-chunked bodies,
	// or -1.
	decodedLength int64
}

// authenticate verifies the request's SigV4 or SigV2 signature (header or
// presigned URL), if it has one, and sets the actor. Unsigned requests are
// anonymous; the object service decides what they may do.
func (api *API) authenticate(q *request) error {
	q.pay.decodedLength = -1
	r := q.Request
	authz := r.Header.Get("Authorization")
	query := q.query()
	if sigv2.IsSigned(authz, query) {
		return api.authenticateV2(q)
	}
	if authz == "" && !sigv4.IsPresigned(query) {
		return anonymousPayload(q)
	}
	var principal auth.Principal
	res, err := sigv4.Verify(r, func(id string) (string, error) {
		secret, p, err := api.keys.LookupKey(r.Context(), id)
		principal, q.keyID = p, id
		return secret, err
	}, sigv4.Options{Region: api.cfg.Region, Now: api.cfg.Now, Keys: api.keyCache})
	if err != nil {
		return err
	}
	q.actor, q.authed = object.Actor{UserID: principal.UserID, KeyID: principal.KeyID, Scope: principal.Scope}, true
	principal.Verified(r.Context())
	q.pay.res, q.pay.signed = res, true
	q.direct = principal.Internal && res.Presigned
	if res.Payload == sigv4.PayloadSHA256 {
		if !decodeSHA256(&q.pay.sum, res.PayloadHash) {
			return s3err.New(s3err.InvalidArgument, "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-* or a hex SHA-256")
		}
		q.pay.sha256 = q.pay.sum[:]
	}
	if res.Payload.Chunked() {
		// An x-amz-trailer that names no algorithm fails in body().
		q.pay.trailerAlg, _ = integrity.AlgorithmOfHeader(strings.TrimSpace(r.Header.Get("X-Amz-Trailer")))
	}
	return nil
}

// authenticateV2 verifies an AWS Signature Version 2 request with the same
// key lookup as SigV4 (unknown keys and keys of disabled users are
// InvalidAccessKeyId). SigV2 signs no body: the body is read as unsigned,
// except that a signed hex x-amz-content-sha256 is verified at EOF like
// SigV4's. Headers a presigned URL carries as query parameters (botocore
// puts Content-Type and x-amz-* there) are signed and become request
// headers here, before any handler reads them; one that would have routed
// the request elsewhere (x-amz-copy-source) or to an operation Coffer does
// not implement is refused, since routing happened before.
func (api *API) authenticateV2(q *request) error {
	r := q.Request
	var principal auth.Principal
	res, err := sigv2.Verify(r, api.virtualHostBucket(r), func(id string) (string, error) {
		secret, p, err := api.keys.LookupKey(r.Context(), id)
		principal, q.keyID = p, id
		return secret, err
	}, sigv2.Options{Now: api.cfg.Now})
	if err != nil {
		return err
	}
	if len(res.QueryHeaders) > 0 {
		op, _ := api.dispatch(q)
		for k, vs := range res.QueryHeaders {
			r.Header[k] = vs
		}
		switch op2, h := api.dispatch(q); {
		case h == nil:
			return s3err.New(s3err.NotImplemented, op2+" (selected by the query parameters of this presigned URL) is not implemented by Coffer")
		case op2 != op:
			return s3err.New(s3err.InvalidRequest, "The query parameters of this presigned URL turn "+op+" into "+op2+"; send them as headers.")
		}
	}
	q.actor, q.authed = object.Actor{UserID: principal.UserID, KeyID: principal.KeyID, Scope: principal.Scope}, true
	principal.Verified(r.Context())
	if res.PayloadSHA256 != "" {
		sum, err := hex.DecodeString(res.PayloadSHA256)
		if err != nil || len(sum) != 32 {
			return s3err.New(s3err.InvalidArgument, "x-amz-content-sha256 must be UNSIGNED-PAYLOAD or a hex SHA-256")
		}
		q.pay.sha256, q.pay.res.PayloadHash = sum, res.PayloadSHA256
	}
	return nil
}

// body returns the request body as the object bytes it carries and their
// exact length (-1 if unknown): aws-chunked bodies decoded with every chunk
// signature and trailer checksum verified. A signed SHA-256 is NOT verified
// here (it is in q.pay.sha256, for the consumer to check in the same pass
// as its own hashing); bodies Coffer parses itself go through readXML
// (body.go), which verifies everything before parsing.
func (q *request) body() (io.Reader, int64, error) {
	r := q.Request
	if !q.pay.signed || !q.pay.res.Payload.Chunked() {
		return r.Body, r.ContentLength, nil
	}
	pr, err := sigv4.NewPayloadReader(r.Body, q.pay.res, r.Header)
	if err != nil {
		return nil, 0, err
	}
	q.pay.decodedLength = pr.DecodedLength()
	return pr, pr.DecodedLength(), nil
}

// anonymousPayload reads an unsigned request's x-amz-content-sha256: a
// signed streaming body needs a signature (S3's InvalidRequest); a hex
// SHA-256 is verified at EOF as a signed one is; UNSIGNED-PAYLOAD is
// nothing to check. An anonymous request cannot carry what it does not
// sign, so a body it declares is never taken unchecked.
func anonymousPayload(q *request) error {
	v := q.Header.Get("X-Amz-Content-Sha256")
	switch {
	case v == "" || v == sigv4.UnsignedPayload:
		return nil
	case v == sigv4.StreamingUnsignedPayloadTrailer:
		// Its aws-chunked body is decoded for signed requests only.
		return s3err.New(s3err.NotImplemented, "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER is not implemented by Coffer for anonymous requests; use UNSIGNED-PAYLOAD")
	case strings.HasPrefix(v, "STREAMING-"):
		return s3err.New(s3err.InvalidRequest, "Anonymous requests don't support this x-amz-content-sha256 value. Please use UNSIGNED-PAYLOAD or STREAMING-UNSIGNED-PAYLOAD-TRAILER.")
	}
	sum, err := hex.DecodeString(v)
	if err != nil || len(sum) != 32 {
		// No body has this SHA-256 (S3 compares and answers so too).
		return s3err.New(s3err.XAmzContentSHA256Mismatch, "")
	}
	q.pay.sha256 = sum
	return nil
}

// decodeSHA256 decodes the hex SHA-256 s (64 hex digits, either case) into
// dst: what hex.DecodeString accepts with a 32-byte result, without its
// allocation (s is copied into a buffer on the stack).
func decodeSHA256(dst *[32]byte, s string) bool {
	if len(s) != 64 {
		return false
	}
	var src [64]byte
	copy(src[:], s)
	_, err := hex.Decode(dst[:], src[:])
	return err == nil
}

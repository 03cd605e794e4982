// Package sigv4 owns AWS Signature Version 4 for Coffer's S3 API: parsing
// credentials, canonicalizing requests the way S3 does, verifying header and
// presigned-URL signatures, decoding and verifying aws-chunked bodies
// (signed chunks, signed and unsigned trailers with checksums), and signing
// requests and URLs for Coffer's own clients.
//
// Everything here is pure: no HTTP server, no storage, no global state. The
// caller supplies the secret of an access key through a Lookup function and
// the clock through Options.Now.
//
// # Verifying a request
//
//	res, err := sigv4.Verify(r, lookup, sigv4.Options{Region: cfg.Region, Keys: cache})
//	if err != nil { ... } // sigv4.S3Code(err) is the S3 error code
//	body, err := sigv4.NewPayloadReader(r.Body, res, r.Header)
//	// stream body into storage; commit only after io.EOF
//	alg, sum := body.Checksum() // the verified trailing checksum, if any
//
// Verify accepts the Authorization header and presigned URLs
// (X-Amz-Algorithm...). It requires host to be signed, a request time
// (X-Amz-Date or Date) within Options.MaxSkew of the clock for header
// authentication, an unexpired X-Amz-Expires for presigned URLs, the
// x-amz-content-sha256 header for header authentication, the configured
// region and service in the credential scope, and by default that every
// x-amz-* header be signed. Signatures are compared in constant time.
//
// # Canonicalization
//
// S3 canonicalizes differently from other AWS services: the path is not
// normalized (no dot-segment removal, no slash merging) and not double
// encoded. The canonical URI is the request's escaped path with each %XX
// decoded and every byte re-encoded (A-Za-z0-9-_.~ kept, '/' kept, %2F
// kept distinct from '/'). Query parameters are decoded ('+' is a space),
// re-encoded and sorted by name then value; X-Amz-Signature is left out of
// presigned URLs. Header values are trimmed with inner runs of spaces
// collapsed; host comes from the request's Host.
//
// # Payloads
//
// Result.Payload says how the body is protected. For a signed hex SHA-256
// the body must hash to it at EOF (ErrContentSHA256Mismatch); for
// UNSIGNED-PAYLOAD nothing is checked; the STREAMING-* modes are aws-chunked
// bodies read through ChunkedReader, which checks every chunk signature,
// the trailer signature, the trailing checksum (CRC32, CRC32C, CRC64NVME,
// SHA1, SHA256), the framing and x-amz-decoded-content-length. Data is
// streamed, never buffered: a chunk's bytes are returned before its
// signature is checked, so consumers must treat any read error as fatal
// and commit nothing before io.EOF.
//
// # Errors
//
// Errors are *errcode.Error values whose Err is one of the Err* kinds of
// this package (use errors.Is) and whose Detail["s3_code"] is the S3 error
// code (S3Code). Messages are client-safe: they never contain the secret,
// the signing key or the expected signature. SignatureDoesNotMatch errors
// carry the canonical request and string to sign in Detail, as S3 does.
//
// # Considerations
//
// Derived signing keys are cached in a KeyCache keyed by a salted hash of
// the secret and scope; the cache never holds a secret. Session tokens,
// SigV2 (handled by package sigv2) and SigV4a are refused with
// ErrUnsupportedAuth. Tests check the
// published AWS examples; captured requests of real clients go in
// testdata/captured (see testdata/README.md).
package sigv4

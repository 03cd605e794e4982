package s3api

import (
	"bytes"
	"encoding/xml"

	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// readXML reads the XML body of a request (CreateBucket,
// CompleteMultipartUpload, DeleteObjects) and decodes it into v. It is the
// only way the S3 API reads a body it parses itself, so that no such body
// has any effect before all of it has been verified:
//
//  1. The whole body, at most Config.MaxXMLBody bytes (EntityTooLarge),
//     is read to EOF through every check the request asks for: the signed
//     SHA-256 of x-amz-content-sha256 (XAmzContentSHA256Mismatch), the
//     chunk and trailer signatures and trailing checksum of aws-chunked
//     bodies (SignatureDoesNotMatch, BadDigest), Content-MD5 and
//     x-amz-checksum-* (BadDigest), and the announced length
//     (IncompleteBody).
//  2. Only then are the bytes parsed, strictly (parseXML): one root
//     element and nothing but whitespace after it, else MalformedXML.
//
// An empty body is MalformedXML; where the body is optional (CreateBucket)
// the caller uses readBody and parses only a non-empty one.
func (api *API) readXML(q *request, v any) error {
	data, err := api.readBody(q)
	if err != nil {
		return err
	}
	return parseXML(data, v)
}

// readBody returns the request body, bounded and verified to EOF as readXML
// describes.
func (api *API) readBody(q *request) ([]byte, error) {
	limit := api.cfg.MaxXMLBody
	if q.ContentLength > limit && !(q.pay.signed && q.pay.res.Payload.Chunked()) {
		return nil, s3err.New(s3err.EntityTooLarge, "XML body too large")
	}
	body, size, err := q.body()
	if err != nil {
		return nil, err
	}
	if size > limit {
		return nil, s3err.New(s3err.EntityTooLarge, "XML body too large")
	}
	md5sum, err := contentMD5(q.Header)
	if err != nil {
		return nil, err
	}
	alg, want, err := headerChecksum(q.Header)
	if err != nil {
		return nil, err
	}
	if q.pay.trailerAlg != "" {
		alg, want = "", nil // verified by the aws-chunked trailer decoder
	}
	vr := integrity.NewReader(body, integrity.Options{
		Size: size, Limit: limit, LimitErr: s3err.New(s3err.EntityTooLarge, "XML body too large"),
		SHA256: q.pay.sha256, MD5: md5sum, NoMD5: md5sum == nil,
		ChecksumAlgorithm: alg, ChecksumWant: want,
	})
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size))
	}
	if _, err := buf.ReadFrom(vr); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parseXML decodes data, a complete and verified body, into v: exactly one
// root element (the one v expects), optionally preceded by an XML
// declaration, and followed by nothing but whitespace. Anything else is
// MalformedXML.
func parseXML(data []byte, v any) error {
	dec := xml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return s3err.New(s3err.MalformedXML, "")
	}
	// Decode stopped at the end of the root element: what follows must
	// be whitespace only (not a second root, not text, not comments).
	rest := data[dec.InputOffset():]
	if len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return s3err.New(s3err.MalformedXML, "unexpected content after the root element")
	}
	return nil
}

package s3api

import (
	"encoding/xml"
	"net/http"

	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// Server-side encryption headers (docs/s3.md, docs/encryption.md). The
// table in unsupported.go has admitted only what is implemented by the
// time an operation reads them.

// requestSSE is the encryption a write asks for: SSE-S3, SSE-KMS (with
// the key the client named, "" for the default), or the zero value (the
// server's default).
func requestSSE(h http.Header) object.SSE {
	switch h.Get("X-Amz-Server-Side-Encryption") {
	case "AES256":
		return object.SSE{Mode: crypt.ModeServer}
	case "aws:kms":
		return object.SSE{Mode: crypt.ModeKMSKey, KMSKeyID: h.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id")}
	}
	return object.SSE{}
}

// sseHeaders sets the response headers S3 sends for stored bytes
// encrypted as e (none for plaintext).
func sseHeaders(h http.Header, e object.Encryption) {
	switch e.Mode {
	case crypt.ModeServer:
		h.Set("X-Amz-Server-Side-Encryption", "AES256")
	case crypt.ModeKMSKey:
		h.Set("X-Amz-Server-Side-Encryption", "aws:kms")
		h.Set("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id", e.KMSKeyID)
		h.Set("X-Amz-Server-Side-Encryption-Bucket-Key-Enabled", "true")
	}
}

// sseConfiguration is the body of Put/GetBucketEncryption.
type sseConfiguration struct {
	XMLName xml.Name  `xml:"ServerSideEncryptionConfiguration"`
	Xmlns   string    `xml:"xmlns,attr,omitempty"`
	Rules   []sseRule `xml:"Rule"`
}

type sseRule struct {
	Default *struct {
		SSEAlgorithm   string `xml:"SSEAlgorithm"`
		KMSMasterKeyID string `xml:"KMSMasterKeyID,omitempty"`
	} `xml:"ApplyServerSideEncryptionByDefault"`
	BucketKeyEnabled *bool `xml:"BucketKeyEnabled"`
	// BlockedEncryptionTypes (SSE-C blocking): nothing to block, since
	// SSE-C is refused anyway; refused too so no setting is ignored.
	Blocked *struct{} `xml:"BlockedEncryptionTypes"`
}

// parseSSEConfiguration reads a PutBucketEncryption body: one rule with a
// default of AES256 or aws:kms (and a key id).
func parseSSEConfiguration(data []byte) (enc, key string, err error) {
	var c sseConfiguration
	if err := parseXML(data, &c); err != nil {
		return "", "", err
	}
	if len(c.Rules) != 1 || c.Rules[0].Default == nil {
		return "", "", s3err.New(s3err.MalformedXML, "give exactly one Rule with ApplyServerSideEncryptionByDefault")
	}
	r := c.Rules[0]
	if r.Blocked != nil {
		return "", "", s3err.New(s3err.NotImplemented, "BlockedEncryptionTypes is not implemented by Coffer (SSE-C is refused anyway)")
	}
	enc, key = r.Default.SSEAlgorithm, r.Default.KMSMasterKeyID
	switch {
	case enc == "aws:kms:dsse":
		return "", "", s3err.New(s3err.NotImplemented, "aws:kms:dsse (dual-layer SSE-KMS) is not implemented by Coffer")
	case enc != meta.EncryptAES256 && enc != meta.EncryptKMS:
		return "", "", s3err.New(s3err.MalformedXML, "SSEAlgorithm must be AES256 or aws:kms")
	case key != "" && enc != meta.EncryptKMS:
		return "", "", s3err.New(s3err.InvalidArgument, "a KMSMasterKeyID is only valid with aws:kms")
	}
	return enc, key, nil
}

func (api *API) putBucketEncryption(q *request) (response, error) {
	data, err := api.readBody(q)
	if err != nil {
		return nil, err
	}
	enc, key, err := parseSSEConfiguration(data)
	if err != nil {
		return nil, err
	}
	if _, err := api.objects.SetBucketEncryption(ctxOf(q), q.actor, q.bucket, enc, key); err != nil {
		return nil, err
	}
	return empty{}, nil
}

// getBucketEncryption answers the bucket's default; with none, AES256 if
// the server encrypts every object (--encryption on, as AWS S3 answers
// for its buckets since 2023), else ServerSideEncryptionConfigurationNotFoundError.
func (api *API) getBucketEncryption(q *request) (response, error) {
	b, err := api.objects.GetBucket(ctxOf(q), q.actor, q.bucket)
	if err != nil {
		return nil, err
	}
	enc, key := b.Encryption, b.EncryptionKMSKey
	if enc == "" {
		if !api.objects.EncryptsByDefault() {
			return nil, s3err.New(s3err.SSEConfigNotFound, "")
		}
		enc = meta.EncryptAES256
	}
	c := sseConfiguration{Xmlns: s3NS, Rules: []sseRule{{}}}
	c.Rules[0].Default = &struct {
		SSEAlgorithm   string `xml:"SSEAlgorithm"`
		KMSMasterKeyID string `xml:"KMSMasterKeyID,omitempty"`
	}{enc, key}
	t := enc == meta.EncryptKMS
	c.Rules[0].BucketKeyEnabled = &t
	return xmlResponse{body: c}, nil
}

func (api *API) deleteBucketEncryption(q *request) (response, error) {
	if _, err := api.objects.SetBucketEncryption(ctxOf(q), q.actor, q.bucket, "", ""); err != nil {
		return nil, err
	}
	return empty{status: http.StatusNoContent}, nil
}

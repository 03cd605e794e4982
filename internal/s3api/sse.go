package s3api

import (
	"crypto/md5"
	"crypto/subtle"
	"encoding/base64"
	"encoding/xml"
	"net"
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

// customerKey reads the SSE-C headers with prefix (the object's, or the
// copy source's): nil when there are none; else the 256-bit key and the
// base64 MD5 the client sent (echoed in responses), checked as S3 does.
func customerKey(q *request, prefix string) (key []byte, keyMD5 string, err error) {
	n := sseCNames
	if prefix == copySSECPrefix {
		n = copySSECNames
	} else if prefix != sseCPrefix {
		n = [3]string{prefix + "Algorithm", prefix + "Key", prefix + "Key-Md5"}
	}
	alg, k, m := q.Header.Get(n[0]), q.Header.Get(n[1]), q.Header.Get(n[2])
	if alg == "" && k == "" && m == "" {
		return nil, "", nil
	}
	if !secureOrLoopback(q) {
		return nil, "", s3err.New(s3err.InvalidRequest, "Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection.")
	}
	if alg != "AES256" {
		return nil, "", s3err.New(s3err.InvalidArgument, "The encryption algorithm must be AES256 (x-amz-server-side-encryption-customer-algorithm).")
	}
	key, err = base64.StdEncoding.Strict().DecodeString(k)
	if err != nil || len(key) != 32 {
		return nil, "", s3err.New(s3err.InvalidArgument, "The secret key was invalid for the specified algorithm.")
	}
	sum := md5.Sum(key)
	want, err := base64.StdEncoding.Strict().DecodeString(m)
	if err != nil || subtle.ConstantTimeCompare(want, sum[:]) != 1 {
		return nil, "", s3err.New(s3err.InvalidArgument, "The calculated MD5 hash of the key did not match the hash that was provided.")
	}
	return key, m, nil
}

const (
	sseCPrefix     = "X-Amz-Server-Side-Encryption-Customer-"
	copySSECPrefix = "X-Amz-Copy-Source-Server-Side-Encryption-Customer-"
)

// The SSE-C header names customerKey reads, built once (three names made
// per request were three allocations on every GET and PUT).
var (
	sseCNames     = [3]string{sseCPrefix + "Algorithm", sseCPrefix + "Key", sseCPrefix + "Key-Md5"}
	copySSECNames = [3]string{copySSECPrefix + "Algorithm", copySSECPrefix + "Key", copySSECPrefix + "Key-Md5"}
)

// secureOrLoopback reports whether a customer key may travel on q's
// connection: TLS, or a loopback client (tests, a local proxy that
// terminates TLS).
func secureOrLoopback(q *request) bool {
	if q.TLS != nil {
		return true
	}
	host, _, err := net.SplitHostPort(q.RemoteAddr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}

// writeSSE is requestSSE with SSE-C: the customer key headers, which
// exclude x-amz-server-side-encryption.
func writeSSE(q *request) (object.SSE, string, error) {
	key, keyMD5, err := customerKey(q, sseCPrefix)
	if err != nil {
		return object.SSE{}, "", err
	}
	if key == nil {
		return requestSSE(q.Header), "", nil
	}
	if q.Header.Get("X-Amz-Server-Side-Encryption") != "" {
		return object.SSE{}, "", s3err.New(s3err.InvalidArgument, "Server Side Encryption with Customer provided key is incompatible with the encryption method specified")
	}
	return object.SSE{Mode: crypt.ModeCustomer, CustomerKey: key}, keyMD5, nil
}

// sseCHeaders sets the SSE-C response headers (the key's MD5 as the
// client sent it).
func sseCHeaders(h http.Header, keyMD5 string) {
	h.Set(sseCPrefix[:len(sseCPrefix)-1]+"-Algorithm", "AES256")
	h.Set(sseCPrefix+"Key-Md5", keyMD5)
}

// sseHeaders sets the response headers S3 sends for stored bytes
// encrypted as e (none for plaintext; SSE-C: see sseCHeaders).
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
	Blocked *xmlAny `xml:"BlockedEncryptionTypes"`
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
	if _, err := api.buckets.SetBucketEncryption(ctxOf(q), q.actor, q.bucket, enc, key); err != nil {
		return nil, err
	}
	return empty{}, nil
}

// getBucketEncryption answers the bucket's default; with none, AES256 if
// the server encrypts every object (--encryption on, as AWS S3 answers
// for its buckets since 2023), else ServerSideEncryptionConfigurationNotFoundError.
func (api *API) getBucketEncryption(q *request) (response, error) {
	b, err := api.buckets.GetBucket(ctxOf(q), q.actor, q.bucket)
	if err != nil {
		return nil, err
	}
	enc, key := b.Encryption, b.EncryptionKMSKey
	if enc == "" {
		if !api.buckets.EncryptsByDefault() {
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
	if _, err := api.buckets.SetBucketEncryption(ctxOf(q), q.actor, q.bucket, "", ""); err != nil {
		return nil, err
	}
	return empty{status: http.StatusNoContent}, nil
}

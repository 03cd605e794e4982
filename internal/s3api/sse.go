package s3api

import (
	"net/http"

	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/object"
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

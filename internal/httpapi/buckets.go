package httpapi

import (
	"net/http"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// bucketHandlers are the routes of a user's buckets (/api/v1/buckets).
type bucketHandlers struct {
	jsonDecoder
	buckets Buckets
}

type bucketJSON struct {
	Name       string          `json:"name"`
	Visibility meta.Visibility `json:"visibility"`
	CreatedAt  time.Time       `json:"created_at"`
	// Encryption is the bucket's default encryption of new objects;
	// absent: the server's (--encryption).
	Encryption *bucketEncryptionJSON `json:"encryption,omitempty"`
	// Versioning is "Enabled" or "Suspended"; absent for a bucket never
	// versioned.
	Versioning meta.Versioning `json:"versioning,omitempty"`
	// Gateway is true for a gateway bucket (docs/gateway.md).
	Gateway bool `json:"gateway,omitempty"`
	// Objects and Bytes (GET /buckets only; not for gateway buckets): the
	// objects the bucket holds and their total size.
	Objects *int64 `json:"objects,omitempty"`
	Bytes   *int64 `json:"bytes,omitempty"`
}

type bucketEncryptionJSON struct {
	Default  string `json:"default"`              // "AES256" or "aws:kms"; "" in a PATCH: back to the server's default
	KMSKeyID string `json:"kms_key_id,omitempty"` // with "aws:kms": the key ("" = the provider's default)
}

func toBucketJSON(b meta.Bucket) bucketJSON {
	out := bucketJSON{Name: b.Name, Visibility: b.Visibility, CreatedAt: b.CreatedAt, Versioning: b.Versioning, Gateway: b.IsGateway()}
	if b.Encryption != "" {
		out.Encryption = &bucketEncryptionJSON{Default: b.Encryption, KMSKeyID: b.EncryptionKMSKey}
	}
	return out
}

func (h *bucketHandlers) listBuckets(r *http.Request, p auth.Principal) (response, error) {
	bs, err := h.buckets.ListBuckets(r.Context(), actor(r, p))
	if err != nil {
		return nil, err
	}
	out := make([]bucketJSON, 0, len(bs))
	for _, b := range bs {
		j := toBucketJSON(b)
		if !b.IsGateway() {
			j.Objects, j.Bytes = &b.Objects, &b.Bytes
		}
		out = append(out, j)
	}
	return ok(map[string]any{"buckets": out}), nil
}

type bucketBody struct {
	Name       string          `json:"name"`
	Visibility meta.Visibility `json:"visibility"`
}

func (h *bucketHandlers) createBucket(r *http.Request, p auth.Principal) (response, error) {
	var body bucketBody
	if err := h.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	b, err := h.buckets.CreateBucket(r.Context(), actor(r, p), body.Name, body.Visibility)
	if err != nil {
		return nil, err
	}
	return created(toBucketJSON(b)), nil
}

func (h *bucketHandlers) getBucket(r *http.Request, p auth.Principal) (response, error) {
	b, err := h.buckets.GetBucket(r.Context(), actor(r, p), r.PathValue("bucket"))
	if err != nil {
		return nil, err
	}
	return ok(toBucketJSON(b)), nil
}

func (h *bucketHandlers) patchBucket(r *http.Request, p auth.Principal) (response, error) {
	var body struct {
		Visibility *meta.Visibility      `json:"visibility"`
		Encryption *bucketEncryptionJSON `json:"encryption"`
		Versioning *meta.Versioning      `json:"versioning"`
	}
	if err := h.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	// Check everything before changing anything.
	switch {
	case body.Visibility == nil && body.Encryption == nil && body.Versioning == nil:
		return nil, errcode.New(errcode.InvalidArgument, "give visibility, encryption, versioning or several")
	case body.Visibility != nil && !body.Visibility.Valid():
		return nil, errcode.New(errcode.InvalidArgument, "visibility must be %q or %q", meta.Private, meta.PublicRead)
	case body.Versioning != nil:
		if err := meta.CheckVersioning(*body.Versioning); err != nil {
			return nil, err
		}
	}
	name := r.PathValue("bucket")
	b, err := h.buckets.GetBucket(r.Context(), actor(r, p), name)
	if err != nil {
		return nil, err
	}
	if body.Versioning != nil {
		if b, err = h.buckets.SetBucketVersioning(r.Context(), actor(r, p), name, *body.Versioning); err != nil {
			return nil, err
		}
	}
	if e := body.Encryption; e != nil {
		if b, err = h.buckets.SetBucketEncryption(r.Context(), actor(r, p), name, e.Default, e.KMSKeyID); err != nil {
			return nil, err
		}
	}
	if body.Visibility != nil {
		if b, err = h.buckets.SetBucketVisibility(r.Context(), actor(r, p), name, *body.Visibility); err != nil {
			return nil, err
		}
	}

	return ok(toBucketJSON(b)), nil
}

func (h *bucketHandlers) deleteBucket(r *http.Request, p auth.Principal) (response, error) {
	if err := h.buckets.DeleteBucket(r.Context(), actor(r, p), r.PathValue("bucket")); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// Presigner makes a presigned UploadPart URL for a direct upload, valid
// for ttl, on behalf of userID.
type Presigner func(ctx context.Context, userID, bucket, key, uploadID string, part int, ttl time.Duration) (string, error)

// defaultPartSize is the part size of a direct-upload session that names
// none (a default of the request, as S3's max-keys is).
const defaultPartSize = 8 << 20

type createUploadBody struct {
	Bucket      string `json:"bucket"`
	Key         string `json:"key"`
	Size        int64  `json:"size"`
	PartSize    int64  `json:"part_size"`
	ContentType string `json:"content_type"`
}

type partURL struct {
	PartNumber int    `json:"part_number"`
	URL        string `json:"url"`
}

type uploadJSON struct {
	UploadID  string     `json:"upload_id"`
	Bucket    string     `json:"bucket"`
	Key       string     `json:"key"`
	Size      int64      `json:"size"`
	PartSize  int64      `json:"part_size"`
	ExpiresAt time.Time  `json:"expires_at"`
	Parts     []partURL  `json:"parts,omitempty"`
	Uploaded  []partJSON `json:"uploaded_parts,omitempty"`
}

type partJSON struct {
	PartNumber int    `json:"part_number"`
	Size       int64  `json:"size"`
	ETag       string `json:"etag"`
}

// planParts picks the part size: the client's if valid, else 8 MiB, grown
// so that the upload fits in 10,000 parts.
func planParts(size, want int64) (int64, int, error) {
	if size < 0 {
		return 0, 0, errcode.New(errcode.InvalidArgument, "size must be >= 0")
	}
	ps := want
	if ps == 0 {
		ps = defaultPartSize
		if need := (size + object.MaxParts - 1) / object.MaxParts; need > ps {
			ps = (need + 1<<20 - 1) &^ (1<<20 - 1)
		}
	}
	if ps < object.MinPartSize || ps > object.MaxPartSize {
		return 0, 0, errcode.New(errcode.InvalidArgument, "part_size must be between 5 MiB and 5 GiB")
	}
	n := int((size + ps - 1) / ps)
	if n == 0 {
		n = 1
	}
	if n > object.MaxParts {
		return 0, 0, errcode.New(errcode.InvalidArgument, "size / part_size needs more than 10000 parts")
	}
	return ps, n, nil
}

// uploadHandlers are the routes of direct uploads (/api/v1/uploads): the
// client sends the parts straight to an S3 endpoint through presigned
// URLs, and completes the upload here.
type uploadHandlers struct {
	jsonDecoder
	uploads Uploads
	presign Presigner     // Config.Presign; nil: only a backend's own URLs
	ttl     time.Duration // Config.DirectUploadExpiry
}

func (h *uploadHandlers) createUpload(r *http.Request, p auth.Principal) (response, error) {
	var body createUploadBody
	if err := h.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	// With an S3 blob backend, parts go straight to the backend store
	// (presigned URLs of the store itself); otherwise to Coffer's S3 API.
	backend := h.uploads.BackendDirect()
	if !backend && h.presign == nil {
		return nil, errcode.New(errcode.NotImplemented, "direct uploads need the S3 listener")
	}
	ps, n, err := planParts(body.Size, body.PartSize)
	if err != nil {
		return nil, err
	}
	u, err := h.uploads.CreateUpload(r.Context(), actor(r, p), object.CreateUploadInput{
		Bucket: body.Bucket, Key: body.Key, ContentType: body.ContentType,
		Size: max(body.Size, 0), PartSize: ps, TTL: h.ttl, Backend: backend,
	})
	if err != nil {
		return nil, err
	}
	// An encrypted upload (the bucket's default) is not assembled by the
	// backend even where it could be: its bytes must pass through Coffer.
	if backend = u.BackendUploadID != ""; !backend && h.presign == nil {
		_ = h.uploads.AbortUpload(r.Context(), actor(r, p), u.Bucket, u.Key, u.ID)
		return nil, errcode.New(errcode.NotImplemented, "encrypted direct uploads need the S3 listener")
	}
	out := uploadJSON{UploadID: u.ID, Bucket: u.Bucket, Key: u.Key, Size: body.Size, PartSize: ps, ExpiresAt: u.ExpiresAt}
	ttl := time.Until(u.ExpiresAt)
	for i := 1; i <= n; i++ {
		var url string
		if backend {
			url, err = h.uploads.PresignBackendPart(r.Context(), actor(r, p), u, i, ttl)
		} else {
			url, err = h.presign(r.Context(), p.UserID, u.Bucket, u.Key, u.ID, i, ttl)
		}
		if err != nil {
			return nil, err
		}
		out.Parts = append(out.Parts, partURL{PartNumber: i, URL: url})
	}
	return created(out), nil
}

func (h *uploadHandlers) getUpload(r *http.Request, p auth.Principal) (response, error) {
	id := r.PathValue("id")
	var parts []meta.Part
	var u meta.Upload
	after := 0
	for {
		up, ps, more, err := h.uploads.ListParts(r.Context(), actor(r, p), "", "", id, after, 1000)
		if err != nil {
			return nil, err
		}
		u = up
		parts = append(parts, ps...)
		if !more || len(ps) == 0 {
			break
		}
		after = ps[len(ps)-1].Number
	}
	out := uploadJSON{UploadID: u.ID, Bucket: u.Bucket, Key: u.Key, Size: u.Size, PartSize: u.PartSize, ExpiresAt: u.ExpiresAt, Uploaded: []partJSON{}}
	for _, pt := range parts {
		out.Uploaded = append(out.Uploaded, partJSON{PartNumber: pt.Number, Size: pt.Size, ETag: pt.ETag})
	}
	return ok(out), nil
}

func (h *uploadHandlers) completeUpload(r *http.Request, p auth.Principal) (response, error) {
	var body struct {
		Parts []struct {
			PartNumber int    `json:"part_number"`
			ETag       string `json:"etag"`
		} `json:"parts"`
	}
	if err := h.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	parts := make([]meta.CompletePart, len(body.Parts))
	for i, pt := range body.Parts {
		parts[i] = meta.CompletePart{Number: pt.PartNumber, ETag: pt.ETag}
	}
	o, err := h.uploads.CompleteUpload(r.Context(), actor(r, p), "", "", r.PathValue("id"), parts, meta.Cond{})
	if err != nil {
		return nil, err
	}
	return ok(toFileJSON(o)), nil
}

func (h *uploadHandlers) abortUpload(r *http.Request, p auth.Principal) (response, error) {
	if err := h.uploads.AbortUpload(r.Context(), actor(r, p), "", "", r.PathValue("id")); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

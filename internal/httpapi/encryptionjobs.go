package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Encryption at rest for administrators: rotate the key-encryption key;
// the background jobs (docs/encryption.md#background-jobs): start a
// re-wrap or an encryption, follow their progress, and see which KEK
// versions stored data keys still use; the SSE-KMS key grants.

// encryptionJobJSON is a job as the admin API shows it.
type encryptionJobJSON struct {
	Name       string     `json:"name"`
	Kind       string     `json:"kind"`
	Bucket     string     `json:"bucket,omitempty"`
	State      string     `json:"state"`
	Pass       int64      `json:"pass"`
	Phase      string     `json:"phase"`
	Done       int64      `json:"done"`
	Skipped    int64      `json:"skipped"`
	Failed     int64      `json:"failed"`
	LastError  string     `json:"last_error,omitempty"`
	LeaseOwner string     `json:"lease_owner,omitempty"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

func toEncryptionJobJSON(j meta.EncryptionJob) encryptionJobJSON {
	out := encryptionJobJSON{Name: j.Name, Kind: j.Kind, Bucket: j.Bucket, State: j.State, Pass: j.Pass,
		Phase: [...]string{"objects", "object_parts", "upload_parts"}[min(max(int(j.Phase), 0), 2)],
		Done:  j.Done, Skipped: j.Skipped, Failed: j.Failed, LastError: j.LastError, LeaseOwner: j.LeaseOwner,
		StartedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt}
	if !j.LeaseUntil.IsZero() && j.State == meta.JobRunning {
		t := j.LeaseUntil
		out.LeaseUntil = &t
	}
	if !j.FinishedAt.IsZero() {
		t := j.FinishedAt
		out.FinishedAt = &t
	}
	return out
}

// encryptionHandlers are the administrators' routes of encryption at
// rest (under /api/v1/admin/kms and the users' kms-keys): the rotation of
// the key-encryption key, the background jobs, the SSE-KMS key grants.
type encryptionHandlers struct {
	jsonDecoder
	encryption Encryption
	rotateKeys func(ctx context.Context) (previous, current string, err error) // Config.RotateKeys
}

// adminRotateKeys rotates the default key-encryption key of encryption at
// rest (docs/encryption.md) and starts the background re-wrap of the data
// keys already issued (the "rewrap" job; see GET /api/v1/admin/kms/jobs).
func (h *encryptionHandlers) adminRotateKeys(r *http.Request, _ auth.Principal) (response, error) {
	if h.rotateKeys == nil {
		return nil, errcode.New(errcode.NotImplemented, "no key provider: start the server with --encryption on or --kms")
	}
	prev, cur, err := h.rotateKeys(r.Context())
	if err != nil {
		return nil, err
	}
	body := map[string]any{"kek": cur, "previous_kek": prev, "rotated": prev != cur}
	if prev != cur {
		j, err := h.encryption.StartRewrap(r.Context())
		if err != nil {
			return nil, err
		}
		body["job"] = toEncryptionJobJSON(j)
	}
	return ok(body), nil
}

// kmsGrantJSON is a grant of the SSE-KMS key allow list.
type kmsGrantJSON struct {
	Key       string    `json:"key"`
	UserID    string    `json:"user_id"`
	CreatedAt time.Time `json:"created_at"`
}

// adminKMSGrants lists the SSE-KMS key allow list: who may name which key
// other than the provider's default.
func (h *encryptionHandlers) adminKMSGrants(r *http.Request, _ auth.Principal) (response, error) {
	gs, err := h.encryption.ListKMSKeyGrants(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]kmsGrantJSON, 0, len(gs))
	for _, g := range gs {
		out = append(out, kmsGrantJSON{Key: g.Key, UserID: g.UserID, CreatedAt: g.CreatedAt})
	}
	return ok(map[string]any{"grants": out}), nil
}

// adminAllowKMSKey lets user {id} name the SSE-KMS key {key...}.
func (h *encryptionHandlers) adminAllowKMSKey(r *http.Request, _ auth.Principal) (response, error) {
	g, err := h.encryption.AllowKMSKey(r.Context(), r.PathValue("key"), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return ok(kmsGrantJSON{Key: g.Key, UserID: g.UserID, CreatedAt: g.CreatedAt}), nil
}

// adminDisallowKMSKey withdraws user {id}'s grant of {key...}.
func (h *encryptionHandlers) adminDisallowKMSKey(r *http.Request, _ auth.Principal) (response, error) {
	if err := h.encryption.DisallowKMSKey(r.Context(), r.PathValue("key"), r.PathValue("id")); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

// adminStartRewrap (re)starts the re-wrap of every data key to the
// current KEK versions.
func (h *encryptionHandlers) adminStartRewrap(r *http.Request, _ auth.Principal) (response, error) {
	j, err := h.encryption.StartRewrap(r.Context())
	if err != nil {
		return nil, err
	}
	return accepted(toEncryptionJobJSON(j)), nil
}

// adminStartEncrypt (re)starts the encryption of a bucket's plaintext
// objects: {"bucket": "B"}, or {"all": true} for every bucket.
func (h *encryptionHandlers) adminStartEncrypt(r *http.Request, _ auth.Principal) (response, error) {
	var body struct {
		Bucket string `json:"bucket"`
		All    bool   `json:"all"`
	}
	if err := h.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	if (body.Bucket == "") == !body.All {
		return nil, errcode.New(errcode.InvalidArgument, `name a bucket ("bucket") or every bucket ("all": true), not both`)
	}
	j, err := h.encryption.StartEncrypt(r.Context(), body.Bucket)
	if err != nil {
		return nil, err
	}
	return accepted(toEncryptionJobJSON(j)), nil
}

// adminEncryptionJobs lists the jobs, the current KEK, and how many stored data
// keys each KEK version wraps (a version with none may be retired).
func (h *encryptionHandlers) adminEncryptionJobs(r *http.Request, _ auth.Principal) (response, error) {
	js, err := h.encryption.Jobs(r.Context())
	if err != nil {
		return nil, err
	}
	usage, err := h.encryption.KEKUsage(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]encryptionJobJSON, len(js))
	for i, j := range js {
		out[i] = toEncryptionJobJSON(j)
	}
	body := map[string]any{"jobs": out, "kek_usage": usage}
	if cur, err := h.encryption.CurrentKEK(r.Context()); err == nil {
		body["current_kek"] = cur
	}
	return ok(body), nil
}

func (h *encryptionHandlers) adminEncryptionJob(r *http.Request, _ auth.Principal) (response, error) {
	j, err := h.encryption.Job(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	return ok(toEncryptionJobJSON(j)), nil
}

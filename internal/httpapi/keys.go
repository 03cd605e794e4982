package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
)

type keyJSON struct {
	AccessKeyID     string     `json:"access_key_id"`
	SecretAccessKey string     `json:"secret_access_key,omitempty"`
	Name            string     `json:"name"`
	CreatedAt       time.Time  `json:"created_at"`
	LastUsed        *time.Time `json:"last_used,omitempty"`
}

func toKeyJSON(k auth.AccessKey) keyJSON {
	j := keyJSON{AccessKeyID: k.ID, SecretAccessKey: k.Secret, Name: k.Name, CreatedAt: k.CreatedAt}
	if !k.LastUsed.IsZero() {
		t := k.LastUsed
		j.LastUsed = &t
	}
	return j
}

// keyHandlers are the routes of a user's S3 access keys (/api/v1/keys).
type keyHandlers struct {
	jsonDecoder
	accessKeys AccessKeys
}

func (h *keyHandlers) createKey(r *http.Request, p auth.Principal) (response, error) {
	var body struct {
		Name string `json:"name"`
	}
	if r.ContentLength != 0 {
		if err := h.decodeJSON(r, &body); err != nil {
			return nil, err
		}
	}
	k, err := h.accessKeys.CreateAccessKey(r.Context(), p.UserID, body.Name)
	if err != nil {
		return nil, err
	}
	return created(toKeyJSON(k)), nil
}

func (h *keyHandlers) listKeys(r *http.Request, p auth.Principal) (response, error) {
	return keysResponse(r.Context(), h.accessKeys, p.UserID)
}

// keysResponse answers the access keys of user userID (theirs, or an
// administrator's view of them).
func keysResponse(ctx context.Context, accessKeys AccessKeys, userID string) (response, error) {
	keys, err := accessKeys.ListAccessKeys(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]keyJSON, len(keys))
	for i, k := range keys {
		out[i] = toKeyJSON(k)
	}
	return ok(map[string]any{"keys": out}), nil
}

func (h *keyHandlers) deleteKey(r *http.Request, p auth.Principal) (response, error) {
	if err := h.accessKeys.DeleteAccessKey(r.Context(), p.UserID, r.PathValue("id")); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

package httpapi

import (
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

func (api *API) createKey(r *http.Request, p auth.Principal) (response, error) {
	var body struct {
		Name string `json:"name"`
	}
	if r.ContentLength != 0 {
		if err := api.decodeJSON(r, &body); err != nil {
			return nil, err
		}
	}
	k, err := api.accessKeys.CreateAccessKey(r.Context(), p.UserID, body.Name)
	if err != nil {
		return nil, err
	}
	return created(toKeyJSON(k)), nil
}

func (api *API) listKeys(r *http.Request, p auth.Principal) (response, error) {
	keys, err := api.accessKeys.ListAccessKeys(r.Context(), p.UserID)
	if err != nil {
		return nil, err
	}
	out := make([]keyJSON, len(keys))
	for i, k := range keys {
		out[i] = toKeyJSON(k)
	}
	return ok(map[string]any{"keys": out}), nil
}

func (api *API) deleteKey(r *http.Request, p auth.Principal) (response, error) {
	if err := api.accessKeys.DeleteAccessKey(r.Context(), p.UserID, r.PathValue("id")); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

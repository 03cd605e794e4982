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

type keyJSON struct {
	AccessKeyID     string         `json:"access_key_id"`
	SecretAccessKey string         `json:"secret_access_key,omitempty"`
	Name            string         `json:"name"`
	Scope           *meta.KeyScope `json:"scope,omitempty"`
	ExpiresAt       *time.Time     `json:"expires_at,omitempty"`
	Expired         bool           `json:"expired,omitempty"`
	CreatedAt       time.Time      `json:"created_at"`
	LastUsed        *time.Time     `json:"last_used,omitempty"`
}

func toKeyJSON(k auth.AccessKey, now time.Time) keyJSON {
	j := keyJSON{AccessKeyID: k.ID, SecretAccessKey: k.Secret, Name: k.Name, CreatedAt: k.CreatedAt,
		Expired: k.Expired(now)}
	if k.Scope.Scoped() {
		s := k.Scope
		j.Scope = &s
	}
	if !k.ExpiresAt.IsZero() {
		t := k.ExpiresAt
		j.ExpiresAt = &t
	}
	if !k.LastUsed.IsZero() {
		t := k.LastUsed
		j.LastUsed = &t
	}
	return j
}

// keyRequest is the body that creates an access key or an app token.
type keyRequest struct {
	Name  string         `json:"name"`
	Scope *meta.KeyScope `json:"scope"`
	// ExpiresAt (RFC 3339) or ExpiresIn (seconds from now), not both.
	ExpiresAt *time.Time `json:"expires_at"`
	ExpiresIn *int64     `json:"expires_in"`
}

// options checks the request and returns the key's options.
func (b keyRequest) options(now time.Time) (auth.KeyOptions, error) {
	o := auth.KeyOptions{Name: b.Name}
	if b.Scope != nil {
		o.Scope = *b.Scope
		if o.Scope.Bucket != "" {
			if err := object.ValidBucketName(o.Scope.Bucket); err != nil {
				return o, errcode.New(errcode.InvalidArgument, "scope.bucket: %s", errcode.As(err).Message)
			}
		}
	}
	switch {
	case b.ExpiresAt != nil && b.ExpiresIn != nil:
		return o, errcode.New(errcode.InvalidArgument, "give expires_at or expires_in, not both")
	case b.ExpiresAt != nil:
		o.ExpiresAt = *b.ExpiresAt
	case b.ExpiresIn != nil:
		if *b.ExpiresIn <= 0 || *b.ExpiresIn > maxExpiresIn {
			return o, errcode.New(errcode.InvalidArgument, "expires_in must be between 1 and %d seconds", int64(maxExpiresIn))
		}
		o.ExpiresAt = now.Add(time.Duration(*b.ExpiresIn) * time.Second)
	}
	return o, nil
}

// maxExpiresIn bounds expires_in (100 years, in seconds): a larger value
// would overflow a time.Duration.
const maxExpiresIn = 100 * 365 * 24 * 3600

// keyHandlers are the routes of a user's S3 access keys (/api/v1/keys).
type keyHandlers struct {
	jsonDecoder
	accessKeys AccessKeys
}

// decodeKeyRequest reads a key or app token request (an empty body: an
// unscoped key without a name).
func (h *keyHandlers) decodeKeyRequest(r *http.Request) (auth.KeyOptions, error) {
	var body keyRequest
	if r.ContentLength != 0 {
		if err := h.decodeJSON(r, &body); err != nil {
			return auth.KeyOptions{}, err
		}
	}
	return body.options(time.Now())
}

func (h *keyHandlers) createKey(r *http.Request, p auth.Principal) (response, error) {
	return createWith(h, r, p, h.accessKeys.CreateAccessKey, toKeyJSON)
}

// createWith answers the creation of a key or app token: the request's
// options, create, the result as view shows it.
func createWith[T any](h *keyHandlers, r *http.Request, p auth.Principal,
	create func(ctx context.Context, userID string, o auth.KeyOptions) (auth.AccessKey, error),
	view func(auth.AccessKey, time.Time) T) (response, error) {
	o, err := h.decodeKeyRequest(r)
	if err != nil {
		return nil, err
	}
	k, err := create(r.Context(), p.UserID, o)
	if err != nil {
		return nil, err
	}
	return created(view(k, time.Now())), nil
}

func (h *keyHandlers) listKeys(r *http.Request, p auth.Principal) (response, error) {
	return keysResponse(r.Context(), h.accessKeys, p.UserID, time.Now())
}

// keysResponse answers the access keys of user userID (theirs, or an
// administrator's view of them).
func keysResponse(ctx context.Context, accessKeys AccessKeys, userID string, now time.Time) (response, error) {
	keys, err := accessKeys.ListAccessKeys(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]keyJSON, len(keys))
	for i, k := range keys {
		out[i] = toKeyJSON(k, now)
	}
	return ok(map[string]any{"keys": out}), nil
}

func (h *keyHandlers) deleteKey(r *http.Request, p auth.Principal) (response, error) {
	if err := h.accessKeys.DeleteAccessKey(r.Context(), p.UserID, r.PathValue("id")); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

// tokenJSON is an app token as its owner sees it; Token only in the
// answer that created it.
type tokenJSON struct {
	ID        string         `json:"id"`
	Token     string         `json:"token,omitempty"`
	Name      string         `json:"name"`
	Scope     *meta.KeyScope `json:"scope,omitempty"`
	ExpiresAt *time.Time     `json:"expires_at,omitempty"`
	Expired   bool           `json:"expired,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	LastUsed  *time.Time     `json:"last_used,omitempty"`
}

func toTokenJSON(k auth.AccessKey, now time.Time) tokenJSON {
	j := toKeyJSON(k, now)
	return tokenJSON{ID: j.AccessKeyID, Token: j.SecretAccessKey, Name: j.Name, Scope: j.Scope, ExpiresAt: j.ExpiresAt,
		Expired: j.Expired, CreatedAt: j.CreatedAt, LastUsed: j.LastUsed}
}

func (h *keyHandlers) createToken(r *http.Request, p auth.Principal) (response, error) {
	return createWith(h, r, p, h.accessKeys.CreateAppToken, toTokenJSON)
}

func (h *keyHandlers) listTokens(r *http.Request, p auth.Principal) (response, error) {
	tokens, err := h.accessKeys.ListAppTokens(r.Context(), p.UserID)
	if err != nil {
		return nil, err
	}
	out := make([]tokenJSON, len(tokens))
	for i, k := range tokens {
		out[i] = toTokenJSON(k, time.Now())
	}
	return ok(map[string]any{"tokens": out}), nil
}

func (h *keyHandlers) deleteToken(r *http.Request, p auth.Principal) (response, error) {
	if err := h.accessKeys.DeleteAppToken(r.Context(), p.UserID, r.PathValue("id")); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

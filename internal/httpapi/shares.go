package httpapi

import (
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// Share links: the owner's API under /api/v1/shares (here), and anonymous
// access under /s/{token} (links.go; see docs/api.md#share-links). Everything a
// link reaches goes through object.ShareKey, which confines it to the
// share; nothing a link answers names the owner, the bucket or any key
// outside the share.

type shareJSON struct {
	ID           string     `json:"id"`
	Bucket       string     `json:"bucket"`
	Key          string     `json:"key,omitempty"`
	Prefix       *string    `json:"prefix,omitempty"`
	Folder       bool       `json:"folder"`
	Password     bool       `json:"password"`
	Note         string     `json:"note,omitempty"`
	AllowUpload  bool       `json:"allow_upload"`
	MaxDownloads int64      `json:"max_downloads"`
	Downloads    int64      `json:"downloads"`
	CreatedAt    time.Time  `json:"created_at"`
	ExpiresAt    time.Time  `json:"expires_at"`
	LastAccess   *time.Time `json:"last_access,omitempty"`
	State        string     `json:"state"`
	Grant        bool       `json:"grant,omitempty"`
	Token        string     `json:"token,omitempty"`
	URL          string     `json:"url,omitempty"`
}

func toShareJSON(sh meta.Share, now time.Time) shareJSON {
	j := shareJSON{
		ID: sh.ID, Bucket: sh.Bucket, Folder: sh.Folder, Password: sh.Password != "", Note: sh.Note,
		AllowUpload: sh.AllowUpload, MaxDownloads: sh.MaxDownloads, Downloads: sh.Downloads,
		CreatedAt: sh.CreatedAt, ExpiresAt: sh.ExpiresAt, State: sh.State(now), Grant: sh.Grant,
	}
	if sh.Folder {
		p := sh.Key
		j.Prefix = &p
	} else {
		j.Key = sh.Key
	}
	if !sh.LastAccess.IsZero() {
		la := sh.LastAccess
		j.LastAccess = &la
	}
	return j
}

// shareHandlers are the owner's routes of share links (/api/v1/shares).
type shareHandlers struct {
	jsonDecoder
	shares        Shares
	buckets       Buckets   // a password-protected link's bucket, checked before hashing
	shareAuth     ShareAuth // link passwords
	defaultExpiry time.Duration
	maxExpiry     time.Duration
}

type createShareBody struct {
	Bucket       string     `json:"bucket"`
	Key          *string    `json:"key"`
	Prefix       *string    `json:"prefix"`
	ExpiresIn    *int64     `json:"expires_in"` // seconds
	ExpiresAt    *time.Time `json:"expires_at"`
	Password     string     `json:"password"`
	MaxDownloads int64      `json:"max_downloads"`
	AllowUpload  bool       `json:"allow_upload"`
	Note         string     `json:"note"`
	Grant        bool       `json:"grant"`
}

// shareExpiry resolves expires_in/expires_at against the default and the
// maximum.
func (h *shareHandlers) shareExpiry(in *int64, at *time.Time, now time.Time) (time.Time, error) {
	switch {
	case in != nil && at != nil:
		return time.Time{}, errcode.New(errcode.InvalidArgument, "give expires_in or expires_at, not both")
	case in != nil:
		if *in <= 0 {
			return time.Time{}, errcode.New(errcode.InvalidArgument, "expires_in must be positive")
		}
		if *in > int64(h.maxExpiry/time.Second) {
			return time.Time{}, h.expiryTooLong()
		}
		return now.Add(time.Duration(*in) * time.Second), nil
	case at != nil:
		if !at.After(now) {
			return time.Time{}, errcode.New(errcode.InvalidArgument, "expires_at must be in the future")
		}
		if at.Sub(now) > h.maxExpiry {
			return time.Time{}, h.expiryTooLong()
		}
		return *at, nil
	}
	return now.Add(min(h.defaultExpiry, h.maxExpiry)), nil
}

func (h *shareHandlers) expiryTooLong() error {
	return errcode.New(errcode.InvalidArgument, "a share link expires within %s at most (--share-max-expiry)", h.maxExpiry)
}

func (h *shareHandlers) createShare(r *http.Request, p auth.Principal) (response, error) {
	var b createShareBody
	if err := h.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	if (b.Key == nil) == (b.Prefix == nil) {
		return nil, errcode.New(errcode.InvalidArgument, "give key (a file) or prefix (a folder), exactly one")
	}
	now := time.Now()
	exp, err := h.shareExpiry(b.ExpiresIn, b.ExpiresAt, now)
	if err != nil {
		return nil, err
	}
	if !utf8.ValidString(b.Note) {
		return nil, errcode.New(errcode.InvalidArgument, "note must be valid UTF-8")
	}
	ns := object.NewShare{Bucket: b.Bucket, Note: b.Note, AllowUpload: b.AllowUpload, MaxDownloads: b.MaxDownloads, ExpiresAt: exp, Grant: b.Grant}
	if b.Key != nil {
		ns.Key = *b.Key
	} else {
		ns.Key, ns.Folder = *b.Prefix, true
	}
	if b.Password != "" {
		if len(b.Password) > 256 {
			return nil, errcode.New(errcode.InvalidArgument, "password is longer than 256 bytes")
		}
		// Checked before hashing, so a bad request costs no argon2id.
		if _, err := h.buckets.GetBucket(r.Context(), actor(r, p), b.Bucket); err != nil {
			return nil, err
		}
		ns.PasswordHash, err = h.shareAuth.HashPassword(r.Context(), b.Password)
		if err != nil {
			return nil, err
		}
	}
	sh, token, err := h.shares.CreateShare(r.Context(), actor(r, p), ns)
	if err != nil {
		return nil, err
	}
	j := toShareJSON(sh, now)
	j.Token, j.URL = token, "/s/"+token
	return created(j), nil
}

func (h *shareHandlers) listShares(r *http.Request, p auth.Principal) (response, error) {
	grants, err := boolParam(r, "grants")
	if err != nil {
		return nil, err
	}
	shs, err := h.shares.ListShares(r.Context(), actor(r, p), grants)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]shareJSON, len(shs))
	for i, sh := range shs {
		out[i] = toShareJSON(sh, now)
	}
	return ok(map[string]any{"shares": out}), nil
}

func (h *shareHandlers) getShare(r *http.Request, p auth.Principal) (response, error) {
	sh, err := h.shares.GetShare(r.Context(), actor(r, p), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return ok(toShareJSON(sh, time.Now())), nil
}

func (h *shareHandlers) patchShare(r *http.Request, p auth.Principal) (response, error) {
	var b struct {
		ExpiresIn *int64     `json:"expires_in"`
		ExpiresAt *time.Time `json:"expires_at"`
	}
	if err := h.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	if b.ExpiresIn == nil && b.ExpiresAt == nil {
		return nil, errcode.New(errcode.InvalidArgument, "nothing to change: give expires_in or expires_at")
	}
	now := time.Now()
	exp, err := h.shareExpiry(b.ExpiresIn, b.ExpiresAt, now)
	if err != nil {
		return nil, err
	}
	sh, err := h.shares.SetShareExpiry(r.Context(), actor(r, p), r.PathValue("id"), exp)
	if err != nil {
		return nil, err
	}
	return ok(toShareJSON(sh, now)), nil
}

// revokeShare is DELETE /shares/{id}: an active link is revoked (and
// stays listed, revoked); a link that no longer works, and any download
// grant, is removed.
func (h *shareHandlers) revokeShare(r *http.Request, p auth.Principal) (response, error) {
	if _, err := h.shares.DeleteShare(r.Context(), actor(r, p), r.PathValue("id"), time.Now()); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

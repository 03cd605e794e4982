package httpapi

import (
	"net/http"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// inviteJSON is an invite as the admin API shows it. Code is present only
// in the answer that created it.
type inviteJSON struct {
	ID        string    `json:"id"`
	Code      string    `json:"code,omitempty"`
	Email     string    `json:"email,omitempty"`
	Uses      int       `json:"uses"`
	UsesLeft  int       `json:"uses_left"`
	CreatedBy string    `json:"created_by,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Revoked   bool      `json:"revoked"`
	// State summarises the above: "active", "used_up", "expired" or
	// "revoked".
	State string `json:"state"`
}

func toInviteJSON(inv meta.Invite, code string, now time.Time) inviteJSON {
	return inviteJSON{
		ID: inv.ID, Code: code, Email: inv.Email, Uses: inv.Uses, UsesLeft: inv.UsesLeft,
		CreatedBy: inv.CreatedBy, CreatedAt: inv.CreatedAt, ExpiresAt: inv.ExpiresAt, Revoked: inv.Revoked,
		State: inv.State(now),
	}
}

type createInviteBody struct {
	Email string `json:"email"`
	// ExpiresIn is the lifetime in seconds (default 7 days).
	ExpiresIn int64 `json:"expires_in"`
	Uses      int   `json:"uses"`
}

func (h *adminHandlers) createInvite(r *http.Request, p auth.Principal) (response, error) {
	var body createInviteBody
	if err := h.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	if body.ExpiresIn < 0 || body.ExpiresIn > int64(auth.MaxInviteTTL/time.Second) {
		return nil, errcode.New(errcode.InvalidArgument, "expires_in must be 0 (the default: 7 days) to %d seconds", int64(auth.MaxInviteTTL/time.Second))
	}
	inv, code, err := h.userAdmin.CreateInvite(r.Context(), auth.InviteRequest{
		Email: body.Email, TTL: time.Duration(body.ExpiresIn) * time.Second, Uses: body.Uses, CreatedBy: p.UserID,
	})
	if err != nil {
		return nil, err
	}
	return created(toInviteJSON(inv, code, time.Now())), nil
}

func (h *adminHandlers) listInvites(r *http.Request, _ auth.Principal) (response, error) {
	invs, err := h.userAdmin.ListInvites(r.Context())
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]inviteJSON, 0, len(invs))
	for _, inv := range invs {
		out = append(out, toInviteJSON(inv, "", now))
	}
	return ok(map[string]any{"invites": out}), nil
}

func (h *adminHandlers) revokeInvite(r *http.Request, _ auth.Principal) (response, error) {
	if err := h.userAdmin.RevokeInvite(r.Context(), r.PathValue("id")); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

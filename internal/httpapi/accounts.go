package httpapi

import (
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/meta"
)

type userJSON struct {
	ID         string    `json:"id"`
	Email      string    `json:"email"`
	QuotaBytes int64     `json:"quota_bytes"`
	UsageBytes int64     `json:"usage_bytes"`
	Admin      bool      `json:"admin"`
	CreatedAt  time.Time `json:"created_at"`
}

func toUserJSON(u meta.User) userJSON {
	return userJSON{ID: u.ID, Email: u.Email, QuotaBytes: u.QuotaBytes, UsageBytes: u.UsageBytes, Admin: u.Admin, CreatedAt: u.CreatedAt}
}

// sessionHandlers are the routes of sessions (signup, login, refresh,
// resume, logout) and of the signed-in account (/api/v1/me).
type sessionHandlers struct {
	jsonDecoder
	accounts Accounts
	uploads  Uploads        // a deleted account's direct uploads at the backend
	proxies  []netip.Prefix // Config.TrustedProxies: the client's address
}

type credentials struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

type signupBody struct {
	Email      string `json:"email"`
	Password   string `json:"password"`
	InviteCode string `json:"invite_code"`
}

func (h *sessionHandlers) signup(r *http.Request, _ auth.Principal) (response, error) {
	var c signupBody
	if err := h.decodeJSON(r, &c); err != nil {
		return nil, err
	}
	u, b, err := h.accounts.SelfSignup(r.Context(), auth.SignupRequest{
		Email: c.Email, Password: c.Password, InviteCode: c.InviteCode,
		ClientIP: httpx.ClientIP(r, h.proxies).String(),
	})
	if err != nil {
		return nil, err
	}
	return created(map[string]any{"user": toUserJSON(u), "bucket": toBucketJSON(b)}), nil
}

type sessionJSON struct {
	AccessToken      string `json:"access_token"`
	TokenType        string `json:"token_type"`
	ExpiresIn        int    `json:"expires_in"`
	RefreshToken     string `json:"refresh_token"`
	RefreshExpiresIn int    `json:"refresh_expires_in"`
	UserID           string `json:"user_id"`
}

func toSessionJSON(s auth.Session) sessionJSON {
	return sessionJSON{
		AccessToken: s.AccessToken, TokenType: "Bearer", ExpiresIn: int(s.ExpiresIn.Seconds()),
		RefreshToken: s.RefreshToken, RefreshExpiresIn: int(s.RefreshTTL.Seconds()), UserID: s.UserID,
	}
}

func (h *sessionHandlers) login(r *http.Request, _ auth.Principal) (response, error) {
	var c credentials
	if err := h.decodeJSON(r, &c); err != nil {
		return nil, err
	}
	ip := httpx.ClientIP(r, h.proxies)
	s, err := h.accounts.Login(r.Context(), c.Email, c.Password, ip.String())
	if err != nil {
		return nil, err
	}
	return sessionResponse(r, s), nil
}

// Cookie sessions (for browsers, e.g. the web console): a request with
// the header X-Coffer-Session: cookie gets its refresh token in an
// HttpOnly, SameSite=Strict cookie scoped to /api/v1/auth instead of the
// JSON body, and refresh and logout take it from that cookie. The cookie
// is read only when the header is present, and no other route reads it:
// a cross-site page can neither set the header without a CORS preflight
// (which the API never grants) nor send the cookie (SameSite=Strict), and
// it authorises nothing but a refresh. See docs/console.md.
const (
	sessionHeader = "X-Coffer-Session"
	refreshCookie = "coffer_refresh"
	refreshPath   = "/api/v1/auth"
)

// wantsCookie reports whether r asks for a cookie session.
func wantsCookie(r *http.Request) bool {
	return strings.EqualFold(strings.TrimSpace(r.Header.Get(sessionHeader)), "cookie")
}

// sessionResponse answers a new session: in the body, or, for a cookie
// session, with the refresh token in the cookie and "" in the body.
func sessionResponse(r *http.Request, s auth.Session) response {
	body, h := sessionBody(r, s)
	return jsonResponse{status: http.StatusOK, body: body, header: h}
}

// sessionBody is the body and headers of sessionResponse.
func sessionBody(r *http.Request, s auth.Session) (sessionJSON, http.Header) {
	body := toSessionJSON(s)
	if !wantsCookie(r) {
		return body, nil
	}
	c := &http.Cookie{Name: refreshCookie, Value: s.RefreshToken, Path: refreshPath,
		MaxAge: int(s.RefreshTTL.Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	body.RefreshToken = ""
	return body, http.Header{"Set-Cookie": {c.String()}}
}

// clearCookie is the Set-Cookie header that removes the refresh cookie.
func clearCookie(r *http.Request) http.Header {
	c := &http.Cookie{Name: refreshCookie, Value: "", Path: refreshPath, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	return http.Header{"Set-Cookie": {c.String()}}
}

type refreshBody struct {
	RefreshToken string `json:"refresh_token"`
}

// refreshToken is the refresh token r presents: the body's, or, for a
// cookie session with none in the body, the cookie's.
func refreshToken(r *http.Request, b refreshBody) string {
	if b.RefreshToken != "" || !wantsCookie(r) {
		return b.RefreshToken
	}
	if c, err := r.Cookie(refreshCookie); err == nil {
		return c.Value
	}
	return ""
}

func (h *sessionHandlers) refresh(r *http.Request, _ auth.Principal) (response, error) {
	var b refreshBody
	if err := h.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	s, err := h.accounts.Refresh(r.Context(), refreshToken(r, b))
	if err != nil {
		return nil, err
	}
	return sessionResponse(r, s), nil
}

// resume is POST /auth/resume, for cookie sessions only: it continues the
// browser's session if its refresh cookie still holds one (a refresh:
// the cookie rotates, the answer is the new session with "signed_in":
// true), and otherwise answers 200 {"signed_in": false} (no cookie, or a
// cookie whose session ended: expired, revoked, reused; the cookie is
// then cleared). A console starting up asks this instead of refresh, so
// a visitor who is not signed in is an expected state, not an error.
func (h *sessionHandlers) resume(r *http.Request, _ auth.Principal) (response, error) {
	if !wantsCookie(r) {
		return nil, errcode.New(errcode.InvalidArgument, "resume is for cookie sessions: send %s: cookie", sessionHeader)
	}
	var b struct{}
	if err := h.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	c, err := r.Cookie(refreshCookie)
	if err != nil || c.Value == "" {
		return ok(map[string]any{"signed_in": false}), nil
	}
	s, err := h.accounts.Refresh(r.Context(), c.Value)
	if errcode.Is(err, errcode.Unauthenticated) {
		return jsonResponse{status: http.StatusOK, body: map[string]any{"signed_in": false}, header: clearCookie(r)}, nil
	}
	if err != nil {
		return nil, err
	}
	body, hdr := sessionBody(r, s)
	return jsonResponse{status: http.StatusOK, body: resumedJSON{sessionJSON: body, SignedIn: true}, header: hdr}, nil
}

// resumedJSON is a session resumed by POST /auth/resume.
type resumedJSON struct {
	sessionJSON
	SignedIn bool `json:"signed_in"`
}

func (h *sessionHandlers) logout(r *http.Request, _ auth.Principal) (response, error) {
	var b refreshBody
	if err := h.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	if err := h.accounts.Logout(r.Context(), refreshToken(r, b)); err != nil {
		return nil, err
	}
	if wantsCookie(r) {
		return jsonResponse{status: http.StatusNoContent, header: clearCookie(r)}, nil
	}
	return noContent{}, nil
}

func (h *sessionHandlers) me(r *http.Request, p auth.Principal) (response, error) {
	u, err := h.accounts.User(r.Context(), p.UserID)
	if err != nil {
		return nil, err
	}
	return ok(toUserJSON(u)), nil
}

// ---- self-service ----

func (h *sessionHandlers) changePassword(r *http.Request, p auth.Principal) (response, error) {
	var body struct {
		OldPassword string `json:"old_password"`
		NewPassword string `json:"new_password"`
	}
	if err := h.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	s, err := h.accounts.ChangePassword(r.Context(), p.UserID, body.OldPassword, body.NewPassword, httpx.ClientIP(r, h.proxies).String())
	if err != nil {
		return nil, err
	}
	return sessionResponse(r, s), nil
}

func (h *sessionHandlers) deleteMe(r *http.Request, p auth.Principal) (response, error) {
	var body struct {
		Password string `json:"password"`
		Purge    bool   `json:"purge"`
	}
	if err := h.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	res, err := h.accounts.DeleteAccount(r.Context(), p.UserID, body.Password, body.Purge, httpx.ClientIP(r, h.proxies).String())
	if err != nil {
		return nil, err
	}
	h.uploads.AbortBackendUploads(r.Context(), res.BackendUploads)
	return noContent{}, nil
}

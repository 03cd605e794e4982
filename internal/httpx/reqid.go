package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/netip"
	"strings"

	"github.com/coffer-storage/coffer/internal/ratelimit"
)

type ctxKey int

const (
	reqIDKey ctxKey = iota
	userKey
)

// RequestID returns the request's ID, or "".
func RequestID(ctx context.Context) string {
	s, _ := ctx.Value(reqIDKey).(string)
	return s
}

// WithRequestID returns ctx carrying id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, reqIDKey, id)
}

// NewRequestID returns a random 16-hex-digit ID.
func NewRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// validRequestID accepts client IDs that are short and printable.
func validRequestID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// RequestIDMiddleware gives each request an ID (the client's X-Request-Id
// if it is sane, else a fresh one), echoes it in X-Request-Id and stores it
// in the context.
func RequestIDMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = NewRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(WithRequestID(r.Context(), id)))
	})
}

// Slot is a mutable holder that inner handlers fill so that outer
// middleware (metrics, access log) can report the matched route and the
// authenticated user.
type Slot struct {
	Route string
	User  string
	Share string // the share link's ID, for requests through /s/
	// limit charges the request to an identity (see Limit).
	limit func(d ratelimit.Dimension, key string) error
}

// SetLimiter installs the function Limit calls for this request (the
// listener's guard does, with its quotas and response headers).
func SetLimiter(ctx context.Context, f func(d ratelimit.Dimension, key string) error) {
	if s, ok := ctx.Value(userKey).(*Slot); ok {
		s.limit = f
	}
}

// Limit charges the request to the identity (d, key) once the API has
// authenticated it, and returns RateLimited (with RetryAfter) if that
// identity is over its quota; the API returns that error as its response.
// nil when no limiter is installed.
func Limit(ctx context.Context, d ratelimit.Dimension, key string) error {
	if s, ok := ctx.Value(userKey).(*Slot); ok && s.limit != nil {
		return s.limit(d, key)
	}
	return nil
}

// WithSlot returns ctx carrying a fresh Slot.
func WithSlot(ctx context.Context) (context.Context, *Slot) {
	s := &Slot{}
	return context.WithValue(ctx, userKey, s), s
}

// SetUser records the authenticated user.
func SetUser(ctx context.Context, id string) {
	if s, ok := ctx.Value(userKey).(*Slot); ok {
		s.User = id
	}
}

// SetShare records the share link a request goes through.
func SetShare(ctx context.Context, id string) {
	if s, ok := ctx.Value(userKey).(*Slot); ok {
		s.Share = id
	}
}

// SetRoute records the matched route (a low-cardinality label).
func SetRoute(ctx context.Context, route string) {
	if s, ok := ctx.Value(userKey).(*Slot); ok {
		s.Route = route
	}
}

// ClientIP returns the client's address: the TCP peer, unless the peer is a
// trusted proxy, in which case the right-most address in X-Forwarded-For
// that is not itself a trusted proxy.
func ClientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer, _ := netip.ParseAddrPort(r.RemoteAddr)
	addr := peer.Addr().Unmap()
	if !isTrusted(addr, trusted) {
		return addr
	}
	addr, _ = forwarded(r, addr, trusted)
	return addr
}

// ForwardedClient returns the client a trusted proxy names in
// X-Forwarded-For (as ClientIP takes it), with ok false when the peer is
// not a trusted proxy, names no one, or sends a hop that does not parse.
func ForwardedClient(r *http.Request, trusted []netip.Prefix) (netip.Addr, bool) {
	peer, _ := netip.ParseAddrPort(r.RemoteAddr)
	addr := peer.Addr().Unmap()
	if !isTrusted(addr, trusted) {
		return netip.Addr{}, false
	}
	return forwarded(r, addr, trusted)
}

// forwarded walks the X-Forwarded-For hops of a request from the trusted
// proxy peer, right to left, to the first one that is not a trusted proxy
// (or the left-most). ok is false if there is no hop or one does not
// parse; addr is then the last address that did (peer, or a trusted hop).
func forwarded(r *http.Request, peer netip.Addr, trusted []netip.Prefix) (addr netip.Addr, ok bool) {
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	addr = peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return addr, false
		}
		a = a.Unmap()
		if !isTrusted(a, trusted) {
			return a, true
		}
		addr = a
	}
	return addr, len(hops) > 0
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Kind describes a request to the guards every listener shares (admission,
// request timeout); each API classifies its own requests.
type Kind struct {
	// Route names the operation (a low-cardinality metric label).
	Route string
	// Class is the admission class.
	Class ratelimit.Class
	// Streams is true for requests that move object bytes: they are exempt
	// from the request timeout (minimum transfer rates and the write-idle
	// deadline bound them instead).
	Streams bool
	// Credentials is true when the request carries credentials (verified
	// later, by the API): it gets the larger per-client share.
	Credentials bool
	// Probe marks health and readiness checks, which are never shed.
	Probe bool
	// Share is set on anonymous requests through a share link (/s/): a
	// stable key of the link ("share:" and 16 hex digits of its token's
	// SHA-256), known without a metadata lookup, for limits per link.
	Share string
}

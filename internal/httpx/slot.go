package httpx

import (
	"context"
	"encoding/hex"
	"net/netip"

	"github.com/coffer-storage/coffer/internal/ratelimit"
)

// Slot is a mutable holder that inner handlers fill so that outer
// middleware (metrics, access log) can report the matched route and the
// authenticated user.
type Slot struct {
	Route string
	User  string
	Share string // the share link's ID, for requests through /s/
	// Key is the access key or app token the request was signed with
	// (SetKey), Client its client address (SetClient), Admin whether it
	// passed the admin check (SetAdmin): what the audit log names.
	Key    string
	Client netip.Addr
	Admin  bool
	// Trace is the request's trace ID when tracing is on (zero when it
	// is off), for error responses (TraceID): kept as bytes, written in
	// hex only by the responses that show it.
	Trace [16]byte
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

// SetKey records the access key or app token a request presented.
func SetKey(ctx context.Context, id string) {
	if s, ok := ctx.Value(userKey).(*Slot); ok {
		s.Key = id
	}
}

// SetClient records the request's client address (behind trusted
// proxies, the forwarded one).
func SetClient(ctx context.Context, a netip.Addr) {
	if s, ok := ctx.Value(userKey).(*Slot); ok {
		s.Client = a
	}
}

// SetAdmin records that the request passed the admin check.
func SetAdmin(ctx context.Context) {
	if s, ok := ctx.Value(userKey).(*Slot); ok {
		s.Admin = true
	}
}

// SlotOf returns the request's Slot, or nil outside a request.
func SlotOf(ctx context.Context) *Slot {
	s, _ := ctx.Value(userKey).(*Slot)
	return s
}

// TraceID returns the request's trace ID ("" unless tracing is on): the
// error writers put it next to the request ID.
func TraceID(ctx context.Context) string {
	if s, ok := ctx.Value(userKey).(*Slot); ok && s.Trace != [16]byte{} {
		return hex.EncodeToString(s.Trace[:])
	}
	return ""
}

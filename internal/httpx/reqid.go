package httpx

import (
	"context"
	"crypto/rand"
	"net/http"
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

// NewRequestID returns a random 16-hex-digit ID (upper case), in one
// allocation.
func NewRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	const digits = "0123456789ABCDEF"
	var out [16]byte
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out[:])
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
		id := SetRequestID(w, r)
		next.ServeHTTP(w, r.WithContext(WithRequestID(r.Context(), id)))
	})
}

// SetRequestID returns the ID r gets (the client's X-Request-Id if it is
// sane, else a fresh one) and echoes it in w's X-Request-Id: what
// RequestIDMiddleware does before it stores the ID in the context, for
// middleware that makes the request's context itself.
func SetRequestID(w http.ResponseWriter, r *http.Request) string {
	id := r.Header.Get("X-Request-Id")
	if !validRequestID(id) {
		id = NewRequestID()
	}
	w.Header()["X-Request-Id"] = []string{id}
	return id
}

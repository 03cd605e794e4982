// Package errcode is the closed set of error codes every layer of Coffer
// speaks. Backends classify their failures into these codes; callers never
// parse driver or SDK errors. Each wire format (problem+json for the file API,
// S3 XML for the S3 API) translates codes in exactly one table.
//
// errcode imports nothing else from Coffer.
package errcode

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Code classifies an error. The zero value is Unknown.
type Code int

// The codes. Keep this list closed: add a code only with a row in every
// translation table (internal/httpapi/problem.go, internal/s3api/s3err).
const (
	Unknown             Code = iota // unclassified; becomes 500 and is logged
	Internal                        // a bug or broken invariant; 500
	InvalidArgument                 // the request is malformed or a value is out of range
	NotFound                        // the named thing does not exist
	AlreadyExists                   // a create-only operation found the thing present
	Conflict                        // the operation conflicts with current state (non-empty bucket, ...)
	PreconditionFailed              // If-Match / If-None-Match / If-Unmodified-Since failed
	NotModified                     // conditional GET: the client's copy is current
	RangeNotSatisfiable             // Range outside the object
	Unauthenticated                 // no or invalid credentials
	PermissionDenied                // authenticated but not allowed
	TooLarge                        // a body or value exceeds a configured limit
	QuotaExceeded                   // the owner's storage quota would be exceeded
	ChecksumMismatch                // a client-supplied digest does not match the bytes received
	IncompleteBody                  // fewer bytes arrived than announced
	RateLimited                     // too many requests from this client; retry after a while
	Unavailable                     // overloaded or a dependency is down; retry after a while
	Timeout                         // the client was too slow or the deadline passed
	Canceled                        // the client went away
	NotImplemented                  // a valid request for a feature Coffer does not have
	MethodNotAllowed                // the resource exists but does not support the method
	StorageFull                     // the server's own storage (disk, metadata database) has no room left; nothing was stored
)

var names = [...]string{
	Unknown:             "unknown",
	Internal:            "internal",
	InvalidArgument:     "invalid_argument",
	NotFound:            "not_found",
	AlreadyExists:       "already_exists",
	Conflict:            "conflict",
	PreconditionFailed:  "precondition_failed",
	NotModified:         "not_modified",
	RangeNotSatisfiable: "range_not_satisfiable",
	Unauthenticated:     "unauthenticated",
	PermissionDenied:    "permission_denied",
	TooLarge:            "too_large",
	QuotaExceeded:       "quota_exceeded",
	ChecksumMismatch:    "checksum_mismatch",
	IncompleteBody:      "incomplete_body",
	RateLimited:         "rate_limited",
	Unavailable:         "unavailable",
	Timeout:             "timeout",
	Canceled:            "canceled",
	NotImplemented:      "not_implemented",
	MethodNotAllowed:    "method_not_allowed",
	StorageFull:         "storage_full",
}

// All lists every code, for tables that must cover them all.
func All() []Code {
	out := make([]Code, 0, len(names))
	for c := range names {
		out = append(out, Code(c))
	}
	return out
}

func (c Code) String() string {
	if c >= 0 && int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("code(%d)", int(c))
}

// Error is an error with a code. Message is safe to show to clients; Err is
// the cause, kept for logs and errors.Is/As, never shown to clients.
type Error struct {
	Code    Code
	Message string
	Err     error
	// RetryAfter, when positive, is sent as Retry-After with 429/503.
	RetryAfter time.Duration
	// Detail carries structured extras for the wire (e.g. "want"/"got" of a
	// checksum mismatch, the offending field). Optional.
	Detail map[string]any
}

func (e *Error) Error() string {
	switch {
	case e.Err != nil && e.Message != "":
		return e.Message + ": " + e.Err.Error()
	case e.Err != nil:
		return e.Code.String() + ": " + e.Err.Error()
	case e.Message != "":
		return e.Message
	}
	return e.Code.String()
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error with code c and a client-safe message.
func New(c Code, format string, args ...any) error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an error with code c, a client-safe message and cause err.
func Wrap(c Code, err error, format string, args ...any) error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...), Err: err}
}

// Retry returns an Unavailable or RateLimited error asking the client to
// come back after d.
func Retry(c Code, d time.Duration, format string, args ...any) error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...), RetryAfter: d}
}

// Of returns the code of err: the code of the first *Error in its chain,
// Canceled/Timeout for context errors, Unknown otherwise, and 0 (Unknown)
// for nil.
func Of(err error) Code {
	if err == nil {
		return Unknown
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return Timeout
	}
	return Unknown
}

// Is reports whether err carries code c.
func Is(err error, c Code) bool { return err != nil && Of(err) == c }

// As returns the first *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// Message returns the client-safe message of err, or the code name.
func Message(err error) string {
	if e := As(err); e != nil && e.Message != "" {
		return e.Message
	}
	return Of(err).String()
}

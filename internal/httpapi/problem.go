package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpx"
)

// statusOf is the file API's single translation table from error codes to
// HTTP statuses. docs/errors.md documents it; TestStatusTableComplete keeps
// it total.
var statusOf = map[errcode.Code]int{
	errcode.Unknown:             http.StatusInternalServerError,
	errcode.Internal:            http.StatusInternalServerError,
	errcode.InvalidArgument:     http.StatusBadRequest,
	errcode.NotFound:            http.StatusNotFound,
	errcode.AlreadyExists:       http.StatusConflict,
	errcode.Conflict:            http.StatusConflict,
	errcode.PreconditionFailed:  http.StatusPreconditionFailed,
	errcode.NotModified:         http.StatusNotModified,
	errcode.RangeNotSatisfiable: http.StatusRequestedRangeNotSatisfiable,
	errcode.Unauthenticated:     http.StatusUnauthorized,
	errcode.PermissionDenied:    http.StatusForbidden,
	errcode.TooLarge:            http.StatusRequestEntityTooLarge,
	errcode.QuotaExceeded:       http.StatusInsufficientStorage,
	errcode.ChecksumMismatch:    http.StatusBadRequest,
	errcode.IncompleteBody:      http.StatusBadRequest,
	errcode.RateLimited:         http.StatusTooManyRequests,
	errcode.Unavailable:         http.StatusServiceUnavailable,
	errcode.Timeout:             http.StatusRequestTimeout,
	errcode.Canceled:            499, // client closed the request; never seen by it
	errcode.NotImplemented:      http.StatusNotImplemented,
	errcode.MethodNotAllowed:    http.StatusMethodNotAllowed,
	errcode.StorageFull:         http.StatusInsufficientStorage,
}

// refinedTypes are the problems with a type of their own: an error whose
// code is the key's and whose Detail["reason"] is listed gets the type
// ErrorTypeBase+reason instead of ErrorTypeBase+code (its "code" stays the
// errcode's, and extra.reason names the refinement). docs/errors.md has an
// anchor for each; TestRefinedTypesDocumented checks it.
var refinedTypes = map[errcode.Code][]string{
	errcode.PermissionDenied: {"signup_closed", "invite_required", "invite_invalid"},
	errcode.NotFound:         {"share_unavailable"},
	errcode.Unauthenticated:  {"share_locked"},
	errcode.TooLarge:         {"zip_too_large"},
}

// problemType is the "type" URI of err, whose code is code.
func problemType(code errcode.Code, err error) string {
	if e := errcode.As(err); e != nil {
		if reason, ok := e.Detail["reason"].(string); ok && slices.Contains(refinedTypes[code], reason) {
			return ErrorTypeBase + reason
		}
	}
	return ErrorTypeBase + code.String()
}

// ErrorTypeBase prefixes the "type" URI of every problem.
const ErrorTypeBase = "https://github.com/coffer-storage/coffer/blob/main/docs/errors.md#"

// Problem is an RFC 9457 problem details body, plus Coffer's stable code.
type Problem struct {
	Type      string         `json:"type"`
	Title     string         `json:"title"`
	Status    int            `json:"status"`
	Detail    string         `json:"detail,omitempty"`
	Code      string         `json:"code"`
	RequestID string         `json:"request_id,omitempty"`
	TraceID   string         `json:"trace_id,omitempty"` // with tracing on (docs/tracing.md)
	Extra     map[string]any `json:"extra,omitempty"`
}

// WriteProblem translates err into a problem+json response. Unknown and
// internal errors are logged with the request ID and shown generically.
func WriteProblem(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code := errcode.Of(err)
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	reqID, traceID := httpx.RequestID(r.Context()), httpx.TraceID(r.Context())
	if traceID != "" {
		w.Header().Set("X-Coffer-Trace-Id", traceID)
	}
	detail := errcode.Message(err)
	// 5xx answers that are refusals, not failures (a full quota, an
	// unavailable dependency, a missing feature), keep their detail.
	if status >= 500 && code != errcode.Unavailable && code != errcode.NotImplemented && code != errcode.QuotaExceeded &&
		code != errcode.StorageFull {
		log.ErrorContext(r.Context(), "request failed", "request_id", reqID, "method", r.Method, "path", r.URL.Path, "code", code.String(), "err", err)
		detail = "internal error; quote the request ID when reporting it"
	}
	var extra map[string]any
	if e := errcode.As(err); e != nil {
		extra = e.Detail
		if e.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
		}
	}
	if (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="coffer"`)
	}
	if status == http.StatusNotModified {
		w.WriteHeader(status)
		return
	}
	h := w.Header()
	h.Del("Content-Length")
	h.Del("Content-Disposition")
	h.Del("ETag")
	h.Del("Last-Modified")
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	_ = json.NewEncoder(w).Encode(Problem{
		Type:      problemType(code, err),
		Title:     http.StatusText(status),
		Status:    status,
		Detail:    detail,
		Code:      code.String(),
		RequestID: reqID,
		TraceID:   traceID,
		Extra:     extra,
	})
}

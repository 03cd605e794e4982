package httpx

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// The download path both APIs share: validators, preconditions and Range
// are evaluated here, then each API adds its own headers (disposition,
// caching, checksums, S3's response-* overrides) and SendSpan sends the
// bytes. The APIs only differ in what they add and in how they write
// errors.

// Representation is the object a download serves.
type Representation struct {
	ETag    string // unquoted
	ModTime time.Time
	Size    int64
}

// Span is the part of a representation a download sends.
type Span struct {
	Status        int   // 200 or 206
	Start, Length int64 // the byte range
}

// Opener opens a byte range of a representation's bytes
// (object.Reader is one).
type Opener interface {
	Open(ctx context.Context, offset, length int64) (io.ReadCloser, error)
}

// PlanDownload starts a GET or HEAD of rep: it sets ETag, Last-Modified
// and Accept-Ranges, evaluates the preconditions in RFC 9110 order, then
// picks the span: fixed if not nil (S3's partNumber), else the request's
// single Range (when If-Range allows), else everything. A 206 span gets
// its Content-Range.
//
// It answers 304 Not Modified itself and returns ok false. Other refusals
// are returned as errors for the API to write in its format:
// PreconditionFailed, and RangeNotSatisfiable with Content-Range
// "bytes */size" already set.
func PlanDownload(w http.ResponseWriter, r *http.Request, rep Representation, fixed *Span) (sp Span, ok bool, err error) {
	h := w.Header()
	h.Set("ETag", QuoteETag(rep.ETag))
	h.Set("Last-Modified", rep.ModTime.UTC().Format(http.TimeFormat))
	h["Accept-Ranges"] = bytesRange
	v := Validators{ETag: rep.ETag, ModTime: rep.ModTime, Exists: true}
	switch CheckPreconditions(r, v) {
	case NotModified:
		w.WriteHeader(http.StatusNotModified)
		return Span{}, false, nil
	case FailedPrecon:
		return Span{}, false, errcode.New(errcode.PreconditionFailed, "precondition failed")
	}
	sp = Span{Status: http.StatusOK, Length: rep.Size}
	switch {
	case fixed != nil:
		sp = *fixed
	case r.Method == http.MethodGet && RangeApplies(r, v):
		switch res, s, n := ParseRange(r.Header.Get("Range"), rep.Size); res {
		case RangeOK:
			sp = Span{Status: http.StatusPartialContent, Start: s, Length: n}
		case RangeUnsatisfiable:
			h.Set("Content-Range", "bytes */"+strconv.FormatInt(rep.Size, 10))
			return Span{}, false, errcode.New(errcode.RangeNotSatisfiable, "range not satisfiable for %d bytes", rep.Size)
		}
	}
	if sp.Status == http.StatusPartialContent {
		h.Set("Content-Range", ContentRange(sp.Start, sp.Length, rep.Size))
	}
	return sp, true, nil
}

// SendSpan finishes a download planned by PlanDownload, once the API has
// set its own headers (Content-Type included): it sets the content safety
// headers (SetContentSafety) and Content-Length, then writes the status
// and, for GET, the bytes, streamed from open (sendfile where the bytes
// are a file). An error opening the bytes is returned before anything is
// written, for the API to write in its format. A copy interrupted later
// (the bytes failed: a damaged blob, a store's I/O error; or the client
// went away, the write-idle deadline) is logged with attrs, unless the
// client left, and the response is aborted (panic(http.ErrAbortHandler)):
// the connection is closed (HTTP/2: the stream reset) before the declared
// Content-Length, so the client sees a broken transfer, never a complete
// response.
func SendSpan(w http.ResponseWriter, r *http.Request, open Opener, sp Span, log *slog.Logger, attrs ...any) error {
	h := w.Header()
	SetContentSafety(h)
	h.Set("Content-Length", strconv.FormatInt(sp.Length, 10))
	if r.Method == http.MethodHead {
		w.WriteHeader(sp.Status)
		return nil
	}
	rc, err := open.Open(r.Context(), sp.Start, sp.Length)
	if err != nil {
		h.Del("Content-Range")
		h.Del("Content-Length")
		return err
	}
	defer rc.Close()
	w.WriteHeader(sp.Status)
	if n, err := io.Copy(w, rc); err != nil {
		if r.Context().Err() == nil && log != nil {
			log.WarnContext(r.Context(), "download interrupted", append([]any{"request_id", RequestID(r.Context()), "sent", n, "of", sp.Length, "err", err}, attrs...)...)
		}
		panic(http.ErrAbortHandler)
	}
	return nil
}

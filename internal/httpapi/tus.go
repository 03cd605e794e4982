package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/tus"
)

// TusBase is where the tus endpoint is mounted.
const TusBase = "/api/v1/tus/"

// tusHandlers serve the tus 1.0 endpoint (internal/tus) at TusBase.
type tusHandlers struct {
	handler *tus.Handler // nil: not enabled (Config.Tus), 501
}

// newTus returns tusd's handler over objects and cfg.Store; its errors
// are problem details.
func newTus(objects tus.Objects, cfg TusConfig, log *slog.Logger) (*tus.Handler, error) {
	return tus.New(objects, cfg.Store, tus.Config{
		BasePath: TusBase, TTL: cfg.TTL, LockLease: cfg.LockLease, Log: log,
		Error: func(ctx context.Context, err error) (int, http.Header, []byte) {
			rw := &bufferWriter{header: http.Header{}}
			r, _ := http.NewRequestWithContext(ctx, http.MethodPatch, TusBase, nil)
			WriteProblem(rw, r, log, err)
			return rw.status, rw.header, rw.body.Bytes()
		},
	})
}

func (t *tusHandlers) tusServe(r *http.Request, p auth.Principal) (response, error) {
	if t.handler == nil {
		return nil, errcode.New(errcode.NotImplemented, "tus uploads are not enabled on this server")
	}
	if r.Method == http.MethodGet {
		return nil, errcode.New(errcode.MethodNotAllowed, "tus uploads are not downloadable; GET the object")
	}
	return tusResponse{h: t.handler, p: p}, nil
}

type tusResponse struct {
	h *tus.Handler
	p auth.Principal
}

func (t tusResponse) respond(w http.ResponseWriter, r *http.Request) {
	t.h.ServeHTTP(w, r, actor(r, t.p))
}

// bufferWriter captures a response written by WriteProblem.
type bufferWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferWriter) Header() http.Header { return b.header }
func (b *bufferWriter) WriteHeader(s int) {
	if b.status == 0 {
		b.status = s
	}
}
func (b *bufferWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

package httpapi

import (
	"bytes"
	"context"
	"net/http"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/tus"
)

// TusBase is where the tus endpoint is mounted.
const TusBase = "/api/v1/tus/"

// tusRoutes are the tus 1.0 endpoint's routes (internal/tus): the
// creation URL and the upload URLs. They stream (POST may carry the first
// chunk: creation-with-upload); OPTIONS needs no credentials (it tells
// only the protocol's capabilities).
func (api *API) tusRoutes() []Route {
	const u = TusBase + "{id}"
	return []Route{
		{Method: "OPTIONS", Pattern: TusBase, Access: Public, handle: api.tusServe},
		{Method: "POST", Pattern: TusBase, Access: User, Streams: true, handle: api.tusServe},
		{Method: "OPTIONS", Pattern: u, Access: Public, handle: api.tusServe},
		{Method: "GET", Pattern: u, Access: User, handle: api.tusServe}, // HEAD
		{Method: "PATCH", Pattern: u, Access: User, Streams: true, handle: api.tusServe},
		{Method: "DELETE", Pattern: u, Access: User, handle: api.tusServe},
	}
}

func (api *API) newTus(cfg TusConfig) error {
	h, err := tus.New(api.tusObjects, cfg.Store, tus.Config{
		BasePath: TusBase, TTL: cfg.TTL, LockLease: cfg.LockLease, Log: api.log,
		Error: func(ctx context.Context, err error) (int, http.Header, []byte) {
			rw := &bufferWriter{header: http.Header{}}
			r, _ := http.NewRequestWithContext(ctx, http.MethodPatch, TusBase, nil)
			WriteProblem(rw, r, api.log, err)
			return rw.status, rw.header, rw.body.Bytes()
		},
	})
	api.tus = h
	return err
}

func (api *API) tusServe(r *http.Request, p auth.Principal) (response, error) {
	if api.tus == nil {
		return nil, errcode.New(errcode.NotImplemented, "tus uploads are not enabled on this server")
	}
	if r.Method == http.MethodGet {
		return nil, errcode.New(errcode.MethodNotAllowed, "tus uploads are not downloadable; GET the object")
	}
	return tusResponse{h: api.tus, p: p}, nil
}

type tusResponse struct {
	h *tus.Handler
	p auth.Principal
}

func (t tusResponse) respond(w http.ResponseWriter, r *http.Request) {
	t.h.ServeHTTP(w, r, actor(t.p))
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

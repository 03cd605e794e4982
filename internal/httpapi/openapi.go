package httpapi

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpx"
)

// openAPIDoc is the OpenAPI 3.1 description of this API, written by
// hand in openapi.json and served at GET /api/v1/openapi.json. Two tests
// keep it true: TestOpenAPIRoutes compares it with the route table
// (methods, path templates, path parameters, security), and
// TestOpenAPIResponses validates the requests and responses of the real
// handlers against it. Change it with the route or the body it describes.
//
//go:embed openapi.json
var openAPIDoc []byte

// openAPIETag is the document's strong entity tag (it changes only with
// the binary).
var openAPIETag = func() string {
	sum := sha256.Sum256(openAPIDoc)
	return hex.EncodeToString(sum[:16])
}()

func (api *API) openAPI(_ *http.Request, _ auth.Principal) (response, error) {
	return openAPIResponse{log: api.log}, nil
}

// openAPIResponse serves the document: public, cacheable, revalidated
// with its ETag.
type openAPIResponse struct{ log *slog.Logger }

func (o openAPIResponse) respond(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("ETag", httpx.QuoteETag(openAPIETag))
	h.Set("Cache-Control", "public, max-age=300")
	switch httpx.CheckPreconditions(r, httpx.Validators{ETag: openAPIETag, Exists: true}) {
	case httpx.NotModified:
		w.WriteHeader(http.StatusNotModified)
		return
	case httpx.FailedPrecon:
		WriteProblem(w, r, o.log, errcode.New(errcode.PreconditionFailed, "precondition failed"))
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(openAPIDoc)))
	httpx.SetContentSafety(h)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(openAPIDoc)
	}
}

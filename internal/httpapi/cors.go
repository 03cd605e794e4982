package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// CORS (docs/cors.md): the routes a page of another origin needs, share
// links and the direct-upload flow (Route.CORS), answer the origins of
// Config.CORSOrigins (--cors-origins) across origins: a preflight
// (OPTIONS with Access-Control-Request-Method) for one of them is
// answered here, and their answers to a request with an allowed Origin
// carry Access-Control-Allow-Origin, the headers a page may read, and
// Vary: Origin. Credentials (cookies) are never allowed across origins:
// such a page authenticates with a bearer token or X-Share-Grant, which
// it sends itself. The console is same-origin and needs none of this.
// The parts of a direct upload go to the S3 listener, whose bucket CORS
// rules answer them (internal/s3api).

// corsMaxAge is how long a browser may keep a preflight's answer (s).
const corsMaxAge = "600"

// corsExpose are the response headers a page of an allowed origin may
// read.
const corsExpose = "ETag, Content-Length, Content-Range, Content-Disposition, Last-Modified, Location, Retry-After, X-Request-Id"

// corsOrigin returns the Access-Control-Allow-Origin answering origin,
// "" if origin may not call across origins.
func (api *API) corsOrigin(origin string) string {
	switch {
	case slices.Contains(api.cfg.CORSOrigins, origin):
		return origin
	case slices.Contains(api.cfg.CORSOrigins, "*"):
		return "*"
	}
	return ""
}

// cors handles the CORS side of r (whose Origin is origin) and reports
// whether it answered r: a preflight for a CORS route. Otherwise it sets
// the headers of an actual request to a CORS route (route, matched by the
// router; err its error) and the request goes on.
func (api *API) cors(w http.ResponseWriter, r *http.Request, origin string, route Route, err error) bool {
	if method := r.Header.Get("Access-Control-Request-Method"); r.Method == http.MethodOptions && method != "" {
		pr := r.Clone(r.Context())
		pr.Method = method
		target, err := api.router.match(pr)
		if err != nil || !target.CORS {
			return false // no route a page may call: the router's answer
		}
		h := w.Header()
		h.Set("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
		allow := api.corsOrigin(origin)
		if allow == "" {
			WriteProblem(w, r, api.log, errcode.New(errcode.PermissionDenied, "origin %q may not call this route across origins (--cors-origins)", origin))
			return true
		}
		h.Set("Access-Control-Allow-Origin", allow)
		h.Set("Access-Control-Allow-Methods", method)
		if hs := strings.Join(r.Header.Values("Access-Control-Request-Headers"), ","); hs != "" {
			h.Set("Access-Control-Allow-Headers", hs)
		}
		h.Set("Access-Control-Max-Age", corsMaxAge)
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	if err == nil && route.CORS {
		h := w.Header()
		h.Add("Vary", "Origin")
		if allow := api.corsOrigin(origin); allow != "" {
			h.Set("Access-Control-Allow-Origin", allow)
			h.Set("Access-Control-Expose-Headers", corsExpose)
		}
	}
	return false
}

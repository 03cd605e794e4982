// Package console serves Coffer's web console: the static single-page
// application built from web/console (scripts/build-console.sh) into
// ./dist and embedded in the binary, so `coffer serve` needs no Node
// toolchain at run time.
//
// The console is a client of the documented file API (/api/v1) on the
// same origin and nothing more: this package serves files, never data.
//
// # Contract
//
//   - GET and HEAD only; other methods go to the fallback handler.
//   - /assets/… are content-hashed bundles: Cache-Control
//     "public, max-age=31536000, immutable". Every other answer (index.html
//     and what falls back to it) is "no-cache", so a new binary's console is
//     picked up on the next load.
//   - Precompressed variants built next to each file (NAME.br, NAME.gz) are
//     sent when the client accepts them (Content-Encoding, Vary:
//     Accept-Encoding); else the file as it is.
//   - A path that names no file and whose last segment has no dot is a
//     route of the application: index.html (SPA fallback). A missing file
//     (a dot in the last segment, or anything under /assets/) goes to the
//     fallback handler (the API's problem+json 404).
//   - Every response carries the console's Content-Security-Policy (no
//     inline script, no eval, nothing from other origins, no framing) with
//     nosniff, no-referrer and a deny-all Permissions-Policy.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
)

//go:embed dist
var embedded embed.FS

// CSP is the console's Content-Security-Policy. Script only from the
// console's own files; styles from its files (element.style set from
// script is CSSOM, which style-src does not restrict); images also from
// blob: URLs (raster previews typed by their bytes, the upload panel's
// thumbnails) and data: (rendered markdown); media and frames only from
// this origin (previews load /s/ links, never a blob: of user bytes);
// connections only to its own origin (the API).
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
	"media-src 'self'; frame-src 'self'; connect-src 'self'; font-src 'self'; " +
	"manifest-src 'self'; worker-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the embedded console.
type Handler struct {
	files    fs.FS
	fallback http.Handler
}

// New returns the console handler over the embedded build. fallback
// answers what the console does not serve (other methods, missing files).
func New(fallback http.Handler) *Handler {
	sub, err := fs.Sub(embedded, "dist")
	if err != nil {
		panic(err) // the embed pattern guarantees dist exists
	}
	return NewFS(sub, fallback)
}

// NewFS returns a console handler over files (for tests).
func NewFS(files fs.FS, fallback http.Handler) *Handler {
	return &Handler{files: files, fallback: fallback}
}

// Available reports whether the embedded build has an index.html (a
// checkout whose dist folder was emptied serves no console).
func Available() bool {
	_, err := fs.Stat(embedded, "dist/index.html")
	return err == nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.fallback.ServeHTTP(w, r)
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	immutable := strings.HasPrefix(name, "assets/")
	if !h.exists(name) {
		last := path.Base(name)
		if immutable || strings.Contains(last, ".") || !h.exists("index.html") {
			h.fallback.ServeHTTP(w, r)
			return
		}
		name = "index.html" // a route of the application
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if immutable {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	hd.Set("Content-Type", contentType(name))
	hd.Add("Vary", "Accept-Encoding")
	send := name
	for _, enc := range []struct{ token, ext string }{{"br", ".br"}, {"gzip", ".gz"}} {
		if accepts(r.Header.Get("Accept-Encoding"), enc.token) && h.exists(name+enc.ext) {
			hd.Set("Content-Encoding", enc.token)
			send = name + enc.ext
			break
		}
	}
	data, err := fs.ReadFile(h.files, send)
	if err != nil {
		h.fallback.ServeHTTP(w, r)
		return
	}
	hd.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(data)
	}
}

func (h *Handler) exists(name string) bool {
	st, err := fs.Stat(h.files, name)
	return err == nil && !st.IsDir()
}

// accepts reports whether an Accept-Encoding value allows coding (a q=0
// refuses it).
func accepts(header, coding string) bool {
	for _, part := range strings.Split(header, ",") {
		tok, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(tok), coding) {
			continue
		}
		params = strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		if q, ok := strings.CutPrefix(params, "q="); ok {
			f, err := strconv.ParseFloat(q, 64)
			return err == nil && f > 0
		}
		return true
	}
	return false
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".ico":
		return "image/x-icon"
	case ".json", ".map":
		return "application/json"
	case ".txt":
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

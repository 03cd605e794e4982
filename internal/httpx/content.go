package httpx

import (
	"mime"
	"net/http"
	"strings"

	"github.com/coffer-storage/coffer/internal/memo"
)

// SandboxCSP is the Content-Security-Policy that makes a document inert:
// no script, no plugin, no form, no same-origin access, no fetch of
// anything.
const SandboxCSP = "default-src 'none'; sandbox"

// Header values made once and shared by every response: Header.Set
// allocates a one-element slice a call. A Header's value slice is never
// modified in place (Header.Add appends to a full slice, which copies), so
// responses can share these; never change their elements.
var (
	Nosniff    = []string{"nosniff"} // X-Content-Type-Options
	bytesRange = []string{"bytes"}   // Accept-Ranges
)

// SetContentSafety sets the headers that keep user content, served from
// Coffer's own origins (the file API and the S3 API), from acting in those
// origins. It must be called after the response's final Content-Type is in
// h (including any override the client asked for):
//
//   - X-Content-Type-Options: nosniff, always: browsers must take the
//     Content-Type as it is and not guess HTML in a text/plain object;
//   - Content-Security-Policy: SandboxCSP when that type is active
//     content (ActiveContent).
//
// Both APIs call this one function, so they make the same decision.
func SetContentSafety(h http.Header) {
	h["X-Content-Type-Options"] = Nosniff
	if ActiveContent(h.Get("Content-Type")) {
		h.Set("Content-Security-Policy", SandboxCSP)
	} else {
		h.Del("Content-Security-Policy")
	}
}

// ActiveContent says whether a browser may run script in, or render as a
// document that can, a response of Content-Type ct: HTML, XHTML, SVG and
// any other XML (which an XSLT stylesheet turns into HTML), JavaScript,
// XSL, multipart/x-mixed-replace; and, to be safe, a missing or
// unparsable type. Images, audio, video, text/plain, JSON, PDF, archives
// and other types browsers display inertly or download are not.
func ActiveContent(ct string) bool {
	if active, ok := activeKnown.Get(ct); ok {
		return active
	}
	active := activeContent(ct)
	if len(ct) <= maxActiveKey {
		activeKnown.Put(ct, active)
	}
	return active
}

// activeKnown holds ActiveContent's answers for the content types seen
// (a node serves few: every download asks, and mime.ParseMediaType
// allocates a map a call). At most maxActiveKnown types of at most
// maxActiveKey bytes; others are decided on every call.
var activeKnown = memo.Map[string, bool]{Max: maxActiveKnown}

const (
	maxActiveKnown = 256
	maxActiveKey   = 128
)

func activeContent(ct string) bool {
	if strings.TrimSpace(ct) == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return true
	}
	typ, sub, ok := strings.Cut(mt, "/")
	if !ok {
		return true
	}
	switch {
	case sub == "html" || sub == "xhtml+xml" || sub == "xml" || strings.HasSuffix(sub, "+xml"):
		return true
	case sub == "xsl" || sub == "xslt" || sub == "xml-dtd" || sub == "xml-external-parsed-entity":
		return true
	case strings.Contains(sub, "javascript") || strings.Contains(sub, "ecmascript") || strings.Contains(sub, "jscript") || sub == "livescript":
		return true
	case typ == "multipart" && sub == "x-mixed-replace":
		return true
	}
	return false
}

package httpx

import (
	"net/http"
	"strings"
	"time"
)

// Precondition results.
const (
	Proceed      = 0
	NotModified  = http.StatusNotModified
	FailedPrecon = http.StatusPreconditionFailed
)

// Validators describe the current representation for conditional requests.
type Validators struct {
	ETag    string // without quotes; "" if the resource does not exist
	ModTime time.Time
	Exists  bool
}

// CheckPreconditions evaluates If-Match, If-Unmodified-Since, If-None-Match
// and If-Modified-Since in the order of RFC 9110 §13.2.2 and returns
// Proceed, NotModified (GET/HEAD only) or FailedPrecon.
func CheckPreconditions(r *http.Request, v Validators) int {
	h := r.Header
	safe := r.Method == http.MethodGet || r.Method == http.MethodHead
	if im := h.Get("If-Match"); im != "" {
		if !v.Exists || !MatchETag(im, v.ETag, true) {
			return FailedPrecon
		}
	} else if ius := h.Get("If-Unmodified-Since"); ius != "" && v.Exists {
		if t, err := http.ParseTime(ius); err == nil && v.ModTime.Truncate(time.Second).After(t) {
			return FailedPrecon
		}
	}
	if inm := h.Get("If-None-Match"); inm != "" {
		if v.Exists && MatchETag(inm, v.ETag, false) {
			if safe {
				return NotModified
			}
			return FailedPrecon
		}
	} else if ims := h.Get("If-Modified-Since"); ims != "" && safe && v.Exists {
		if t, err := http.ParseTime(ims); err == nil && !v.ModTime.Truncate(time.Second).After(t) {
			return NotModified
		}
	}
	return Proceed
}

// RangeApplies evaluates If-Range: the Range header is honoured only if
// If-Range is absent or matches the current representation (a strong ETag
// or the exact Last-Modified date).
func RangeApplies(r *http.Request, v Validators) bool {
	ir := strings.TrimSpace(r.Header.Get("If-Range"))
	if ir == "" {
		return true
	}
	if strings.HasPrefix(ir, `"`) || strings.HasPrefix(ir, "W/") {
		return MatchETag(ir, v.ETag, true) && !strings.HasPrefix(ir, "W/")
	}
	t, err := http.ParseTime(ir)
	return err == nil && v.ModTime.Truncate(time.Second).Equal(t)
}

// MatchETag reports whether the header value list (a comma-separated list
// of entity tags, or "*") matches etag. Strong comparison rejects weak tags.
// Unquoted tags are accepted too, as some S3 clients send them.
func MatchETag(list, etag string, strong bool) bool {
	list = strings.TrimSpace(list)
	if list == "*" {
		return true
	}
	for len(list) > 0 {
		list = strings.TrimLeft(list, " \t,")
		if list == "" {
			break
		}
		weak := false
		if strings.HasPrefix(list, "W/") {
			weak, list = true, list[2:]
		}
		var tag string
		if strings.HasPrefix(list, `"`) {
			end := strings.IndexByte(list[1:], '"')
			if end < 0 {
				return false
			}
			tag, list = list[1:1+end], list[2+end:]
		} else {
			end := strings.IndexAny(list, ", \t")
			if end < 0 {
				end = len(list)
			}
			tag, list = list[:end], list[end:]
		}
		if tag == "*" || (tag == etag && !(strong && weak)) {
			return true
		}
	}
	return false
}

// QuoteETag returns etag as an HTTP entity tag.
func QuoteETag(etag string) string { return `"` + etag + `"` }

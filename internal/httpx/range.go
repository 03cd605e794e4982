// Package httpx holds HTTP helpers shared by Coffer's APIs: Range and
// conditional-request evaluation (RFC 9110), request IDs, client addresses,
// readers/writers that bound how slowly a client may transfer, and the
// headers that keep served user content inert (SetContentSafety).
package httpx

import (
	"strconv"
	"strings"
)

// RangeResult classifies a Range header against a representation's size.
type RangeResult int

// Range results.
const (
	RangeNone          RangeResult = iota // absent, unsupported or syntactically invalid: send the whole representation
	RangeOK                               // one satisfiable range
	RangeUnsatisfiable                    // 416
)

// ParseRange evaluates a Range header value for a representation of size
// bytes. Only a single "bytes" range is served; multiple ranges and
// values that are not RFC 9110's syntax are ignored (§14.2 allows a
// server to ignore Range), as S3 ignores them: the grammar
// (range-unit "=" first-pos "-" [last-pos], or "-" suffix-length) has no
// whitespace inside it, so "bytes= -1" or "bytes=0 -1" is not a range;
// only the whitespace around the field value is not part of it. The unit
// is compared case-insensitively. It returns the start and length of the
// range for RangeOK.
func ParseRange(h string, size int64) (RangeResult, int64, int64) {
	h = strings.TrimSpace(h)
	if h == "" || strings.ContainsAny(h, " \t") {
		return RangeNone, 0, 0
	}
	unit, spec, ok := strings.Cut(h, "=")
	if !ok || !strings.EqualFold(unit, "bytes") {
		return RangeNone, 0, 0
	}
	if strings.Contains(spec, ",") {
		return RangeNone, 0, 0
	}
	first, last, ok := strings.Cut(spec, "-")
	if !ok {
		return RangeNone, 0, 0
	}
	if first == "" {
		// suffix range: the last n bytes
		n, ok := parseDigits(last)
		if !ok {
			return RangeNone, 0, 0
		}
		if n == 0 || size == 0 {
			return RangeUnsatisfiable, 0, 0
		}
		n = min(n, size)
		return RangeOK, size - n, n
	}
	start, ok := parseDigits(first)
	if !ok {
		return RangeNone, 0, 0
	}
	end := int64(-1)
	if last != "" {
		if end, ok = parseDigits(last); !ok || end < start {
			return RangeNone, 0, 0
		}
	}
	if start >= size {
		return RangeUnsatisfiable, 0, 0
	}
	if end < 0 || end >= size {
		end = size - 1
	}
	return RangeOK, start, end - start + 1
}

// parseDigits parses a non-negative decimal of 1..18 digits.
func parseDigits(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// ContentRange formats a Content-Range value.
func ContentRange(start, length, size int64) string {
	return "bytes " + strconv.FormatInt(start, 10) + "-" + strconv.FormatInt(start+length-1, 10) + "/" + strconv.FormatInt(size, 10)
}

package httpx

import "github.com/coffer-storage/coffer/internal/ratelimit"

// Kind describes a request to the guards every listener shares (admission,
// request timeout); each API classifies its own requests.
type Kind struct {
	// Route names the operation (a low-cardinality metric label).
	Route string
	// Class is the admission class.
	Class ratelimit.Class
	// Streams is true for requests that move object bytes: they are exempt
	// from the request timeout (minimum transfer rates and the write-idle
	// deadline bound them instead).
	Streams bool
	// Credentials is true when the request carries credentials (verified
	// later, by the API): it gets the larger per-client share.
	Credentials bool
	// Probe marks health and readiness checks, which are never shed.
	Probe bool
	// Finishes marks the completion of work already paid for (a
	// multipart complete): past the adaptive class limit
	// (ratelimit.Request.Finishes).
	Finishes bool
	// Share is set on anonymous requests through a share link (/s/): a
	// stable key of the link ("share:" and 16 hex digits of its token's
	// SHA-256), known without a metadata lookup, for limits per link.
	Share string
}

package meta

import (
	"context"
)

// Cluster is what the nodes sharing the store check of it: that they hold
// the same server key, and that it answers.
type Cluster interface {
	// ClaimKeyFingerprint records fp, the fingerprint of the server key
	// (never the key itself), as the one the store works with, unless one
	// is recorded already, and returns the recorded fingerprint: fp if it
	// is the one recorded, now or earlier, else the other. The first
	// fingerprint recorded stays: of concurrent calls with different
	// fingerprints on a store that has none, exactly one is recorded and
	// every call returns it, across processes. InvalidArgument if fp is
	// empty or longer than 128 bytes.
	ClaimKeyFingerprint(ctx context.Context, fp string) (string, error)
	// Ping checks the store is reachable (for /readyz).
	Ping(ctx context.Context) error
}

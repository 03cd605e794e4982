package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// TestClassifyEndedSessions: a session the server ended because this node
// left it silent (idle_in_transaction_session_timeout after a pause or a
// partition; the faults harness saw it as a 500 after a 6.7 s pause) is a
// retryable 503, as a lost connection is, not an internal error.
func TestClassifyEndedSessions(t *testing.T) {
	for _, code := range []string{"25P03", "57P05", "57P01", "08006"} {
		err := classify(context.Background(), &pgconn.PgError{Code: code, Severity: "FATAL"}, "list %s", "b")
		if got := errcode.Of(err); got != errcode.Unavailable {
			t.Errorf("%s: %v (%v), want unavailable", code, got, err)
		}
		if e := errcode.As(err); e == nil || e.RetryAfter == 0 {
			t.Errorf("%s: no Retry-After: %v", code, err)
		}
	}
}

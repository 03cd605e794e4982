package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// classify turns a driver error into an errcode error; format and args say
// what was being done. Errors that already carry a code are returned
// unchanged; so are context errors when ctx is done (the caller gave up).
func classify(ctx context.Context, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if errcode.As(err) != nil {
		return err
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	msg := fmt.Sprintf(format, args...)
	if ctx.Err() != nil && isSQLState(err, "57014") {
		// Cancelled on the server because the caller gave up.
		return fmt.Errorf("%s: %w (%w)", msg, ctx.Err(), err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return errcode.Wrap(errcode.NotFound, err, "%s: not found", msg)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch code := pe.Code; {
		case code == "23505": // unique_violation
			return errcode.Wrap(errcode.AlreadyExists, err, "%s: already exists", msg)
		case code == "23503": // foreign_key_violation
			return errcode.Wrap(errcode.NotFound, err, "%s: referenced row not found", msg)
		case code == "22021", code == "22P05", code == "54000":
			// character_not_in_repertoire (invalid UTF-8, NUL),
			// untranslatable_character, program_limit_exceeded (a value
			// too large for an index).
			return errcode.Wrap(errcode.InvalidArgument, err, "%s: value not storable", msg)
		case code == "57014": // query_canceled: statement_timeout (ctx is not done)
			return errcode.Wrap(errcode.Unavailable, err, "%s: the database took too long", msg)
		case code == "55P03": // lock_not_available
			return retry(err, "%s: database busy", msg)
		case code == "53300", code == "53400", // too_many_connections, configuration_limit_exceeded
			code == "57P01", code == "57P02", code == "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
			code == "40001", code == "40P01", // serialization_failure, deadlock_detected (after the retries)
			// idle_in_transaction_session_timeout, idle_session_timeout:
			// the server ended a session this node left silent (a pause, a
			// partition); its transaction rolled back, nothing happened.
			code == "25P03", code == "57P05",
			strings.HasPrefix(code, "08"): // connection exceptions
			return retry(err, "%s: database unavailable", msg)
		case strings.HasPrefix(code, "53"): // insufficient resources (disk full, out of memory)
			return errcode.Wrap(errcode.Unavailable, err, "%s: database out of resources", msg)
		}
		return errcode.Wrap(errcode.Unknown, err, "%s", msg)
	}
	if connLost(ctx, err) {
		return retry(err, "%s: database unavailable", msg)
	}
	return errcode.Wrap(errcode.Unknown, err, "%s", msg)
}

// retry is errcode.Retry(Unavailable), keeping the cause for the logs.
func retry(err error, format string, args ...any) error {
	e := errcode.As(errcode.Retry(errcode.Unavailable, retryAfter, format, args...))
	e.Err = err
	return e
}

// connLost reports whether err says the connection to the server failed or
// could not be made (rather than a statement failing on a working one).
func connLost(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		c := pe.Code
		return c == "57P01" || c == "57P02" || c == "57P03" || strings.HasPrefix(c, "08")
	}
	if ctx.Err() != nil {
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ce) || errors.As(err, &oe) || errors.As(err, &ne) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

// isSQLState reports whether err is a server error with one of codes.
func isSQLState(err error, codes ...string) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	for _, c := range codes {
		if pe.Code == c {
			return true
		}
	}
	return false
}

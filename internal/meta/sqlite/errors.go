package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// retryAfter is the Retry-After suggested when the database is busy.
const retryAfter = time.Second

// classify turns a driver error into an errcode error; format and args say
// what was being done. Errors that already carry a code, and context
// errors, are returned unchanged.
func classify(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if errcode.As(err) != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	msg := fmt.Sprintf(format, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return errcode.Wrap(errcode.NotFound, err, "%s: not found", msg)
	}
	if errors.Is(err, sql.ErrConnDone) {
		return errcode.Wrap(errcode.Unavailable, err, "%s", msg)
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return errcode.Wrap(errcode.Unknown, err, "%s", msg)
	}
	switch code := se.Code(); code {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return errcode.Wrap(errcode.AlreadyExists, err, "%s: already exists", msg)
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return errcode.Wrap(errcode.NotFound, err, "%s: referenced row not found", msg)
	default:
		switch code & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			// errcode.Retry, keeping the cause for the logs.
			e := errcode.As(errcode.Retry(errcode.Unavailable, retryAfter, "%s: database busy", msg))
			e.Err = err
			return e
		case sqlite3.SQLITE_FULL:
			return errcode.Wrap(errcode.StorageFull, err, "%s: disk full", msg)
		case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_NOMEM:
			return errcode.Wrap(errcode.Unavailable, err, "%s", msg)
		}
	}
	return errcode.Wrap(errcode.Unknown, err, "%s", msg)
}

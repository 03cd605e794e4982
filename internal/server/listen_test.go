package server

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/metacache"
)

// TestListenLog: while the listening connection is down, one warning for
// the first failure and reminders at most every `every`, however many
// retries; one line when it listens again, none on the first start. (Each
// retry logged a warning, and the recovery nothing.)
func TestListenLog(t *testing.T) {
	var buf bytes.Buffer
	l := &listenLog{log: slog.New(slog.NewTextHandler(&buf, nil)), every: time.Hour}
	h := l.handler(metacache.NewBus())
	count := func(s string) int { return strings.Count(buf.String(), s) }
	h.Listening(true) // the first start
	if buf.Len() != 0 {
		t.Fatalf("logged at the first start: %s", buf.String())
	}
	down := errors.New("connection refused")
	h.Listening(false)
	h.Reset()
	for range 10 {
		h.Error(down)
	}
	if got := count("level=WARN"); got != 1 || count("listening for other nodes' changes failed") != 1 {
		t.Errorf("10 failed attempts logged %d warnings, want 1:\n%s", got, buf.String())
	}
	h.Reset()
	h.Listening(true)
	if count("listening for other nodes' changes again") != 1 || !strings.Contains(buf.String(), "failed_attempts=10") {
		t.Errorf("the recovery is not logged once with its attempts:\n%s", buf.String())
	}
	// A second outage, with reminders.
	buf.Reset()
	l.every = time.Millisecond
	for range 3 {
		time.Sleep(2 * time.Millisecond)
		h.Error(down)
	}
	if count("listening for other nodes' changes failed") != 1 || count("still not listening") != 2 {
		t.Errorf("a second outage of 3 attempts: want the failure and 2 reminders:\n%s", buf.String())
	}
	h.Listening(true)
	h.Listening(true)
	if count("changes again;") != 1 {
		t.Errorf("recovery logged %d times, want 1:\n%s", count("changes again;"), buf.String())
	}
}

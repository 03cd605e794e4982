package detach

import (
	"context"
	"testing"
	"time"
)

type key struct{}

// TestOutlivesTheRequest: the detached context keeps the request's values,
// is not cancelled with it, has none of its deadline, and ends at its own
// bound or when cancelled.
func TestOutlivesTheRequest(t *testing.T) {
	req, cancelReq := context.WithTimeout(context.WithValue(context.Background(), key{}, "v"), time.Hour)
	ctx, cancel := Context(req)
	defer cancel()
	cancelReq()
	if err := ctx.Err(); err != nil {
		t.Fatalf("cancelled with the request: %v", err)
	}
	if got := ctx.Value(key{}); got != "v" {
		t.Errorf("value: got %v, want the request's", got)
	}
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) > Timeout {
		t.Errorf("deadline %v (set %v): want within %v", dl, ok, Timeout)
	}
	cancel()
	if ctx.Err() == nil {
		t.Error("not cancelled by its own cancel")
	}

	short, cancelShort := WithTimeout(req, time.Nanosecond)
	defer cancelShort()
	<-short.Done()
	if short.Err() != context.DeadlineExceeded {
		t.Errorf("after its bound: %v, want DeadlineExceeded", short.Err())
	}
}

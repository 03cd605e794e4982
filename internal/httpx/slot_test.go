package httpx

import (
	"context"
	"testing"
	"time"
)

// TestWithRequest: one context node answers RequestID and the Slot's
// setters, passes every other key and the cancellation of its parent on,
// and costs one allocation (WithRequestID and WithSlot cost three).
func TestWithRequest(t *testing.T) {
	type other struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), other{}, "x"))
	ctx, slot := WithRequest(parent, "ABC123")
	if got := RequestID(ctx); got != "ABC123" {
		t.Errorf("RequestID %q", got)
	}
	SetRoute(ctx, "GetObject")
	SetUser(ctx, "alice")
	SetShare(ctx, "s1")
	if slot.Route != "GetObject" || slot.User != "alice" || slot.Share != "s1" {
		t.Errorf("slot %+v", *slot)
	}
	if ctx.Value(other{}) != "x" {
		t.Error("a parent's value is lost")
	}
	child, stop := context.WithTimeout(ctx, time.Hour)
	defer stop()
	cancel()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the parent's cancellation did not reach a child")
	}
	// Allocation counts run without -short (scripts/test.sh: without the
	// race detector, which changes them).
	if !testing.Short() {
		if n := testing.AllocsPerRun(100, func() { sinkCtx, _ = WithRequest(parent, "ABC123") }); n != 1 {
			t.Errorf("WithRequest: %.0f allocations, want 1", n)
		}
	}
}

var sinkCtx context.Context

// BenchmarkRequestContext: the request ID and Slot as the listeners set
// them up on every request.
func BenchmarkRequestContext(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sinkCtx, _ = WithRequest(ctx, "ABC123")
		_ = RequestID(sinkCtx)
	}
}

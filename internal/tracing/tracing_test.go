package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/memblob"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/kms"
)

// recorder is a tracer provider whose spans are kept in memory.
func recorder(t *testing.T) (trace.Tracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp.Tracer(Scope), exp
}

// TestStartOff: without a recording span in the context (tracing off),
// Start returns the context itself and allocates nothing.
func TestStartOff(t *testing.T) {
	ctx := context.Background()
	got, span := Start(ctx, "x")
	if got != ctx || span.IsRecording() {
		t.Fatal("Start made a span without a recording parent")
	}
	if n := testing.AllocsPerRun(100, func() {
		_, span := Start(ctx, "x")
		End(span, nil)
	}); n != 0 {
		t.Errorf("Start+End off: %v allocations, want 0", n)
	}
	// A parent that is not sampled records nothing either.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	pctx, parent := tp.Tracer(Scope).Start(ctx, "root")
	defer parent.End()
	if c, s := Start(pctx, "child"); c != pctx || s.IsRecording() {
		t.Error("Start made a span under a parent not sampled")
	}
}

// TestStartChild: under a recording span, Start makes its child, and End
// marks only server-side failures as errors.
func TestStartChild(t *testing.T) {
	tr, exp := recorder(t)
	ctx, root := tr.Start(context.Background(), "root")
	_, a := Start(ctx, "client fault")
	End(a, errcode.New(errcode.NotFound, "no such key"))
	_, b := Start(ctx, "server fault")
	End(b, errcode.New(errcode.Unavailable, "store down"))
	root.End()
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	for _, s := range spans[:2] {
		if s.Parent.SpanID() != root.SpanContext().SpanID() || s.SpanContext.TraceID() != root.SpanContext().TraceID() {
			t.Errorf("%s: not a child of root", s.Name)
		}
	}
	if spans[0].Status.Code != 0 || spans[1].Status.Code == 0 {
		t.Errorf("statuses: %v (not found) %v (unavailable)", spans[0].Status, spans[1].Status)
	}
}

// TestLogHandler: a record logged with a context holding a span carries
// its trace ID; one logged without does not.
func TestLogHandler(t *testing.T) {
	tr, _ := recorder(t)
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "x")
	ctx, span := tr.Start(context.Background(), "req")
	log.InfoContext(ctx, "in a request", "request_id", "R1")
	log.Info("outside")
	span.End()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%q", buf.String())
	}
	var in, out map[string]any
	json.Unmarshal([]byte(lines[0]), &in)
	json.Unmarshal([]byte(lines[1]), &out)
	if in["trace_id"] != span.SpanContext().TraceID().String() || in["request_id"] != "R1" || in["component"] != "x" {
		t.Errorf("in a request: %v", in)
	}
	if _, ok := out["trace_id"]; ok {
		t.Errorf("outside a request: %v", out)
	}
}

// TestBlobs: the decorator keeps the store's optional interfaces, makes a
// span per call under a request's span (Get's until Close, with the
// bytes read, the copy going through the inner reader's WriteTo path),
// and passes calls through untraced without one.
func TestBlobs(t *testing.T) {
	inner := memblob.New()
	s := Blobs(inner)
	_, innerCP := blob.Store(inner).(blob.Copier)
	_, cp := s.(blob.Copier)
	_, innerMP := blob.Store(inner).(blob.MultipartPresigner)
	_, mp := s.(blob.MultipartPresigner)
	if cp != innerCP || mp != innerMP {
		t.Fatalf("capabilities: copier %v/%v, multipart %v/%v", cp, innerCP, mp, innerMP)
	}
	tr, exp := recorder(t)
	ctx, root := tr.Start(context.Background(), "req")
	if _, err := s.Put(ctx, "b/1", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	rc, err := s.Get(ctx, "b/1", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := io.Copy(&out, rc); err != nil || out.String() != "hello" {
		t.Fatalf("read %q, %v", out.String(), err)
	}
	rc.Close()
	if _, err := s.Stat(ctx, "b/missing"); errcode.Of(err) != errcode.NotFound {
		t.Fatalf("stat: %v", err)
	}
	root.End()
	names := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range exp.GetSpans().Snapshots() {
		names[sp.Name()] = sp
	}
	for _, n := range []string{"blob put", "blob get", "blob stat"} {
		if names[n] == nil {
			t.Errorf("no %q span; got %v", n, names)
		}
	}
	if g := names["blob get"]; g != nil {
		found := false
		for _, kv := range g.Attributes() {
			if kv.Key == "coffer.blob.bytes_read" && kv.Value.AsInt64() == 5 {
				found = true
			}
		}
		if !found {
			t.Errorf("blob get: attributes %v", g.Attributes())
		}
	}
	// Outside a request: no span.
	exp.Reset()
	rc, err = s.Get(context.Background(), "b/1", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans outside a request", n)
	}
}

// TestMetaHook: a span per metadata operation, named by the operation.
func TestMetaHook(t *testing.T) {
	tr, exp := recorder(t)
	hook := MetaHook("sqlite")
	if c, end := hook(context.Background(), "get bucket"); c == nil {
		t.Fatal("nil context")
	} else {
		end(nil) // no request: nothing
	}
	ctx, root := tr.Start(context.Background(), "req")
	_, end := hook(ctx, "get bucket")
	end(nil)
	root.End()
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "meta get bucket" {
		t.Fatalf("spans: %v", spans)
	}
}

// fakeProvider is a kms.Provider that fails Unwrap.
type fakeProvider struct{ kms.Provider }

func (fakeProvider) Unwrap(context.Context, kms.KeyRef, []byte) ([]byte, error) {
	return nil, errcode.New(errcode.Unavailable, "key service down")
}

// TestKMS: a key service call under a request is a span, its failure an
// error status.
func TestKMS(t *testing.T) {
	tr, exp := recorder(t)
	p := KMS(fakeProvider{})
	ctx, root := tr.Start(context.Background(), "req")
	if _, err := p.Unwrap(ctx, kms.KeyRef{ID: "k1", Version: "2"}, nil); err == nil {
		t.Fatal("no error")
	}
	root.End()
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "kms unwrap" || spans[0].Status.Code == 0 {
		t.Fatalf("spans: %+v", spans)
	}
}

// TestServerSpan: a traceparent is continued; the span is renamed by the
// route.
func TestServerSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	defer tp.Shutdown(context.Background())
	tr := &Tracing{tp: tp, tracer: tp.Tracer(Scope)}
	r := httptest.NewRequest("GET", "/bucket/secret-key", nil)
	r.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	ctx, span := tr.Server(context.Background(), "s3", r, "RID")
	if TraceID(ctx) != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("trace %q", TraceID(ctx))
	}
	EndServer(span, "GetObject", 200, 0, 10, "")
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "GetObject" || spans[0].Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("spans: %+v", spans)
	}
}

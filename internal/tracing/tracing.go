// Package tracing is Coffer's OpenTelemetry tracing (docs/tracing.md):
// the tracer provider and its OTLP/HTTP exporter (New), the server span
// of a request (Server), child spans (Start: nothing unless the context
// holds a recording span), the decorators the server puts around the
// stores when tracing is on (Blobs, KMS, MetaHook), and the log handler
// that writes each record's trace ID (LogHandler).
//
// Off (no --otel-endpoint) means nothing of this package runs: the server
// keeps a nil *Tracing, wraps nothing and starts no span, so a request
// costs what it cost without tracing. Only Start is called on paths that
// run either way (lock waits), and it returns at once, allocating
// nothing, when the context holds no recording span.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Scope is the instrumentation scope of every span Coffer makes.
const Scope = "github.com/coffer-storage/coffer"

// Options configure New.
type Options struct {
	// Endpoint is the OTLP/HTTP receiver's URL (http or https); its path
	// defaults to /v1/traces.
	Endpoint string
	// SampleRatio is the share of new traces recorded (0 to 1); a
	// request with a sampled traceparent is always recorded.
	SampleRatio float64
	// Version and Node go in the resource (service.version,
	// service.instance.id); the service name is "coffer".
	Version, Node string
	// Log receives the exporter's errors (at warn).
	Log *slog.Logger
}

// Tracing is tracing turned on: the provider, its tracer and the W3C
// trace-context propagator.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TraceContext
}

// New starts tracing as o says: a batching OTLP/HTTP exporter (its queue
// bounded: spans are dropped, never waited for, when the receiver is slow
// or down), a parent-based ratio sampler, and a resource naming the
// service, its version and this node.
func New(ctx context.Context, o Options) (*Tracing, error) {
	u, err := url.Parse(o.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errcode.New(errcode.InvalidArgument, "otel endpoint %q is not an http:// or https:// URL", o.Endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
	if err != nil {
		return nil, fmt.Errorf("otel exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(
		attribute.String("service.name", "coffer"),
		attribute.String("service.version", o.Version),
		attribute.String("service.instance.id", o.Node),
	))
	if err != nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	if o.Log != nil {
		log := o.Log
		// The SDK reports export failures through the global handler
		// only: they go to the server's log (the last server made wins,
		// which in a process of one server is the server).
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			log.Warn("tracing: export failed", "err", err)
		}))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(2*time.Second)),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.SampleRatio))),
	)
	return &Tracing{tp: tp, tracer: tp.Tracer(Scope)}, nil
}

// Tracer is the tracer of Coffer's spans.
func (t *Tracing) Tracer() trace.Tracer { return t.tracer }

// Shutdown exports the spans still queued (bounded by ctx) and stops the
// exporter.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// ForceFlush exports the spans queued so far.
func (t *Tracing) ForceFlush(ctx context.Context) error { return t.tp.ForceFlush(ctx) }

// Server starts the server span of request r on listener api: a child of
// the W3C traceparent r carries, if any, else a new trace. Its name is
// the listener's until SetRoute names it by the route the API matched
// (never the raw path: object keys stay out of span names).
func (t *Tracing) Server(ctx context.Context, api string, r *http.Request, requestID string) (context.Context, trace.Span) {
	if r.Header.Get("Traceparent") != "" {
		ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	// A trace not sampled costs its IDs and a context: the name and the
	// attributes are made only for a span that records them.
	ctx, span := t.tracer.Start(ctx, api, serverKind...)
	if !span.IsRecording() {
		return ctx, span
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	span.SetName(api + " " + r.Method)
	span.SetAttributes(
		attribute.String("http.request.method", r.Method),
		attribute.String("url.scheme", scheme),
		attribute.String("coffer.api", api),
		attribute.String("coffer.request_id", requestID),
		attribute.String("network.peer.address", r.RemoteAddr),
		attribute.String("user_agent.original", r.UserAgent()),
	)
	return ctx, span
}

var serverKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// EndServer names span by route (if the API matched one), records the
// response and ends it. A 5xx is an error; a 4xx is the client's and is
// not (OpenTelemetry's rule for server spans).
func EndServer(span trace.Span, route string, status int, in, out int64, user string) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if route != "" {
		span.SetName(route)
	}
	span.SetAttributes(
		attribute.String("http.route", route),
		attribute.Int("http.response.status_code", status),
		attribute.Int64("http.request.body.size", in),
		attribute.Int64("http.response.body.size", out),
	)
	if user != "" {
		span.SetAttributes(attribute.String("enduser.id", user))
	}
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}

// TraceID is the trace ID of ctx's span in hex ("" if none).
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// noopSpan is what Start returns when it records nothing.
var noopSpan trace.Span = noop.Span{}

// Start starts a child span named name of the recording span ctx holds.
// If ctx holds none (tracing off, or a trace not sampled) it returns ctx
// and a span that records nothing, allocating nothing: code on paths that
// run whether tracing is on or not (waits for locks) calls it freely.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, noopSpan
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name, trace.WithAttributes(attrs...))
}

// End records err (if not nil) on span and ends it. Errors of the
// client's making (not found, precondition failed, ...) are recorded as
// events with their code but leave the span's status unset: only a
// failure of the server or a dependency marks the span as an error.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		code := errcode.Of(err)
		span.SetAttributes(attribute.String("coffer.error_code", code.String()))
		if serverFault(code) {
			span.SetStatus(codes.Error, errcode.Message(err))
		}
	}
	span.End()
}

// serverFault tells the codes that are the server's or a dependency's
// failure from the client's.
func serverFault(c errcode.Code) bool {
	switch c {
	case errcode.Internal, errcode.Unknown, errcode.Unavailable, errcode.StorageFull:
		return true
	}
	return false
}

// LogHandler returns h with each record that is logged with a context
// holding a span given that span's trace_id (and span_id), next to the
// request_id the server's lines carry. Records logged without a context,
// or outside a request, are passed on as they are.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (l logHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
			r = r.Clone()
			r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
	}
	return l.Handler.Handle(ctx, r)
}

func (l logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{l.Handler.WithAttrs(as)}
}

func (l logHandler) WithGroup(name string) slog.Handler {
	return logHandler{l.Handler.WithGroup(name)}
}

// spanName joins a prefix and an operation's name (both fixed strings).
func spanName(prefix, op string) string {
	var b strings.Builder
	b.Grow(len(prefix) + 1 + len(op))
	b.WriteString(prefix)
	b.WriteByte(' ')
	b.WriteString(op)
	return b.String()
}

// MetaHook is the metasql.Trace of a backend (system: "sqlite" or
// "postgresql"): a span per metadata operation a request makes, named
// "meta " and the operation's fixed name (never a key or a value).
func MetaHook(system string) func(ctx context.Context, op string) (context.Context, func(error)) {
	sys := attribute.String("db.system.name", system)
	return func(ctx context.Context, op string) (context.Context, func(error)) {
		ctx, span := Start(ctx, spanName("meta", op), sys, attribute.String("db.operation.name", op))
		if !span.IsRecording() {
			return ctx, endNothing
		}
		return ctx, func(err error) { End(span, err) }
	}
}

func endNothing(error) {}

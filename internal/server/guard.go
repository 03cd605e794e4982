package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/gcfloor"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/ratelimit"
	"github.com/coffer-storage/coffer/internal/tracing"
)

// errorWriter writes an error in a listener's own wire format (problem+json
// on the file API, S3 XML with a RequestId on the S3 API). It is chosen
// where the listener is built, and every guard of that listener uses it.
type errorWriter func(w http.ResponseWriter, r *http.Request, err error)

// guard returns next behind the stack every listener gets, built here
// once so that no listener can miss a protection:
//
//   - X-Content-Type-Options: nosniff on every response, success or
//     error, whatever the handler, and Strict-Transport-Security on the
//     file API's answers over TLS (securityHeaders);
//   - a request ID, metrics and an access-log line (observe);
//   - a write-idle deadline on every response write, sendfile included
//     (a client that stops reading gives its slot back after
//     Config.WriteIdle);
//   - panic recovery (a 500 in the listener's format);
//   - quotas (token buckets per user, access key, share link, anonymous
//     client address; RateLimit headers on every response);
//   - admission: the per-client bound, MaxInFlight and the adaptive class
//     limit, refusals written by errw at once (429/503 + Retry-After);
//   - a minimum upload rate on every request body (slowloris);
//   - Config.RequestTimeout on requests that move no object bytes.
//
// Header size and read timeouts are the http.Server's (newServer), the
// same for every listener. classify tells what a request is (the API
// knows: it routes).
func (s *Server) guard(api string, classify func(*http.Request) httpx.Kind, errw errorWriter, next http.Handler) http.Handler {
	adm := s.admission.Listener(api)
	rate := httpx.MinRate{BytesPerSec: s.cfg.MinUploadRate}
	admitted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := classify(r)
		if k.Route != "" {
			httpx.SetRoute(r.Context(), k.Route)
		}
		client := httpx.ClientIP(r, s.cfg.TrustedProxies)
		httpx.SetClient(r.Context(), client)
		// Tracing on: a span for the admission decision (quotas and the
		// admission controller; neither waits: a refusal is at once).
		var admitSpan trace.Span
		if s.trace != nil && trace.SpanFromContext(r.Context()).IsRecording() {
			_, admitSpan = tracing.Start(r.Context(), "admission", attribute.String("coffer.class", k.Class.String()))
		}
		if s.quotas != nil && !k.Probe {
			// Token-bucket quotas: anonymous requests by client address
			// here; credentialed ones by identity once the API has
			// verified it (httpx.Limit). Probes and scrapes never.
			charge := func(d ratelimit.Dimension, key string) error {
				dec := s.quotas.Take(d, key, r.ContentLength)
				dec.SetHeaders(w.Header())
				return dec.Err
			}
			if !k.Credentials {
				if err := charge(ratelimit.DimAddr, client.String()); err != nil {
					if admitSpan != nil {
						tracing.End(admitSpan, err)
					}
					errw(w, r, err)
					return
				}
			}
			// Identities the API resolves later: a verified user or key,
			// or, for anonymous requests, the share link they go through.
			httpx.SetLimiter(r.Context(), charge)
		}
		t, err := adm.Admit(ratelimit.Request{
			Client: client, Credentials: k.Credentials, Class: k.Class, Probe: k.Probe, Finishes: k.Finishes,
		})
		if admitSpan != nil {
			tracing.End(admitSpan, err)
		}
		if err != nil {
			errw(w, r, err)
			return
		}
		// A node serving requests collects at --heap-floor at the
		// earliest (package gcfloor); the idle trim disarms it. Probes
		// and scrapes do not arm it: they come to idle nodes too, and
		// do not end a quiet period (ratelimit).
		if !k.Probe {
			gcfloor.Arm(uint64(s.cfg.HeapFloor))
		}
		s.inflight.Add(1)
		defer func() {
			t.Done()
			s.inflight.Done()
		}()
		var deadline time.Time
		if !k.Streams && !k.Probe {
			deadline = time.Now().Add(s.cfg.RequestTimeout)
			ctx, cancel := context.WithDeadline(r.Context(), deadline)
			defer cancel()
			r = r.WithContext(ctx)
		}
		if r.Body != nil && r.Body != http.NoBody {
			// Every body is read at a minimum rate, and a request bounded
			// by the request timeout cannot outlive it by trickling.
			r.Body = httpx.NewRateReader(w, r.Body, rate).Until(deadline)
		}
		next.ServeHTTP(w, r)
	})
	return s.securityHeaders(api, s.observe(api, httpx.WriteIdle(s.cfg.WriteIdle, s.recoverer(errw, admitted))))
}

// securityHeaders sets the headers every response of every listener
// carries, before any handler runs: X-Content-Type-Options: nosniff
// (browsers take each Content-Type as it is: a JSON answer or an error
// page is never guessed into HTML). Over TLS, the file API listener (the
// console's origin) also sends Strict-Transport-Security with
// --hsts-max-age, so a browser that has seen it once never again sends
// the console's cookies or tokens over plain HTTP.
func (s *Server) securityHeaders(api string, next http.Handler) http.Handler {
	var hsts string
	if secs := int64(s.cfg.HSTSMaxAge / time.Second); api == "file" && s.certs != nil && secs > 0 {
		hsts = "max-age=" + strconv.FormatInt(secs, 10)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["X-Content-Type-Options"] = httpx.Nosniff
		if hsts != "" && r.TLS != nil {
			h.Set("Strict-Transport-Security", hsts)
		}
		next.ServeHTTP(w, r)
	})
}

// recoverer turns a handler panic into a logged 500 in the listener's
// format instead of a dropped connection (http.ErrAbortHandler keeps its
// meaning).
func (s *Server) recoverer(errw errorWriter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "panic", "request_id", httpx.RequestID(r.Context()), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				errw(w, r, errcode.New(errcode.Internal, "internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// observe gives each request its ID (httpx.SetRequestID: the client's
// sane X-Request-Id or a fresh one, echoed in X-Request-Id) and its Slot,
// records metrics and writes one access-log line per request.
//
// The ID and the Slot are two context values, as RequestIDMiddleware and
// WithSlot make them, in one copy of the request (one copy fewer than the
// two middlewares in a row). The counting body goes on that copy, never
// on the request net/http handed in: net/http recognises an unread
// "Expect: 100-continue" body by the type of that request's Body, and a
// response written before the body was asked for must close the
// connection rather than read the body (which would send 100 Continue).
func (s *Server) observe(api string, next http.Handler) http.Handler {
	inFlight := s.metrics.InFlight(api)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := httpx.SetRequestID(w, r)
		ctx, slot := httpx.WithSlot(httpx.WithRequestID(r.Context(), id))
		// Tracing on: the request's server span (a child of the client's
		// traceparent, if any), its trace ID in the slot for error
		// responses, and in X-Coffer-Trace-Id when the trace is recorded
		// (the error writers send it on every error). Off: nothing at all.
		var span trace.Span
		if s.trace != nil {
			ctx, span = s.trace.Server(ctx, api, r, id)
			sc := span.SpanContext()
			slot.Trace = sc.TraceID()
			if sc.IsSampled() {
				w.Header()["X-Coffer-Trace-Id"] = []string{sc.TraceID().String()}
			}
		}
		r = r.WithContext(ctx)
		rec := &httpx.Recorder{ResponseWriter: w}
		var body *httpx.CountingBody
		if r.Body != nil && r.Body != http.NoBody {
			body = &httpx.CountingBody{ReadCloser: r.Body}
			r.Body = body
		}
		inFlight.Inc()
		// A handler may abort its response (http.ErrAbortHandler, the only
		// panic recoverer passes on: a download whose bytes failed):
		// counted and logged like any request, then passed on to net/http,
		// which closes the connection.
		var aborted any
		func() {
			defer func() { aborted = recover() }()
			next.ServeHTTP(rec, r)
		}()
		inFlight.Dec()
		if aborted != nil {
			defer panic(aborted)
		}
		d := time.Since(start)
		status := rec.Status
		if status == 0 {
			status = http.StatusOK
		}
		var in int64
		if body != nil {
			in = body.N
		}
		s.metrics.Observe(api, slot.Route, status, d, in, rec.Written)
		if span != nil {
			if api == "s3" && s.s3Bucket != nil && span.IsRecording() {
				// The bucket is an attribute; the object key never is.
				span.SetAttributes(attribute.String("coffer.bucket", s.s3Bucket(r)))
			}
			tracing.EndServer(span, slot.Route, status, in, rec.Written, slot.User)
		}
		// Refusals under load (503) are the node doing its job, counted
		// in coffer_http_rejected_total: logging each at warn would make
		// the log an overload of its own.
		lvl := s.accessLevel
		if status >= 500 && status != http.StatusServiceUnavailable {
			lvl = slog.LevelWarn
		}
		s.log.LogAttrs(ctx, lvl, "request",
			slog.String("request_id", httpx.RequestID(ctx)),
			slog.String("api", api),
			slog.String("method", r.Method),
			slog.String("path", logPath(api, r.URL.Path)),
			slog.String("route", slot.Route),
			slog.Int("status", status),
			slog.Int64("bytes_in", in),
			slog.Int64("bytes_out", rec.Written),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000),
			slog.String("remote", r.RemoteAddr),
			slog.String("user", slot.User),
			slog.String("share", slot.Share),
		)

	})
}

// logPath is the path the access log shows: a share link's token is a
// credential, so /s/{token}/... is logged as /s/-/... (the share field
// names the link by its ID). A path with an empty, "." or ".." segment
// could hide a token where that prefix test does not look (//s/TOKEN,
// /s/./TOKEN, /s//TOKEN, /api/v1/../s/TOKEN, /s/TOKEN/../../api/v1/me):
// it is logged in its cleaned form (path.Clean, a trailing "/" kept),
// with every segment that follows an "s" segment cut.
func logPath(api, p string) string {
	if api != "file" {
		return p
	}
	if clean := cleanPath(p); clean != p {
		segs := strings.Split(clean, "/")
		out := make([]string, len(segs))
		for i, seg := range segs {
			if out[i] = seg; i > 0 && segs[i-1] == "s" && seg != "" {
				out[i] = "-"
			}
		}
		return strings.Join(out, "/")
	}
	rest, ok := strings.CutPrefix(p, "/s/")
	if !ok {
		return p
	}
	if _, after, found := strings.Cut(rest, "/"); found {
		return "/s/-/" + after
	}
	return "/s/-"
}

// cleanPath is path.Clean of an absolute request path, keeping a
// trailing "/".
func cleanPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		return p // "*" (OPTIONS *)
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// newAdmission builds the node's admission controller from the config and
// exports its state as metrics.
func (s *Server) newAdmission() *ratelimit.Controller {
	c := ratelimit.New(ratelimit.Config{
		MaxInFlight: s.cfg.MaxInFlight,
		PerClient:   s.cfg.MaxInFlightPerClient, // 0: unbounded, for both
		Fixed:       s.cfg.Admission == "fixed",
		Target:      s.cfg.OverloadTarget,
		MinLimit:    s.cfg.AdmissionMinLimit(),
		Idle:        s.cfg.IdleTrim,
		OnIdle:      s.onIdle(),
	}, func(api string, class ratelimit.Class, reason ratelimit.Reason) {
		s.metrics.Rejected.WithLabelValues(api, class.String(), string(reason)).Inc()
	})
	s.metrics.GaugeFunc("coffer_admission_sched_delay_seconds",
		"CPU scheduling delay (the quantile adaptive admission compares with --overload-target) over the last interval.",
		func() float64 { return c.Delay().Seconds() })
	s.metrics.CounterFunc("coffer_idle_trims_total",
		"Times this node gave its free memory back after --idle-trim without a request.",
		func() float64 { return float64(s.idleTrims.Load()) })
	s.metrics.GaugeFunc("coffer_admission_runnable_per_cpu",
		"Goroutines waiting for a CPU, per CPU, averaged over the last admission interval.",
		func() float64 { return c.Runnable() })
	return c
}

// admissionMetrics exports a listener's class limits and in-flight counts.
func (s *Server) admissionMetrics(api string) {
	l := s.admission.Listener(api)
	for _, class := range []ratelimit.Class{ratelimit.Control, ratelimit.Read, ratelimit.Write} {
		s.metrics.GaugeFunc("coffer_admission_limit", "Adaptive concurrency limit by API and class.",
			func() float64 { return float64(l.Limit(class)) }, "api", api, "class", class.String())
		s.metrics.GaugeFunc("coffer_admission_in_flight", "Admitted requests in flight by API and class.",
			func() float64 { return float64(l.InFlight(class)) }, "api", api, "class", class.String())
		// Every refusal counter exists from the start, at 0: rate() and
		// the dashboard see the first refusal as an increase, not as a
		// series appearing.
		for _, reason := range []ratelimit.Reason{ratelimit.ReasonPerClient, ratelimit.ReasonMaxInFlight, ratelimit.ReasonOverload} {
			s.metrics.Rejected.WithLabelValues(api, class.String(), string(reason))
		}
	}
}

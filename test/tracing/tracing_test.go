// Package tracing tests Coffer's OpenTelemetry tracing end to end: the
// real binary exports its spans over OTLP/HTTP to a receiver in this
// process that decodes the wire format (go.opentelemetry.io/proto/otlp),
// and the spans, the trace IDs in error responses and log lines, and the
// incoming traceparent are checked. Off, none of it happens.
package tracing

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/coffer-storage/coffer/test/testenv"
)

// span is one exported span, flattened.
type span struct {
	Name           string
	Kind           tracepb.Span_SpanKind
	TraceID        string
	SpanID         string
	Parent         string
	Attrs          map[string]string
	Service, Scope string
}

// collector is an OTLP/HTTP trace receiver on loopback.
type collector struct {
	URL string
	mu  sync.Mutex
	got []span
	n   int // export requests
	bad []string
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(c.serve)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c.URL = "http://" + ln.Addr().String()
	return c
}

func (c *collector) serve(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	var req collectorpb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(data, &req)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Method != "POST" || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
		c.bad = append(c.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+errString(err))
		http.Error(w, "bad export", 400)
		return
	}
	c.n++
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				attrs := map[string]string{}
				for _, kv := range sp.Attributes {
					v := kv.GetValue()
					switch {
					case v.GetStringValue() != "":
						attrs[kv.Key] = v.GetStringValue()
					default:
						attrs[kv.Key] = strings.TrimSpace(strings.TrimPrefix(v.String(), "int_value:"))
					}
				}
				c.got = append(c.got, span{
					Name: sp.Name, Kind: sp.Kind, TraceID: hex.EncodeToString(sp.TraceId), SpanID: hex.EncodeToString(sp.SpanId),
					Parent: hex.EncodeToString(sp.ParentSpanId), Attrs: attrs, Service: service, Scope: ss.GetScope().GetName(),
				})
			}
		}
	}
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (c *collector) spans() []span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]span(nil), c.got...)
}

// wait polls until cond holds for the spans received (the exporter sends
// a batch every 2 s), or fails t after a minute.
func (c *collector) wait(t *testing.T, what string, cond func([]span) bool) []span {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := c.spans()
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s among %d spans received:\n%s", what, len(got), dump(got))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func dump(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString(s.TraceID + " " + s.SpanID + " <- " + s.Parent + " " + s.Kind.String() + " " + s.Name + "\n")
	}
	return b.String()
}

// server returns the server span of trace with the route name.
func server(spans []span, traceID, name string) (span, bool) {
	for _, s := range spans {
		if s.TraceID == traceID && s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == name {
			return s, true
		}
	}
	return span{}, false
}

// descendants are the spans of trace under root (any depth).
func descendants(spans []span, root span) []span {
	under := map[string]bool{root.SpanID: true}
	var out []span
	for changed := true; changed; {
		changed = false
		for _, s := range spans {
			if s.TraceID == root.TraceID && under[s.Parent] && !under[s.SpanID] {
				under[s.SpanID] = true
				out = append(out, s)
				changed = true
			}
		}
	}
	return out
}

func hasPrefix(spans []span, prefix string) bool {
	for _, s := range spans {
		if strings.HasPrefix(s.Name, prefix) {
			return true
		}
	}
	return false
}

type s3Error struct {
	Code      string
	RequestID string `xml:"RequestId"`
	TraceID   string `xml:"TraceId"`
}

// secretKey is an object key no span name or attribute may show.
const secretKey = "patient-7f3a/diagnosis.pdf"

func TestTracingOn(t *testing.T) {
	col := newCollector(t)
	srv := testenv.Start(t, "--otel-endpoint", col.URL, "--otel-sample-ratio", "1", "--log-format", "json", "--log-level", "info")
	user := srv.NewUser(t)
	key := testenv.NewS3Key(t, user)
	bucket := user.Bucket

	// A PUT over S3 of a body past --inline-max (a blob, not inline bytes).
	body := make([]byte, 200<<10)
	rand.Read(body)
	put := testenv.MustS3(t, key, srv.S3URL, "PUT", "/"+bucket+"/"+secretKey, body, 200)
	putTrace := put.Header.Get("X-Coffer-Trace-Id")
	if len(putTrace) != 32 {
		t.Fatalf("PUT: X-Coffer-Trace-Id %q", putTrace)
	}

	// A GET over S3 continuing the client's trace (W3C traceparent).
	clientTrace, clientSpan := "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	get := testenv.MustS3(t, key, srv.S3URL, "GET", "/"+bucket+"/"+secretKey, nil, 200,
		"Traceparent", "00-"+clientTrace+"-"+clientSpan+"-01")
	if !bytes.Equal(get.Body, body) {
		t.Fatal("GET: wrong bytes")
	}
	if got := get.Header.Get("X-Coffer-Trace-Id"); got != clientTrace {
		t.Fatalf("GET with traceparent: trace ID %q, want the client's %q", got, clientTrace)
	}

	// A file API request.
	resp := user.Do(t, "GET", testenv.FileURL(bucket, secretKey), nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("file API GET: %d", resp.StatusCode)
	}
	fileTrace := resp.Header.Get("X-Coffer-Trace-Id")

	// Failing requests: their error bodies carry the trace ID next to the
	// request ID.
	miss := testenv.MustS3(t, key, srv.S3URL, "GET", "/"+bucket+"/missing-"+secretKey, nil, 404)
	var xe s3Error
	if err := xml.Unmarshal(miss.Body, &xe); err != nil {
		t.Fatalf("S3 error body %q: %v", miss.Body, err)
	}
	if xe.Code != "NoSuchKey" || xe.RequestID == "" || len(xe.TraceID) != 32 || xe.TraceID != miss.Header.Get("X-Coffer-Trace-Id") {
		t.Fatalf("S3 error: %+v, header trace %q\n%s", xe, miss.Header.Get("X-Coffer-Trace-Id"), miss.Body)
	}
	if i, j := bytes.Index(miss.Body, []byte("<RequestId>")), bytes.Index(miss.Body, []byte("<TraceId>")); i < 0 || j < i {
		t.Errorf("TraceId is not after RequestId: %s", miss.Body)
	}
	presp := user.Do(t, "GET", testenv.FileURL(bucket, "missing-"+secretKey), nil)
	var prob struct {
		Code      string `json:"code"`
		RequestID string `json:"request_id"`
		TraceID   string `json:"trace_id"`
	}
	json.NewDecoder(presp.Body).Decode(&prob)
	presp.Body.Close()
	if presp.StatusCode != 404 || prob.RequestID == "" || len(prob.TraceID) != 32 || prob.TraceID != presp.Header.Get("X-Coffer-Trace-Id") {
		t.Fatalf("problem+json: %d %+v", presp.StatusCode, prob)
	}

	spans := col.wait(t, "server spans of the five requests", func(s []span) bool {
		_, a := server(s, putTrace, "PutObject")
		_, b := server(s, clientTrace, "GetObject")
		_, c := server(s, xe.TraceID, "GetObject")
		n := 0
		for _, sp := range s {
			if sp.Kind == tracepb.Span_SPAN_KIND_SERVER && (sp.TraceID == fileTrace || sp.TraceID == prob.TraceID) {
				n++
			}
		}
		return a && b && c && n == 2
	})

	// PUT: a server span named by the operation, with metadata and blob
	// spans under it in the same trace.
	ps, _ := server(spans, putTrace, "PutObject")
	if ps.Service != "coffer" || ps.Attrs["http.response.status_code"] != "200" || ps.Attrs["coffer.api"] != "s3" || ps.Attrs["coffer.bucket"] != bucket {
		t.Errorf("PUT server span: %+v", ps)
	}
	under := col.wait(t, "PUT's metadata and blob spans", func(s []span) bool {
		d := descendants(s, ps)
		return hasPrefix(d, "meta ") && hasPrefix(d, "blob put") && hasPrefix(d, "admission")
	})
	system := "sqlite"
	if testenv.ScaleOut() {
		system = "postgresql"
	}
	for _, sp := range descendants(under, ps) {
		if strings.HasPrefix(sp.Name, "meta ") && sp.Attrs["db.system.name"] != system {
			t.Errorf("%s: db.system.name %q, want %q", sp.Name, sp.Attrs["db.system.name"], system)
		}
	}

	// GET with traceparent: the server span is the client span's child.
	gs, _ := server(spans, clientTrace, "GetObject")
	if gs.Parent != clientSpan {
		t.Errorf("GET server span's parent %q, want the client's span %q", gs.Parent, clientSpan)
	}
	col.wait(t, "GET's blob read span", func(s []span) bool {
		d := descendants(s, gs)
		return hasPrefix(d, "blob get")
	})

	// The file API's server span is named by its route.
	for _, sp := range col.spans() {
		if sp.TraceID == fileTrace && sp.Kind == tracepb.Span_SPAN_KIND_SERVER {
			if sp.Attrs["coffer.api"] != "file" || !strings.HasPrefix(sp.Name, "GET /api/") || strings.Contains(sp.Name, bucket) {
				t.Errorf("file API server span: %q %+v", sp.Name, sp.Attrs)
			}
		}
	}
	// The failing request's span is the one whose ID the error showed.
	es, _ := server(spans, xe.TraceID, "GetObject")
	if es.Attrs["http.response.status_code"] != "404" || es.Attrs["coffer.request_id"] != xe.RequestID {
		t.Errorf("failing GET's span: %+v (error said request %s)", es, xe.RequestID)
	}

	// No span name or attribute shows an object key.
	for _, sp := range col.spans() {
		if strings.Contains(sp.Name, "patient") || strings.Contains(sp.Name, "diagnosis") {
			t.Errorf("span name shows the object key: %q", sp.Name)
		}
		for k, v := range sp.Attrs {
			if strings.Contains(v, "patient") || strings.Contains(v, "diagnosis") {
				t.Errorf("span %q attribute %s shows the object key: %q", sp.Name, k, v)
			}
		}
	}

	// Every log line of a request carries its trace ID next to its
	// request ID: the access lines of the failing requests here.
	deadline := time.Now().Add(10 * time.Second)
	for {
		logs := srv.Stderr()
		okS3, okFile := logLine(logs, xe.RequestID, xe.TraceID), logLine(logs, prob.RequestID, prob.TraceID)
		if okS3 && okFile {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with request %s and trace %s (s3 %v) or request %s and trace %s (file %v):\n%s",
				xe.RequestID, xe.TraceID, okS3, prob.RequestID, prob.TraceID, okFile, logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.bad) > 0 {
		t.Errorf("malformed exports: %q", col.bad)
	}
}

// logLine reports whether a JSON log line has request_id and trace_id.
func logLine(logs, requestID, traceID string) bool {
	for line := range strings.Lines(logs) {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if rec["request_id"] == requestID && rec["trace_id"] == traceID {
			return true
		}
	}
	return false
}

func TestTracingOff(t *testing.T) {
	col := newCollector(t) // listening, and named nowhere
	srv := testenv.Start(t, "--log-format", "json", "--log-level", "info")
	user := srv.NewUser(t)
	key := testenv.NewS3Key(t, user)
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	testenv.MustS3(t, key, srv.S3URL, "PUT", "/"+user.Bucket+"/k", []byte("hello"), 200, "Traceparent", tp)
	get := testenv.MustS3(t, key, srv.S3URL, "GET", "/"+user.Bucket+"/k", nil, 200, "Traceparent", tp)
	miss := testenv.MustS3(t, key, srv.S3URL, "GET", "/"+user.Bucket+"/missing", nil, 404, "Traceparent", tp)
	presp := user.Do(t, "GET", testenv.FileURL(user.Bucket, "missing"), nil, "Traceparent", tp)
	pbody, _ := io.ReadAll(presp.Body)
	presp.Body.Close()
	for name, h := range map[string]http.Header{"GET": get.Header, "S3 error": miss.Header, "file API error": presp.Header} {
		if v := h.Get("X-Coffer-Trace-Id"); v != "" {
			t.Errorf("%s: X-Coffer-Trace-Id %q with tracing off", name, v)
		}
	}
	if bytes.Contains(miss.Body, []byte("TraceId")) || bytes.Contains(pbody, []byte("trace_id")) {
		t.Errorf("error bodies name a trace with tracing off:\n%s\n%s", miss.Body, pbody)
	}
	if strings.Contains(srv.Stderr(), "trace_id") || strings.Contains(srv.Stderr(), "4bf92f3577b34da6a3ce929d0e0e4736") {
		t.Errorf("log lines name a trace with tracing off:\n%s", srv.Stderr())
	}
	time.Sleep(3 * time.Second) // an exporter, if one ran, would have sent by now
	if n := len(col.spans()); n != 0 {
		t.Errorf("%d spans received with tracing off", n)
	}
}

// Package server is Coffer's composition root: it builds the backends named
// by the Config (an explicit switch, no registration magic), stacks the
// decorators, mounts the APIs on their listeners, and runs them until the
// context ends, then shuts down gracefully.
//
// # Shutdown
//
// On cancellation the listener stops accepting, in-flight requests get
// Config.ShutdownTimeout to finish, then their contexts are cancelled (an
// upload cancelled before its commit leaves nothing visible), and only when
// every handler has returned are the stores closed.
//
// # TLS
//
// With Config.TLSCert and TLSKey, the file and S3 listeners serve HTTPS
// (TLS 1.2 at least, HTTP/2 offered by ALPN) from the same guard stack and
// http.Server settings as plain HTTP: TLS wraps the listener, nothing
// else changes. The handshake is bounded by the http.Server's
// ReadHeaderTimeout (net/http applies the smallest of its read and header
// timeouts to it), and plain HTTP sent to a TLS listener gets a 400. The
// certificate is served by tlscert.Reloader: re-read when its files change
// and on ReloadTLS (SIGHUP), a bad new pair keeping the old one in service.
// The debug listener (loopback only) stays plain HTTP.
package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"github.com/coffer-storage/coffer/internal/audit"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/cacheblob"
	"github.com/coffer-storage/coffer/internal/blob/diskblob"
	"github.com/coffer-storage/coffer/internal/blob/s3blob"
	"github.com/coffer-storage/coffer/internal/buildinfo"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/console"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/gateway"
	"github.com/coffer-storage/coffer/internal/httpapi"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/kms"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
	"github.com/coffer-storage/coffer/internal/metacache"
	"github.com/coffer-storage/coffer/internal/metrics"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/ratelimit"
	"github.com/coffer-storage/coffer/internal/replicate"
	"github.com/coffer-storage/coffer/internal/s3api"
	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
	"github.com/coffer-storage/coffer/internal/tlscert"
	"github.com/coffer-storage/coffer/internal/tracing"
)

// Server is a running Coffer node.
type Server struct {
	cfg config.Config
	log *slog.Logger
	// stores are the metadata and blob stores as OpenStores opened them;
	// meta and blobs are what the services use (blobs through the blob
	// read cache when cfg.CacheOn()).
	stores *Stores
	meta   meta.Stores
	blobs  blob.Store
	// blobCache is the blob read cache (nil: --cache off), in front of
	// blobs when cfg.CacheOn(), and of gateway buckets' reads.
	blobCache *cacheblob.Cache
	objects   *object.Service
	keys      *kms.Keys // nil: no key provider (encryption off and none configured)
	auth      *auth.Service
	metrics   *metrics.Metrics
	handler   http.Handler
	s3        http.Handler
	certs     *tlscert.Reloader // nil: plain HTTP
	audit     *audit.Logger     // nil: the audit log off

	// replica streams meta.db and new blobs to --replicate-to (nil: off).
	replica *replicate.Replicator
	// trace is tracing (nil: off, --otel-endpoint empty: no span is
	// started and nothing is wrapped).
	trace *tracing.Tracing
	// s3Bucket names the bucket an S3 request addresses (path or virtual
	// host), for the attributes of a recorded server span.
	s3Bucket func(*http.Request) string

	s3URLMu sync.Mutex
	s3URL   string // base URL of the S3 API, known once it listens

	inflight  sync.WaitGroup
	admission *ratelimit.Controller
	idleTrims atomic.Int64      // memory given back after --idle-trim without requests (idle.go)
	quotas    *ratelimit.Quotas // nil when no quota is set

	// accessLevel is the level of the access log (one line per request):
	// info for JSON logs (a log pipeline's record of every request),
	// debug for text logs (a terminal, where it would drown the events).
	accessLevel slog.Level
	// changes carries invalidations of the account and metadata caches;
	// on PostgreSQL Run feeds it the store's announcements
	// (meta.Changes).
	changes *metacache.Bus
	started time.Time
}

// New opens the stores and builds every component.
//
// # Starting, and failing to
//
// A start that fails leaves nothing half-made, and the next start takes
// what it left as its own:
//
//  1. Everything that can be checked without making a file is checked
//     first (preflight): the configuration, the TLS pair, the blob store
//     and gateway URLs, an explicit --kms, an existing server key file.
//  2. The shared stores of the scale-out shape (PostgreSQL, the S3 store)
//     are opened before anything local is made.
//  3. What is made locally is made whole and found again: the data folder
//     and its subfolders, meta.db (migrations in transactions), the
//     server key and the default keyring (atomicfile: whole or absent).
//  4. The metadata store records the server key's fingerprint last, when
//     everything else has opened, so that a failed start never binds a
//     cluster to a key.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*Server, error) {
	return newServer(ctx, cfg, log, nil)
}

// newServer is New with the blob store wrapped by wrapBlobs, if not nil
// (tests: blob/faultblob).
func newServer(ctx context.Context, cfg config.Config, log *slog.Logger, wrapBlobs func(blob.Store) blob.Store) (_ *Server, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var certs *tlscert.Reloader
	if cfg.TLSCert != "" {
		// Before anything is created or opened: a server that cannot
		// serve its certificate does not start.
		c, err := tlscert.New(cfg.TLSCert, cfg.TLSKey, log, tlscert.Options{})
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		certs = c
	}
	var tr *tracing.Tracing
	if cfg.OTelEndpoint != "" {
		// Tracing on: every log line written with a request's context
		// carries its trace ID, from here on (every service gets log).
		version, _, _ := BuildInfo()
		host, _ := os.Hostname()
		if tr, err = tracing.New(ctx, tracing.Options{Endpoint: cfg.OTelEndpoint, SampleRatio: cfg.OTelSampleRatio, Version: version, Node: host, Log: log}); err != nil {
			return nil, fmt.Errorf("--otel-endpoint: %w", err)
		}
		log = slog.New(tracing.LogHandler(log.Handler()))
	}
	s := &Server{cfg: cfg, log: log, metrics: metrics.New(), accessLevel: slog.LevelInfo, changes: metacache.NewBus(), started: time.Now(), trace: tr}
	s.changes.SetLease(cfg.MetaCacheLease)
	if certs != nil {
		s.metrics.GaugeFunc("coffer_tls_cert_expiry_timestamp_seconds", "When the TLS certificate being served expires (its leaf's NotAfter, unix seconds; follows reloads).",
			func() float64 { return float64(certs.Certificate().Leaf.NotAfter.Unix()) })
	}
	defer func() {
		if err != nil {
			s.Close() // what was opened; what was made stays, whole
		}
	}()
	if cfg.LogFormat == "text" {
		s.accessLevel = slog.LevelDebug
	}
	s.certs = certs
	keyFile := KeyFile{Data: cfg.Data, File: cfg.ServerKeyFile, Create: true}
	if err := preflight(cfg, keyFile); err != nil {
		return nil, err
	}
	if !kms.InDataDir(cfg.KMS) {
		// Any provider but the default keyring makes no file: open it
		// before anything is made (a bad URL, a missing keyring file).
		if s.keys, err = openKeys(ctx, cfg, log, tr != nil); err != nil {
			return nil, err
		}
	}
	metaKind, blobKind := "sqlite", "disk"
	if cfg.Meta != "" {
		metaKind = "postgres"
	}
	if cfg.Blob != "" {
		blobKind = "s3"
	}
	// The stores: the shared ones of the scale-out shape (PostgreSQL, the
	// S3 store) first, then the data folder and what lives in it (SQLite,
	// the local disk), then the cache of bucket and object records, whose
	// every write drops a record here and, before it returns, on every
	// node.
	prepared := false
	prepare := func() error { prepared = true; return PrepareDataDir(cfg.Data, log) }
	so := StoreOptions{Meta: true, Blobs: true, PrepareData: prepare, Bus: s.changes, Observe: s.metrics.MetaOp}
	if tr != nil {
		so.Trace = func(system string) metasql.Trace { return tracing.MetaHook(system) }
	}
	if s.stores, err = OpenStores(ctx, cfg, so); err != nil {
		return nil, err
	}
	if !prepared {
		// Every shared store answered: now the data folder.
		if err := prepare(); err != nil {
			return nil, err
		}
	}
	// Innermost: coffer_blob_op_duration_seconds times the store itself
	// (not the cache in front of it, nor the replica's queue).
	s.meta, s.blobs = s.stores.Meta, blob.Observed(s.stores.Blobs, s.metrics.BlobOp)
	if wrapBlobs != nil {
		s.blobs = wrapBlobs(s.blobs)
	}
	if cfg.ReplicateTo != "" {
		// Before any write: every blob written from here on is queued for
		// the replica (Wrap), and those already there are found at start.
		if err := s.startReplica(ctx); err != nil {
			return nil, err
		}
	}
	if st := s.stores.Pool; st != nil {
		s.metrics.GaugeFunc("coffer_meta_pool_acquired", "PostgreSQL connections in use.", func() float64 { return float64(st().AcquiredConns) })
		s.metrics.GaugeFunc("coffer_meta_pool_total", "PostgreSQL connections open.", func() float64 { return float64(st().TotalConns) })
		s.metrics.CounterFunc("coffer_meta_pool_waits_total", "Metadata operations that waited for a PostgreSQL connection.", func() float64 { return float64(st().EmptyAcquireCount) })
		s.metrics.CounterFunc("coffer_meta_pool_timeouts_total", "Metadata operations that gave up waiting for a PostgreSQL connection (503).", func() float64 { return float64(st().CanceledAcquireCount) })
		s.metrics.CounterFunc("coffer_meta_queries_total", "Statements sent to PostgreSQL (each statement of a transaction, BEGIN and COMMIT included).", func() float64 { return float64(st().Queries) })
	}
	if s.meta.Changes != nil {
		// Every node listens for the others' changes (Run). Until it
		// does, other nodes' changes may be missed: the caches keep
		// nothing (see metacache.Bus.SetListening).
		s.changes.SetListening(false)
	}
	if cs := s.stores.MetaCache; cs != nil {
		s.cacheMetrics("bucket", cs.Buckets().Stats)
		s.cacheMetrics("object", cs.Objects().Stats)
	}
	// The blob cache is open unless --cache off: gateway buckets' reads
	// always use it, the blob store only when cfg.CacheOn().
	if cfg.GatewayCacheOn() {
		if err := s.openBlobCache(cfg, log); err != nil {
			return nil, err
		}
	}

	if tr != nil {
		// Outermost, so that a span shows what the object service asked
		// for, a cache hit included.
		s.blobs = tracing.Blobs(s.blobs)
	}
	if kms.InDataDir(cfg.KMS) {
		// The default keyring in the data folder (made on first use in
		// the embedded shape).
		if s.keys, err = openKeys(ctx, cfg, log, tr != nil); err != nil {
			return nil, err
		}
	}
	if s.audit, err = openAudit(cfg, log); err != nil {
		return nil, err
	}
	s.auditMetrics()
	ocfg := object.ConfigFrom(cfg)
	ocfg.Audit = s.audit
	if d, ok := s.stores.Blobs.(*diskblob.Store); ok {
		// The local disk: this process is its only reader, so the
		// janitor may reclaim promptly when it fills (object/pressure.go).
		ocfg.Pressure, ocfg.Room = d.Pressure, d.Room
		s.metrics.GaugeFunc("coffer_data_disk_free_bytes", "Bytes free on the data folder's file system.", func() float64 {
			free, _ := d.Free()
			return float64(free)
		})
		s.metrics.GaugeFunc("coffer_data_disk_size_bytes", "Size of the data folder's file system (used plus free for unprivileged users: free / size is the fraction left).", func() float64 {
			size, _ := d.Size()
			return float64(size)
		})
		s.metrics.GaugeFunc("coffer_data_disk_pressure", "1 while the data folder's disk is short of space (below twice --min-free-space, or full in the last minute): deleted files are reclaimed at once.", func() float64 {
			if d.Pressure() {
				return 1
			}
			return 0
		})
	}
	if s.keys != nil {
		ocfg.Keys = s.keys
		ks := s.keys.Stats()
		for _, c := range []struct {
			op          string
			calls, errs *atomic.Int64
		}{{"wrap", &ks.Wraps, &ks.WrapErrors}, {"unwrap", &ks.Unwraps, &ks.UnwrapErrors}, {"rotate", &ks.Rotations, &ks.RotationErrors}} {
			s.metrics.CounterFunc("coffer_kms_calls_total", "Calls this node made to the key service (wrap and unwrap of intermediate keys, rotation); cached keys make none.",
				func() float64 { return float64(c.calls.Load()) }, "op", c.op)
			s.metrics.CounterFunc("coffer_kms_errors_total", "Calls to the key service that failed (unreachable, denied, unknown key).",
				func() float64 { return float64(c.errs.Load()) }, "op", c.op)
		}
	}
	// Gateway reads go through the blob cache too (gateway imports
	// cacheblob; object never sees it).
	ocfg.OpenGateway = gateway.Opener{Cache: s.blobCache}.Open
	gws := &gatewayAdmin{accounts: s.meta.Accounts, buckets: s.meta.Buckets, check: func(ctx context.Context, u string) error { _, err := gateway.Open(ctx, u); return err }}
	if err := gws.registerGateways(ctx, cfg.Gateways); err != nil {
		return nil, err
	}
	// Last: the store records the key's fingerprint on its first start.
	key, err := OpenKey(ctx, s.meta.Cluster, keyFile)
	if err != nil {
		return nil, err
	}
	// The account service (made below, before any request) caches each
	// user's quota with its state, invalidated on every quota change.
	ocfg.Unlimited = func(ctx context.Context, id string) (bool, error) { return s.auth.Users.Unlimited(ctx, id) }
	s.objects = object.New(object.StoresOf(s.meta), s.blobs, ocfg, log)
	js := s.objects.JobStats()
	registerLifecycleMetrics(s.metrics, s.objects.Lifecycle().Stats())
	registerIntegrityMetrics(s.metrics, s.objects.ReadStats(), s.objects.Scrubber().Stats())
	registerBackupMetrics(s.metrics, s.meta.Reclamation)
	s.metrics.CounterFunc("coffer_kms_rewrapped_keys_total", "Data keys this node re-wrapped under the current KEK version (rewrap job).",
		func() float64 { return float64(js.Rewrapped.Load()) })
	s.metrics.CounterFunc("coffer_kms_encrypted_objects_total", "Plaintext objects this node encrypted (coffer encrypt job).",
		func() float64 { return float64(js.Encrypted.Load()) })
	s.metrics.CounterFunc("coffer_kms_job_skipped_total", "Rows encryption jobs on this node found current already, or changed under them (a concurrent write won).",
		func() float64 { return float64(js.Skipped.Load()) })
	s.metrics.CounterFunc("coffer_kms_job_failed_total", "Rows encryption jobs on this node could not change (left as they are; see the job's last_error).",
		func() float64 { return float64(js.Failed.Load()) })
	s.metrics.CounterFunc("coffer_kms_job_pages_total", "Pages of encryption jobs this node finished (cursor saved).",
		func() float64 { return float64(js.Pages.Load()) })
	s.metrics.GaugeFunc("coffer_kms_job_running", "1 while this node works on an encryption job (re-wrap or encrypt).",
		func() float64 { return float64(js.Running.Load()) })
	for _, kind := range []string{meta.JobRewrap, meta.JobEncrypt} {
		s.metrics.GaugeFunc("coffer_kms_job_done_rows", "Rows changed by the job of this kind, as this node last saved it (0: none seen).",
			func() float64 { j, _ := js.Last(kind); return float64(j.Done) }, "kind", kind)
		s.metrics.GaugeFunc("coffer_kms_job_finished", "1 if the job of this kind, as this node last saved it, is done.",
			func() float64 {
				if j, ok := js.Last(kind); ok && j.State == meta.JobDone {
					return 1
				}
				return 0
			}, "kind", kind)
	}
	jan := s.objects.JanitorStats()
	s.metrics.CounterFunc("coffer_janitor_reclaimed_blobs_total", "Blobs this node's janitor deleted from the garbage queue (deleted and overwritten objects, after the grace period).",
		func() float64 { return float64(jan.Reclaimed.Load()) })
	s.metrics.CounterFunc("coffer_janitor_orphan_blobs_total", "Orphan blobs (no metadata row: a crash between write and commit) this node's janitor deleted.",
		func() float64 { return float64(jan.Orphans.Load()) })
	s.metrics.CounterFunc("coffer_janitor_aborted_uploads_total", "Expired unfinished uploads this node's janitor aborted.",
		func() float64 { return float64(jan.AbortedUploads.Load()) })
	s.metrics.CounterFunc("coffer_janitor_failures_total", "Janitor passes on this node that failed (logged; retried next pass).",
		func() float64 { return float64(jan.Failures.Load()) })
	s.metrics.GaugeFunc("coffer_janitor_last_run_timestamp_seconds", "When this node's janitor last finished a pass (unix seconds; 0: not yet).",
		func() float64 { return float64(jan.LastRun.Load()) })
	s.metrics.GaugeFunc("coffer_upload_staged_bytes", "Bytes this node has received into blobs not committed yet (uploads in flight).",
		func() float64 { return float64(s.objects.StagedBytes()) })
	acfg := auth.ConfigFrom(cfg)
	acfg.Bus = s.changes
	acfg.Audit = s.audit
	if cfg.ClockOffset != 0 {
		log.Warn("TEST ONLY: the clock of the object and account services is skewed by "+cfg.ClockOffset.String()+" (--clock-offset, COFFER_CLOCK_OFFSET); never set this in production",
			"clock_offset", cfg.ClockOffset.String())
	}
	s.auth = auth.NewService(auth.StoresOf(s.meta), key, acfg)
	s.cacheMetrics("user", func() metacache.Stats { u, _ := s.auth.CacheStats(); return u })
	s.cacheMetrics("key", func() metacache.Stats { _, k := s.auth.CacheStats(); return k })
	s.cacheMetrics("token", s.auth.TokenCacheStats)
	s.metrics.CounterFunc("coffer_cache_changes_total", "Changes that invalidated this node's account caches (its own and other nodes').",
		func() float64 { return float64(s.changes.Changes()) })
	h := s.auth.Hasher()
	s.metrics.CounterFunc("coffer_password_hashes_total", "argon2id computations (hash or verify).",
		func() float64 { return float64(h.Stats().Hashed) })
	s.metrics.CounterFunc("coffer_password_pool_rejected_total", "Logins refused because the hashing pool was saturated.",
		func() float64 { return float64(h.Stats().Rejected) })
	s.metrics.GaugeFunc("coffer_password_pool_waiting", "Logins waiting for a hashing slot.",
		func() float64 { return float64(h.Stats().Waiting) })

	s.admission = s.newAdmission()
	s.quotas = newQuotas(cfg, s.meta.Limits)
	if s.quotas != nil && metaKind == "postgres" {
		// Several nodes may share the store: requests quotas are
		// cluster-wide, in blocks reserved from it.
		s.quotas.Cluster = s.meta.Limits
	}
	version, revision, goVersion := BuildInfo()
	s.metrics.GaugeFunc("coffer_build_info", "Always 1; the labels name the running build (dashboards show it, alerts join on it).",
		func() float64 { return 1 }, "version", version, "revision", revision, "goversion", goVersion)
	apiCfg := httpapi.ConfigFrom(cfg)
	apiCfg.Info = httpapi.ServerInfo{
		Version: version, Revision: revision, GoVersion: goVersion,
		Started: s.started, MetaStore: metaKind, BlobStore: blobKind,
		Counts: s.meta.Accounts.Counts,
	}
	apiCfg.Tus.Store = s.meta.Tus
	apiCfg.Gateways = gws
	apiCfg.Scrub = s.objects.Scrubber().ScrubStatus
	apiCfg.Audit = s.audit
	if s.keys != nil {
		apiCfg.RotateKeys = func(ctx context.Context) (string, string, error) {
			prev := s.keys.Default().String()
			cur, err := s.keys.Rotate(ctx)
			s.audit.Log(ctx, audit.Event{Action: audit.KeyRotate, Target: audit.Target{KMSKey: cur.String()}}.Result(err))
			return prev, cur.String(), err
		}
	}
	if cfg.S3Listen != "off" {
		apiCfg.Presign = s.presignPart
		s3 := s3api.New(s.s3Services(), s3api.ConfigFrom(cfg), log)
		s.s3Bucket = s3.Bucket
		s.s3 = s.guard("s3", s3.Classify, s3.WriteError, s3.Handler())
		s.admissionMetrics("s3")
	}
	api := httpapi.New(s.apiServices(), apiCfg, log)

	apiHandler := api.Handler()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		httpx.SetRoute(r.Context(), "GET /healthz")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.metricsGuard(s.metrics.Handler()))
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteProblem(w, r, log, errcode.New(errcode.NotFound, "no such endpoint"))
	})
	if cfg.Console {
		mux.Handle("/", console.New(notFound))
	} else {
		mux.Handle("/", notFound)
	}
	root := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// /api/ and /s/ (share links) bypass ServeMux: object keys must
		// reach the API unclean.
		if strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, "/s/") {
			apiHandler.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
	classify := func(r *http.Request) httpx.Kind {
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, "/s/"):
			return api.Classify(r)
		case r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics":
			// Probes and scrapes are never shed: a busy node is alive,
			// and overload is when its metrics matter most.
			return httpx.Kind{Route: r.Method + " " + r.URL.Path, Probe: true}
		}
		return httpx.Kind{Class: ratelimit.Control}
	}
	problem := func(w http.ResponseWriter, r *http.Request, err error) { httpapi.WriteProblem(w, r, log, err) }
	s.handler = s.guard("file", classify, problem, root)
	s.admissionMetrics("file")
	return s, nil
}

// jobOwner names this node in the leases of background jobs: its host
// and data folder, the same across restarts, so that a node restarted
// after a crash takes its job back at once instead of waiting for its
// own lease to run out. (Two live processes on one data folder would
// share a lease: the per-row compare-and-swap keeps that safe.)
func jobOwner(data string) string {
	host, _ := os.Hostname()
	if abs, err := filepath.Abs(data); err == nil {
		data = abs
	}
	return host + ":" + data
}

// openToAll reports whether anyone beyond this machine may sign up: the
// policy is open and the file API listens on a non-loopback address.
func openToAll(policy string, addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return policy == "open" && (!ok || !tcp.IP.IsLoopback())
}

// Handler returns the file API listener's full handler stack (for tests
// and benchmarks that serve it without a listener).
func (s *Server) Handler() http.Handler { return s.handler }

// Objects returns the object service (for the CLI's admin commands).
func (s *Server) Objects() *object.Service { return s.objects }

// TLS reports whether the listeners serve HTTPS.
func (s *Server) TLS() bool { return s.certs != nil }

// ReloadTLS re-reads the certificate and key files now (on SIGHUP). On
// error the certificate in service stays. Without TLS it does nothing.
func (s *Server) ReloadTLS() error {
	if s.certs == nil {
		return nil
	}
	return s.certs.Reload()
}

// openBlobCache opens the blob read cache and, if cfg.CacheOn(), puts it
// in front of the blob store: the stack is object (encryption) → cacheblob
// → s3blob|diskblob, so the cache holds what the store holds, ciphertext
// for encrypted objects. Gateway buckets' reads use it through
// gateway.Opener (the same bytes: ciphertext for what Coffer encrypted).
func (s *Server) openBlobCache(cfg config.Config, log *slog.Logger) error {
	dir := cfg.CacheDir
	if dir == "" {
		dir = filepath.Join(cfg.Data, "cache")
	}
	c, err := cacheblob.Open(cacheblob.Options{
		Dir: dir, DiskBytes: cfg.CacheSize, MemoryBytes: cfg.CacheMemory, ChunkSize: cfg.CacheChunk,
		Log: log,
	})
	if err != nil {
		return fmt.Errorf("opening the blob cache: %w", err)
	}
	s.blobCache = c
	if cfg.CacheOn() {
		s.blobs = cacheblob.New(s.blobs, c, nil)
	}
	st := c.Stats
	m := s.metrics
	m.CounterFunc("coffer_blob_cache_hits_total", "Blob chunks read from the cache (memory or disk).", func() float64 { return float64(st().Hits) })
	m.CounterFunc("coffer_blob_cache_misses_total", "Blob chunks the cache did not hold (read from the blob store, or waited for another reader's read).", func() float64 { return float64(st().Misses) })
	m.CounterFunc("coffer_blob_cache_hit_bytes_total", "Bytes served from the blob cache.", func() float64 { return float64(st().HitBytes) })
	m.CounterFunc("coffer_blob_cache_coalesced_total", "Misses that waited for a concurrent read of the same chunk instead of reading the blob store.", func() float64 { return float64(st().Coalesced) })
	m.CounterFunc("coffer_blob_cache_fills_total", "Chunks read from the blob store into the cache.", func() float64 { return float64(st().Fills) })
	m.CounterFunc("coffer_blob_cache_evictions_total", "Cache entries evicted for space (both tiers).", func() float64 { return float64(st().Evictions) })
	m.CounterFunc("coffer_blob_cache_passthrough_total", "Reads that bypassed the cache after an error of its own (I/O error, full disk).", func() float64 { return float64(st().PassThrough) })
	m.GaugeFunc("coffer_blob_cache_bytes", "Bytes the blob cache holds, by tier.", func() float64 { return float64(st().DiskBytes) }, "tier", "disk")
	m.GaugeFunc("coffer_blob_cache_bytes", "Bytes the blob cache holds, by tier.", func() float64 { return float64(st().MemoryBytes) }, "tier", "memory")
	m.GaugeFunc("coffer_blob_cache_files", "Files in the blob cache's disk tier.", func() float64 { return float64(st().DiskFiles) })
	return nil
}

// Close closes the stores. Call only after Run returned or when Run was
// never called.
func (s *Server) Close() error {
	var errs []error
	if s.blobCache != nil {
		errs = append(errs, s.blobCache.Close()) // first: it waits for its fills from the blob store
	}
	if s.replica != nil {
		// A last pass while meta.db is still open (bounded by the window).
		errs = append(errs, s.replica.Close(context.Background()))
	}
	if s.stores != nil {
		errs = append(errs, s.stores.Close())
	}
	if s.keys != nil {
		errs = append(errs, s.keys.Close())
	}
	if s.admission != nil {
		s.admission.Close()
	}
	if s.audit != nil {
		// The events queued are written; the webhook gets a few seconds
		// to post what it holds (the rest is counted as dropped).
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, s.audit.Close(ctx))
		cancel()
	}
	if s.trace != nil {
		// Last: the spans of the shutdown itself go out too.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, s.trace.Shutdown(ctx))
		cancel()
	}
	return errors.Join(errs...)
}

// Run listens on cfg.Listen, announces the address on announce, serves until
// ctx is done, then shuts down gracefully and closes the stores.
func (s *Server) Run(ctx context.Context, announce io.Writer) error {
	defer s.Close()
	type listener struct {
		name string
		ln   net.Listener
		srv  *http.Server
	}
	baseCtx, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	scheme := "http"
	if s.certs != nil {
		scheme = "https"
	}
	newServer := func(h http.Handler) *http.Server {
		return &http.Server{
			Handler: h,
			// Also the TLS handshake's deadline (net/http): a client that
			// connects and never finishes its handshake is dropped.
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
			MaxHeaderBytes:    64 << 10,
			BaseContext:       func(net.Listener) context.Context { return baseCtx },
			ErrorLog:          log.New(serverLogWriter{s.log}, "", 0),
		}
	}
	var lns []listener
	defer func() {
		for _, l := range lns {
			l.ln.Close()
		}
	}()
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.cfg.Listen, err)
	}
	lns = append(lns, listener{"file", ln, newServer(s.handler)})
	if openToAll(s.cfg.Signup, ln.Addr()) {
		s.log.Warn("signup is open on a non-loopback address: anyone who reaches this port can create an account; use --signup invite or closed to stop that",
			"addr", ln.Addr().String(), "signup", s.cfg.Signup)
	}
	if s.s3 != nil {
		ln, err := net.Listen("tcp", s.cfg.S3Listen)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", s.cfg.S3Listen, err)
		}
		lns = append(lns, listener{"s3", ln, newServer(s.s3)})
		s.s3URLMu.Lock()
		s.s3URL = strings.TrimSuffix(s.cfg.S3PublicURL, "/")
		if s.s3URL == "" {
			s.s3URL = scheme + "://" + ln.Addr().String()
		}
		s.s3URLMu.Unlock()
	}
	if s.cfg.DebugListen != "" {
		ln, err := net.Listen("tcp", s.cfg.DebugListen)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", s.cfg.DebugListen, err)
		}
		dmux := http.NewServeMux()
		dmux.HandleFunc("/debug/pprof/", pprof.Index)
		dmux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		dmux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		dmux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		dmux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		lns = append(lns, listener{"debug", ln, newServer(dmux)})
	}
	for _, l := range lns {
		label := map[string]string{"file": "file API", "s3": "S3 API", "debug": "debug (pprof)"}[l.name]
		sch := scheme
		if l.name == "debug" {
			sch = "http"
		}
		// Once, on announce (stdout), not in the log too: on a terminal
		// both show, and every start-up line appeared twice.
		fmt.Fprintf(announce, "coffer: %s listening on %s://%s (%s)\n", label, sch, l.ln.Addr(), storesLine(s.cfg))
	}

	janitorCtx, stopJanitor := context.WithCancel(context.Background())
	janitorDone := make(chan struct{})
	go func() {
		defer close(janitorDone)
		var wg sync.WaitGroup
		hk := housekeeping{sessions: s.meta.Sessions, shares: s.meta.Shares, grace: s.cfg.DeadRowGrace, log: s.log, now: time.Now}
		wg.Go(func() { hk.run(janitorCtx, object.OrphanInterval(s.cfg)) })
		s.objects.RunJanitor(janitorCtx)
		wg.Wait()
	}()
	{
		// Lifecycle rules (docs/lifecycle.md): leased in the metadata
		// store, so every node runs the worker and one works at a time.
		lcCtx, stopLifecycle := context.WithCancel(context.Background())
		lcDone := make(chan struct{})
		opts := object.LifecycleOptionsFrom(s.cfg)
		opts.Owner = jobOwner(s.cfg.Data)
		if s.cfg.LifecycleDay > 0 {
			s.log.Warn("TEST ONLY: lifecycle days last "+s.cfg.LifecycleDay.String()+", not 24h (--lifecycle-day, COFFER_LIFECYCLE_DAY): objects expire that much sooner; never set this in production",
				"lifecycle_day", s.cfg.LifecycleDay.String())
		}
		go func() {
			defer close(lcDone)
			s.objects.Lifecycle().RunLifecycle(lcCtx, opts)
		}()
		defer func() { stopLifecycle(); <-lcDone }()
	}
	if s.cfg.ScrubEvery > 0 {
		// The background scrub (docs/operations.md#the-scrub): leased in
		// the metadata store like lifecycle, one node at a time.
		scrubCtx, stopScrub := context.WithCancel(context.Background())
		scrubDone := make(chan struct{})
		opts := object.ScrubOptionsFrom(s.cfg)
		opts.Owner = jobOwner(s.cfg.Data)
		go func() {
			defer close(scrubDone)
			s.objects.Scrubber().RunScrub(scrubCtx, opts)
		}()
		defer func() { stopScrub(); <-scrubDone }()
	}
	if s.keys != nil {
		// Background jobs of encryption at rest (key re-wrap after a
		// rotation, coffer encrypt): leased in the metadata store, so
		// every node may run them and one works on each at a time.
		jobsCtx, stopJobs := context.WithCancel(context.Background())
		jobsDone := make(chan struct{})
		go func() {
			defer close(jobsDone)
			opts := object.JobOptionsFrom(s.cfg)
			opts.Owner = jobOwner(s.cfg.Data)
			s.objects.RunEncryptionJobs(jobsCtx, opts)
		}()
		defer func() { stopJobs(); <-jobsDone }()
	}
	if s.meta.Changes != nil {
		// Other nodes' changes (disabled users, revoked keys) reach this
		// node's caches through the store's announcements.
		listenCtx, stopListen := context.WithCancel(context.Background())
		listenDone := make(chan struct{})
		go func() {
			defer close(listenDone)
			s.meta.Changes.ListenChanges(listenCtx, (&listenLog{log: s.log, every: time.Minute}).handler(s.changes))
		}()
		defer func() { stopListen(); <-listenDone }()
	}

	serveErr := make(chan error, len(lns))
	for _, l := range lns {
		if s.certs != nil && l.name != "debug" {
			// ServeTLS wraps the listener and turns HTTP/2 on (ALPN h2).
			l.srv.TLSConfig = s.certs.Config()
			go func() { serveErr <- l.srv.ServeTLS(l.ln, "", "") }()
			continue
		}
		go func() { serveErr <- l.srv.Serve(l.ln) }()
	}
	select {
	case err := <-serveErr:
		stopJanitor()
		<-janitorDone
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	var wg sync.WaitGroup
	var late atomic.Bool
	for _, l := range lns {
		wg.Go(func() {
			if err := l.srv.Shutdown(sctx); err != nil {
				late.Store(true)
			}
		})
	}
	wg.Wait()
	cancel()
	if late.Load() {
		s.log.Warn("in-flight requests did not finish in time; cancelling them")
		cancelBase()
		for _, l := range lns {
			l.srv.Close()
		}
	}
	// Handlers may still run (Shutdown does not wait for hijacked or
	// cancelled ones): wait before closing the stores.
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(45 * time.Second):
		s.log.Error("handlers still running after cancellation; closing anyway")
	}
	stopJanitor()
	<-janitorDone
	s.log.Info("stopped")
	return nil
}

// storesLine says where a node keeps its data, for the start-up line:
// "data in DIR" in the embedded shape; in the scale-out shape the
// database, the bucket and the node's own files. Never a credential: a
// URL is shown without its user, password and query.
func storesLine(cfg config.Config) string {
	if cfg.Meta == "" && cfg.Blob == "" {
		return "data in " + cfg.Data
	}
	metaAt := "metadata in " + filepath.Join(cfg.Data, "meta.db")
	if cfg.Meta != "" {
		metaAt = "metadata in " + bareURL(cfg.Meta)
	}
	blobsAt := "blobs in " + filepath.Join(cfg.Data, "blobs")
	if cfg.Blob != "" {
		blobsAt = "blobs in " + bareURL(cfg.Blob)
		if u, err := url.Parse(cfg.Blob); err == nil && u.Query().Get("endpoint") != "" {
			if e, err := url.Parse(u.Query().Get("endpoint")); err == nil {
				blobsAt += " at " + e.Scheme + "://" + e.Host
			}
		}
	}
	line := metaAt + ", " + blobsAt
	if cfg.GatewayCacheOn() {
		dir := cfg.CacheDir
		if dir == "" {
			dir = filepath.Join(cfg.Data, "cache")
		}
		line += ", blob cache in " + dir
	}
	return line
}

// bareURL is raw's scheme, host and path: no user, password, query or
// fragment.
func bareURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "(an unparsable URL)"
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// listenLog logs the state of a node's listening connection (scale-out:
// other nodes' changes): the first failure, then a reminder at most every
// `every` while it stays down, and one line when it listens again; never a
// line per retry. Both are warnings, so that a log filtered to warnings,
// which shows the outage, shows its end too.
type listenLog struct {
	log   *slog.Logger
	every time.Duration

	mu       sync.Mutex
	down     time.Time // of the first failure; zero while listening
	logged   time.Time // of the last line
	failures int       // attempts since down
}

// handler is bus's change handler with the logging of l.
func (l *listenLog) handler(bus *metacache.Bus) meta.ChangeHandler {
	h := bus.Handler(l.failed)
	set := h.Listening
	h.Listening = func(on bool) {
		set(on)
		if on {
			l.resumed()
		}
	}
	return h
}

func (l *listenLog) failed(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.failures++
	switch {
	case l.down.IsZero():
		l.down, l.logged = now, now
		l.log.Warn("listening for other nodes' changes failed; until it listens again this node's caches keep nothing; retrying",
			"err", err)
	case now.Sub(l.logged) >= l.every:
		l.logged = now
		l.log.Warn("still not listening for other nodes' changes; retrying",
			"down_for", now.Sub(l.down).Round(time.Second).String(), "attempts", l.failures, "err", err)
	}
}

func (l *listenLog) resumed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down.IsZero() {
		return // the first start, or a reconnection that never failed
	}
	l.log.Warn("listening for other nodes' changes again; caches flushed",
		"down_for", time.Since(l.down).Round(time.Millisecond).String(), "failed_attempts", l.failures)
	l.down, l.failures = time.Time{}, 0
}

// serverLogWriter carries the http.Server's own log lines to the
// structured log: at warn, except failed TLS handshakes, which strangers
// cause at will (scanners, plain HTTP on the TLS port, clients refusing
// the certificate) and which are logged at debug.
type serverLogWriter struct{ log *slog.Logger }

func (w serverLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	lvl := slog.LevelWarn
	if strings.HasPrefix(msg, "http: TLS handshake error") {
		lvl = slog.LevelDebug
	}
	w.log.Log(context.Background(), lvl, msg)
	return len(p), nil
}

// accounts is the file API's Accounts and UserAdmin, which span three
// areas of the account service: sessions (tokens, the admin role),
// users (the account, its lifecycle) and signups (with invites).
type accounts struct {
	*auth.Sessions
	*auth.Users
	*auth.Signups
}

var (
	_ httpapi.Accounts  = accounts{}
	_ httpapi.UserAdmin = accounts{}
)

// apiServices are the services the file API calls.
func (s *Server) apiServices() httpapi.Services {
	acc := accounts{s.auth.Sessions, s.auth.Users, s.auth.Signups}
	return httpapi.Services{
		Accounts: acc, AccessKeys: s.auth.Keys, UserAdmin: acc, ShareAuth: s.auth.Shares,
		Buckets: s.objects, Files: s.objects, Uploads: s.objects, Shares: s.objects, Encryption: s.objects, Tus: s.objects,
	}
}

// s3Services are the services the S3 API calls.
func (s *Server) s3Services() s3api.Services {
	return s3api.Services{Buckets: s.objects, Objects: s.objects, Uploads: s.objects, Keys: s.auth.Keys}
}

// presignPart makes a presigned UploadPart URL on Coffer's own S3 API,
// signed with the user's internal key.
func (s *Server) presignPart(ctx context.Context, userID, bucket, key, uploadID string, part int, ttl time.Duration) (string, error) {
	s.s3URLMu.Lock()
	base := s.s3URL
	s.s3URLMu.Unlock()
	if base == "" {
		return "", errcode.Retry(errcode.Unavailable, time.Second, "S3 listener not ready")
	}
	id, secret, err := s.auth.Keys.InternalKey(ctx, userID)
	if err != nil {
		return "", err
	}
	ttl = min(max(ttl, time.Minute), 7*24*time.Hour).Truncate(time.Second)
	u := base + "/" + bucket + "/" + sigv4.URIEncode(key, false) +
		"?partNumber=" + strconv.Itoa(part) + "&uploadId=" + url.QueryEscape(uploadID)
	return sigv4.Presign(http.MethodPut, u, nil, id, secret, s.cfg.Region, time.Now(), ttl)
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	httpx.SetRoute(r.Context(), "GET /readyz")
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.meta.Cluster.Ping(ctx); err != nil {
		httpapi.WriteProblem(w, r, s.log, errcode.Retry(errcode.Unavailable, time.Second, "metadata store unavailable"))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	io.WriteString(w, "ready\n")
}

// metricsGuard serves /metrics to loopback clients, or to anyone presenting
// the configured metrics token. Everyone else gets 404: there are no
// internal endpoints on public listeners.
func (s *Server) metricsGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.SetRoute(r.Context(), "GET /metrics")
		allowed := s.localClient(r)
		if tok := s.cfg.MetricsToken; tok != "" {
			got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			allowed = allowed || subtle.ConstantTimeCompare([]byte(got), []byte(tok)) == 1
		}
		if !allowed {
			httpapi.WriteProblem(w, r, s.log, errcode.New(errcode.NotFound, "no such endpoint"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// localClient reports whether r comes from this machine and no one
// else: a loopback peer that relays nobody. A peer listed in
// --trusted-proxies is a relay whatever its address (a reverse proxy on
// the same host is a loopback peer too, and may add no forwarding header
// at all): its request is local only when X-Forwarded-For names a
// loopback client (the address the rest of Coffer takes as the client's).
// Any other loopback peer is local unless it sends a forwarding header.
func (s *Server) localClient(r *http.Request) bool {
	peer, _ := netip.ParseAddrPort(r.RemoteAddr)
	addr := peer.Addr().Unmap()
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(addr) {
			client, ok := httpx.ForwardedClient(r, s.cfg.TrustedProxies)
			return ok && client.IsLoopback()
		}
	}
	proxied := r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("Forwarded") != "" || r.Header.Get("X-Real-Ip") != ""
	return addr.IsLoopback() && !proxied
}

// BuildInfo returns the version (a release build's, else the module's), the
// VCS revision ("" if the build recorded none) and the Go version of the
// running binary.
func BuildInfo() (version, revision, goVersion string) {
	in := buildinfo.Read()
	return in.Version, in.Revision, in.GoVersion
}

// preflight checks what can be checked before anything is opened or
// made (New, step 1).
func preflight(cfg config.Config, key KeyFile) error {
	if cfg.Blob != "" {
		if _, err := s3blob.ParseURL(cfg.Blob); err != nil {
			return fmt.Errorf("--blob: %w", err)
		}
	}
	for _, raw := range cfg.Gateways {
		if _, err := gateway.ParseSpec(raw); err != nil {
			return fmt.Errorf("--gateway: %w", err)
		}
	}
	return key.Check()
}

// openKeys opens the key provider: when encryption is on, when --kms names
// one, and in the embedded shape (whose default keyring in the data folder
// is created on first use: S3 SSE requests work without configuration).
// A scale-out node without --kms opens only an existing default keyring
// (it must never make a key of its own), so objects encrypted earlier stay
// readable. nil: none (SSE requests are refused).
func openKeys(ctx context.Context, cfg config.Config, log *slog.Logger, traced bool) (*kms.Keys, error) {
	if cfg.Encryption != "on" && kms.InDataDir(cfg.KMS) && cfg.Meta != "" {
		if _, err := os.Stat(filepath.Join(cfg.Data, kms.DefaultKeyringName)); err != nil {
			return nil, nil
		}
	}
	// One intermediate key wraps new data keys for cfg.KMSKeyTTL: short,
	// so that new writes fail with 503 within seconds of a key service
	// outage instead of minutes, while still saving a key service call
	// per object. Unwrapped keys for reads stay cached for kms's default
	// (5 min after last use).
	opts := kms.Options{DataDir: cfg.Data, IntermediateKeyTTL: cfg.KMSKeyTTL}
	p, err := kms.OpenProvider(ctx, cfg.KMS, opts)
	if err != nil {
		return nil, fmt.Errorf("--kms: %w", err)
	}
	if traced {
		p = tracing.KMS(p) // a span per key service call
	}
	keys := kms.New(p, opts)
	log.Info("key provider open", "kek", keys.Default().String(), "encryption", cfg.Encryption)
	return keys, nil
}

// cacheMetrics registers the counters of one metadata cache, labelled
// cache=name.
func (s *Server) cacheMetrics(name string, st func() metacache.Stats) {
	for _, c := range []struct {
		metric, help string
		f            func(metacache.Stats) int64
	}{
		{"coffer_meta_cache_hits_total", "Metadata cache lookups answered from the cache.", func(x metacache.Stats) int64 { return x.Hits }},
		{"coffer_meta_cache_misses_total", "Metadata cache lookups that asked the metadata store.", func(x metacache.Stats) int64 { return x.Misses }},
		{"coffer_meta_cache_evictions_total", "Metadata cache entries evicted by the size bounds.", func(x metacache.Stats) int64 { return x.Evictions }},
		{"coffer_meta_cache_invalidations_total", "Metadata cache keys dropped by a change (this node's or another's).", func(x metacache.Stats) int64 { return x.Invalidations }},
		{"coffer_meta_cache_flushes_total", "Metadata cache full flushes (the change listener connected, reconnected or dropped; a user deleted).", func(x metacache.Stats) int64 { return x.Flushes }},
		{"coffer_meta_cache_bypassed_total", "Metadata cache lookups not cached because this node was not listening for changes.", func(x metacache.Stats) int64 { return x.Bypassed }},
	} {
		s.metrics.CounterFunc(c.metric, c.help, func() float64 { return float64(c.f(st())) }, "cache", name)
	}
	s.metrics.GaugeFunc("coffer_meta_cache_entries", "Entries in the metadata cache.", func() float64 { return float64(st().Entries) }, "cache", name)
	s.metrics.GaugeFunc("coffer_meta_cache_bytes", "Estimated bytes held by the metadata cache (weighed caches only).", func() float64 { return float64(st().Bytes) }, "cache", name)
}

// startReplica starts continuous replication of the data folder
// (--replicate-to; config.Validate refused it on the scale-out shape).
func (s *Server) startReplica(ctx context.Context) error {
	r, err := replicate.Start(ctx, replicate.Options{
		URL: s.cfg.ReplicateTo, Window: s.cfg.ReplicateWindow,
		DB: filepath.Join(s.cfg.Data, "meta.db"), Blobs: s.stores.Blobs, Log: s.log,
	})
	if err != nil {
		return err
	}
	s.replica = r
	s.blobs = r.Wrap(s.blobs)
	s.metrics.GaugeFunc("coffer_replication_lag_seconds", "Seconds since the time before which every acknowledged write (metadata and blobs) is on the --replicate-to replica.",
		func() float64 { return r.Lag().Seconds() })
	s.metrics.CounterFunc("coffer_replication_errors_total", "Failed replication attempts (a sync pass, a blob copy, a listing; each retried with backoff), and deletes of blobs not yet on the replica (refused: kept until they are).",
		func() float64 { return float64(r.Errors()) })
	s.metrics.CounterFunc("coffer_replication_blobs_copied_total", "Blobs this node copied to the --replicate-to replica.",
		func() float64 { return float64(r.Stats().BlobsCopied) })
	return nil
}

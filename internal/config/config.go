// Package config is Coffer's configuration: one plain struct with the
// default written on each field, loaded from flags, then COFFER_*
// environment variables, then defaults, and validated in one place.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Config configures `coffer serve`.
type Config struct {
	Data   string // --data, COFFER_DATA: data folder; default ./coffer-data
	Listen string // --listen, COFFER_LISTEN: file API address; default 127.0.0.1:8080

	// Scale-out backends. Empty means the embedded default in Data.
	Meta         string        // --meta, COFFER_META: postgres://… URL of the metadata database; default SQLite in Data
	MetaMaxConns int           // --meta-max-conns: PostgreSQL pool size; default 4 × cores (min 8)
	MetaWait     time.Duration // --meta-wait: longest wait for a pool connection before 503; default 5s
	// The per-node cache of bucket and object records (docs/architecture.md, "Caching").
	MetaCache     string        // --meta-cache, COFFER_META_CACHE: on|off; default on
	MetaCacheSize int64         // --meta-cache-size: bytes of object and bucket records cached per node; default 64MiB
	MetaCacheTTL  time.Duration // --meta-cache-ttl: longest life of a cached record (the bound when an invalidation is lost); default 10s
	Blob          string        // --blob, COFFER_BLOB: s3://BUCKET[/PREFIX]?endpoint=… of the blob store; default local disk in Data
	// Gateways are gateway buckets (docs/gateway.md):
	// NAME=s3://BUCKET[/PREFIX]?endpoint=…&mode=ro|rw&owner=EMAIL[&public=true][&credentials_file=PATH].
	// --gateway is repeatable; COFFER_GATEWAY holds several separated by
	// whitespace (spaces or newlines). Default none.
	Gateways      []string
	ServerKeyFile string // --server-key-file, COFFER_SERVER_KEY_FILE: the 32-byte key (hex) shared by every node; default Data/server.key

	// MetaCacheLease (--meta-cache-lease; scale-out): a node trusts its
	// caches only this long after its listening connection last proved
	// alive (it does so every third of it), and a write waits 1.25× it
	// for a node that does not acknowledge; default 1s.
	MetaCacheLease time.Duration

	// The blob read cache (internal/blob/cacheblob), per node.
	Cache       string // --cache, COFFER_CACHE: auto|on|off; default auto (on when --blob names a remote store, off for the local disk; gateway reads are cached unless off)
	CacheDir    string // --cache-dir: the disk tier's folder (owned by the cache); default Data/cache
	CacheSize   int64  // --cache-size: bytes the disk tier may hold; default 4GiB
	CacheMemory int64  // --cache-memory: bytes of small blobs held in memory (0: no memory tier); default 64MiB
	CacheChunk  int64  // --cache-chunk: unit of caching and of backend reads on a miss, 64KiB..64MiB; default 1MiB

	// Encryption at rest (docs/encryption.md).
	Encryption string // --encryption, COFFER_ENCRYPTION: off|on: encrypt every new object; default off
	KMS        string // --kms, COFFER_KMS: key provider URL (local:, awskms://, gcpkms://, azurekeyvault://, hashivault://); default the keyring Data/kms.keyring

	S3Listen    string // --s3-listen, COFFER_S3_LISTEN: S3 API address, "off" to disable; default 127.0.0.1:9000
	S3Domain    string // --s3-domain: enables virtual-host-style S3 addressing (BUCKET.domain); default none
	S3PublicURL string // --s3-public-url: base URL clients reach the S3 API at (for presigned URLs; its scheme for the S3 API's object URLs); default http(s)://<s3-listen>
	Region      string // --region: the S3 region; default us-east-1

	// TLS: both or neither. With them, both listeners serve HTTPS (HTTP/2
	// on); the files are re-read when they change and on SIGHUP.
	TLSCert string // --tls-cert, COFFER_TLS_CERT: PEM certificate chain (leaf first); default none (plain HTTP)
	TLSKey  string // --tls-key, COFFER_TLS_KEY: PEM private key of the certificate; default none
	// HSTSMaxAge is --hsts-max-age: with TLS, the file API listener's
	// answers carry Strict-Transport-Security: max-age=<seconds>; 0 = no
	// header; default 365 days.
	HSTSMaxAge time.Duration

	LogLevel string // --log-level: debug|info|warn|error; default info
	// LogFormat is --log-format: auto|text|json; default auto (text when
	// stderr is a terminal, else JSON). The access log (one line per
	// request) is at info in JSON and at debug in text: a terminal shows
	// it only with --log-level debug.
	LogFormat string

	DefaultQuota  int64 // --default-quota: bytes for new accounts, 0 = unlimited; default 0
	MaxObjectSize int64 // --max-object-size: largest single upload; default 64GiB
	InlineMax     int64 // --inline-max: objects up to this size live in the metadata store (0 disables); default 64KiB
	MinFreeSpace  int64 // --min-free-space: embedded shape: uploads are refused (507 storage_full) rather than leave less free on the data folder's file system, kept for metadata writes (deletes) and the janitor; the janitor reclaims deleted blobs at once below twice this; default 256MiB

	ReplicateTo     string        // --replicate-to, COFFER_REPLICATE_TO: embedded shape: a folder or s3:// URL (as --blob) meta.db's changes and new blobs stream to (docs/backup.md); default off
	ReplicateWindow time.Duration // --replicate-window: at most this much of acknowledged writes may be lost with the data folder (the replication lag above which it is reported behind); default 10s

	ShutdownTimeout time.Duration // --shutdown-timeout: in-flight requests get this long on SIGTERM; default 30s
	MaxInFlight     int           // --max-in-flight: concurrent requests before 503; default 4096
	RequestTimeout  time.Duration // --request-timeout: bound for requests that move no object bytes; default 30s
	MinUploadRate   int64         // --min-upload-rate: bytes/s a client must sustain after 10s; default 4096
	WriteIdle       time.Duration // --write-idle-timeout: a response write making no progress this long fails; default 60s

	MaxInFlightPerClient int           // --max-in-flight-per-client: concurrent requests of one client address with credentials (anonymous: a quarter), 0 = unbounded; default 128
	Admission            string        // --admission: adaptive|fixed; default adaptive
	OverloadTarget       time.Duration // --overload-target: CPU scheduling delay (p90 per 100ms) above which load is shed; default 5ms
	AdmissionFloor       int           // --admission-floor: concurrency per listener and class never shed for overload; default 0 = 8 × cores (AdmissionMinLimit)

	TrustedProxies []netip.Prefix // --trusted-proxies: CIDRs allowed to set X-Forwarded-For; default none
	// CORSOrigins are the web origins (scheme://host[:port], or "*") whose
	// pages may call the file API's share-link and direct-upload routes
	// (docs/cors.md); the console needs none. --cors-origins,
	// COFFER_CORS_ORIGINS: comma-separated; default none.
	CORSOrigins    []string
	PublicMaxAge   time.Duration // --public-max-age: Cache-Control max-age for public-read objects; default 60s
	ShareMaxExpiry time.Duration // --share-max-expiry: the longest lifetime of a share link; default 90 days
	MetricsToken   string        // --metrics-token: bearer token for /metrics from non-loopback clients; default none (loopback only)
	DebugListen    string        // --debug-listen: loopback address serving net/http/pprof; default none

	// The audit log (internal/audit, docs/audit.md): on when a file or a
	// webhook is set.
	AuditLog         string // --audit-log, COFFER_AUDIT_LOG: file of one JSON line per security-relevant event (0600, rotated by size); default none
	AuditLogMaxSize  int64  // --audit-log-max-size: the file is rotated before it grows past this; default 100MiB
	AuditLogMaxFiles int    // --audit-log-max-files: files kept in all, the current one included (FILE, FILE.1, ...); default 10
	AuditWebhook     string // --audit-webhook, COFFER_AUDIT_WEBHOOK: http(s) URL that receives the events as JSON arrays, batched and retried; default none
	AuditRecent      int    // --audit-recent: events this node keeps in memory for the admin API's query; default 1000

	// Quotas: token buckets per identity (internal/ratelimit, Quotas).
	// Requests per period, and request body MiB per period; 0 = unlimited
	// (the default of each).
	RateUser, RateKey, RateShare, RateAnonymous             Rate // --rate-user, --rate-key, --rate-share, --rate-anonymous
	RateUserMiB, RateKeyMiB, RateShareMiB, RateAnonymousMiB Rate // --rate-user-bytes, ... (N is MiB)

	Console bool // --console, COFFER_CONSOLE: serve the web console at / of the file API listener; default true

	Signup     string // --signup, COFFER_SIGNUP: who may sign up through the API: open, invite or closed; default open
	SignupRate Rate   // --signup-rate: signups per client address, e.g. 5/h; 0 = unlimited; default 5/h

	// Advanced: blob reclamation and uploads in flight (shortened by tests).
	OrphanGrace     time.Duration // --orphan-grace: age before a blob no row or live upload points at is deleted; default 1h
	JanitorInterval time.Duration // --janitor-interval: how often replaced blobs and expired uploads are reclaimed; default 30s
	StagingLease    time.Duration // --staging-lease: lease of an upload in flight, renewed every third of it; default 1m
	TusExpiry       time.Duration // --tus-expiry: how long an unfinished tus upload lives (Upload-Expires); default 24h
	// Background jobs of encryption at rest (re-wrap, coffer encrypt):
	// rows per page and a pause between pages (a throttle).
	KMSJobPage  int           // --kms-job-page: rows per page of a re-wrap or encrypt job; default 100
	KMSJobPause time.Duration // --kms-job-pause: pause between pages of such a job; default 0
	// Lifecycle rules (docs/lifecycle.md): how often a run starts, and
	// versions per page (its cursor is saved after each).
	LifecycleInterval time.Duration // --lifecycle-interval: time between the starts of two lifecycle runs; default 1h
	LifecyclePage     int           // --lifecycle-page: versions per page of a lifecycle run, 1 to 1000; default 1000
	// LifecycleDay is TEST ONLY: the length of a lifecycle "day" (0 =
	// 24h), so that end-to-end tests can expire objects in seconds. At
	// most a minute (no production value is near it), and the server
	// warns at start-up and at every run while it is set.
	LifecycleDay time.Duration // --lifecycle-day, COFFER_LIFECYCLE_DAY: TEST ONLY; default 0 (24h)
	// ClockOffset is TEST ONLY: added to the clock the object and account
	// services read, so the fault harness (test/faults) can skew
	// one node's clock. At most a day either way; the server warns at
	// start-up while it is set.
	ClockOffset time.Duration // --clock-offset, COFFER_CLOCK_OFFSET: TEST ONLY; default 0
	// Integrity of stored bytes (docs/operations.md#integrity-of-stored-bytes):
	// full reads of plaintext objects checked against their SHA-256, and
	// the background scrub of every blob (coffer fsck runs one pass).
	VerifyReads bool          // --verify-reads: check a whole-object read's CRC-32C (SHA-256 if none recorded) while it streams; default true
	ScrubEvery  time.Duration // --scrub-every: time between the starts of two background scrubs (0 = off); default 168h
	ScrubRate   int64         // --scrub-rate: bytes per second the scrub reads, at most; default 50MiB

	IdleTrim  time.Duration // --idle-trim: how long the node goes without a request before it returns its free memory to the OS (0 = never; docs/operations.md, "Memory"); default 10s
	HeapFloor int64         // --heap-floor: while the node serves requests, the Go heap may grow to this before a collection, whatever GOGC (package gcfloor; 0 = GOGC alone); default 32MiB

	// Tracing (docs/tracing.md): OpenTelemetry spans exported over
	// OTLP/HTTP (protobuf) when OTelEndpoint is set; off (nothing made,
	// nothing wrapped) when it is empty.
	OTelEndpoint    string  // --otel-endpoint, COFFER_OTEL_ENDPOINT: http(s)://HOST:PORT[/PATH] of an OTLP/HTTP receiver (path default /v1/traces); default "" (off)
	OTelSampleRatio float64 // --otel-sample-ratio, COFFER_OTEL_SAMPLE_RATIO: share of new traces recorded and exported, 0 to 1 (a sampled incoming traceparent is always followed); default 0.1

	LoginConcurrency int    // --login-concurrency: parallel password hashes; default 0 = max(1, cores/2) (LoginSlots)
	Argon2Memory     uint32 // --argon2-memory: KiB; default 19456
	Argon2Time       uint32 // --argon2-time: passes; default 2

	// Fixed values, with no flag: written here so that Defaults is the one
	// place a default is written (the services take them as given).
	GarbageGrace       time.Duration // how long a replaced or deleted blob is kept for readers that looked it up just before; default 1m
	PressureGrace      time.Duration // GarbageGrace when the data folder's disk is short of space (embedded shape; --min-free-space); default 2s
	MaxJSONBody        int64         // largest JSON request body of the file API; default 64KiB
	MaxFormFiles       int           // files in one multipart/form-data upload of the file API; default 1000
	ShareDefaultExpiry time.Duration // lifetime of a share link created without one (at most ShareMaxExpiry); default 7 days
	ShareGrantTTL      time.Duration // how long an unlocked password-protected share link stays unlocked; default 1h
	MaxZipEntries      int           // files in one zip download; default 10000
	MaxZipBytes        int64         // bytes in one zip download; default 16GiB
	DirectUploadExpiry time.Duration // how long a direct-upload session of the file API may stay incomplete before the janitor aborts it; default 24h
	MaxXMLBody         int64         // largest XML request body of the S3 API; default 4MiB
	MultipartExpiry    time.Duration // how long an S3 multipart upload may stay incomplete before the janitor aborts it; default 7 days
	TusLockLease       time.Duration // lease of a tus upload's lock, renewed by its holder every third of it; default 30s
	DeadRowGrace       time.Duration // how long after it ended a refresh token or a share link is deleted (docs/operations.md, "What the janitor deletes"); default 30 days

	// Accounts (internal/auth): access and refresh token lifetimes, and
	// the failed-login limits (auth.LoginLimits): per (account, client
	// address) and per client address in LoginWindow; per account from
	// every address in LoginAccountWindow, past which each failure waits
	// LoginBackoffBase, doubling up to LoginBackoffMax; an address an
	// account logged in from is exempt from that ceiling for
	// LoginKnownFor. Password hashes beyond --login-concurrency queue, at
	// most PasswordQueue of them for at most PasswordWait (then 503).
	AccessTokenTTL     time.Duration // default 15m
	RefreshTokenTTL    time.Duration // default 30 days
	LoginPerPair       int           // default 10
	LoginPerAddress    int           // default 100
	LoginWindow        time.Duration // default 15m
	LoginPerAccount    int           // default 1000
	LoginAccountWindow time.Duration // default 1h
	LoginBackoffBase   time.Duration // default 1s
	LoginBackoffMax    time.Duration // default 1m
	LoginKnownFor      time.Duration // default 30 days
	PasswordQueue      int           // default 64
	PasswordWait       time.Duration // default 2s

	// Encryption at rest (internal/object, encryptionjobs.go; internal/kms): a
	// job is a node's for KMSJobLease without a save; an idle node looks
	// for one every KMSJobPoll; a re-wrap ends only with a pass begun
	// KMSJobSettle after the job started (three intermediate key
	// lifetimes); one intermediate key wraps new data keys for
	// KMSKeyTTL.
	KMSJobLease  time.Duration // default 30s
	KMSJobPoll   time.Duration // default 5s
	KMSJobSettle time.Duration // default 15s
	KMSKeyTTL    time.Duration // default 5s
}

// Defaults returns the configuration with every default applied.
func Defaults() Config {
	return Config{
		Data:            "./coffer-data",
		Listen:          "127.0.0.1:8080",
		S3Listen:        "127.0.0.1:9000",
		Region:          "us-east-1",
		LogLevel:        "info",
		LogFormat:       "auto",
		MaxObjectSize:   64 << 30,
		InlineMax:       64 << 10,
		MinFreeSpace:    256 << 20,
		ReplicateWindow: 10 * time.Second,
		Encryption:      "off",
		MetaCache:       "on",
		MetaCacheSize:   64 << 20,
		MetaCacheTTL:    10 * time.Second,
		MetaCacheLease:  time.Second,
		Cache:           "auto",
		CacheSize:       4 << 30,
		CacheMemory:     64 << 20,
		CacheChunk:      1 << 20,
		ShutdownTimeout: 30 * time.Second,
		MaxInFlight:     4096,
		RequestTimeout:  30 * time.Second,
		MinUploadRate:   4096,
		WriteIdle:       60 * time.Second,

		HSTSMaxAge:           365 * 24 * time.Hour,
		MaxInFlightPerClient: 128,
		Admission:            "adaptive",
		OverloadTarget:       5 * time.Millisecond,
		PublicMaxAge:         time.Minute,
		ShareMaxExpiry:       90 * 24 * time.Hour,
		OrphanGrace:          time.Hour,
		JanitorInterval:      30 * time.Second,
		AuditLogMaxSize:      100 << 20,
		AuditLogMaxFiles:     10,
		AuditRecent:          1000,
		StagingLease:         time.Minute,
		TusExpiry:            24 * time.Hour,
		KMSJobPage:           100,
		LifecycleInterval:    time.Hour,
		LifecyclePage:        1000,
		VerifyReads:          true,
		ScrubEvery:           7 * 24 * time.Hour,
		ScrubRate:            50 << 20,
		IdleTrim:             10 * time.Second,
		OTelSampleRatio:      0.1,
		HeapFloor:            32 << 20,
		Argon2Memory:         19456,
		Argon2Time:           2,
		Signup:               "open",
		Console:              true,
		SignupRate:           Rate{N: 5, Per: time.Hour},

		GarbageGrace:       time.Minute,
		PressureGrace:      2 * time.Second,
		MaxJSONBody:        64 << 10,
		MaxFormFiles:       1000,
		ShareDefaultExpiry: 7 * 24 * time.Hour,
		ShareGrantTTL:      time.Hour,
		MaxZipEntries:      10_000,
		MaxZipBytes:        16 << 30,
		DirectUploadExpiry: 24 * time.Hour,
		MaxXMLBody:         4 << 20,
		MultipartExpiry:    7 * 24 * time.Hour,
		TusLockLease:       30 * time.Second,
		DeadRowGrace:       30 * 24 * time.Hour,

		AccessTokenTTL:     15 * time.Minute,
		RefreshTokenTTL:    30 * 24 * time.Hour,
		LoginPerPair:       10,
		LoginPerAddress:    100,
		LoginWindow:        15 * time.Minute,
		LoginPerAccount:    1000,
		LoginAccountWindow: time.Hour,
		LoginBackoffBase:   time.Second,
		LoginBackoffMax:    time.Minute,
		LoginKnownFor:      30 * 24 * time.Hour,
		PasswordQueue:      64,
		PasswordWait:       2 * time.Second,

		KMSJobLease:  30 * time.Second,
		KMSJobPoll:   5 * time.Second,
		KMSJobSettle: 15 * time.Second,
		KMSKeyTTL:    5 * time.Second,
	}
}

// LoginSlots is --login-concurrency resolved: 0 (or less) is half the
// cores, at least 1.
func (c Config) LoginSlots() int {
	if c.LoginConcurrency <= 0 {
		return max(1, runtime.GOMAXPROCS(0)/2)
	}
	return c.LoginConcurrency
}

// AdmissionMinLimit is --admission-floor resolved: 0 is 8 × the cores.
func (c Config) AdmissionMinLimit() int {
	if c.AdmissionFloor == 0 {
		return 8 * runtime.GOMAXPROCS(0)
	}
	return c.AdmissionFloor
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Data == "" {
		errs = append(errs, errors.New("data: must not be empty"))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen: %v", err))
	}
	if c.S3Listen != "off" {
		if _, _, err := net.SplitHostPort(c.S3Listen); err != nil {
			errs = append(errs, fmt.Errorf("s3-listen: %v", err))
		}
	}
	if c.AuditLogMaxSize < 4<<10 || c.AuditLogMaxFiles < 1 || c.AuditRecent < 1 {
		errs = append(errs, errors.New("audit-log-max-size, audit-log-max-files and audit-recent: at least 4KiB, 1 and 1"))
	}
	if c.AuditWebhook != "" {
		if u, err := url.Parse(c.AuditWebhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("audit-webhook: %q is not an http(s) URL", c.AuditWebhook))
		}
	}
	if c.DebugListen != "" {
		host, _, err := net.SplitHostPort(c.DebugListen)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			errs = append(errs, errors.New("debug-listen: must be a loopback address (it serves profiles)"))
		}
	}
	if c.Meta != "" && !strings.HasPrefix(c.Meta, "postgres://") && !strings.HasPrefix(c.Meta, "postgresql://") {
		errs = append(errs, errors.New("meta: want a postgres:// URL (empty for the embedded SQLite)"))
	}
	if c.Blob != "" && !strings.HasPrefix(c.Blob, "s3://") {
		errs = append(errs, errors.New("blob: want an s3://BUCKET URL (empty for the local disk)"))
	}
	for _, g := range c.Gateways {
		// The full check (server.New, gateway.ParseSpec) needs the
		// backend's package; this one catches the obvious slip.
		if name, u, ok := strings.Cut(g, "="); !ok || name == "" || !strings.HasPrefix(u, "s3://") {
			errs = append(errs, fmt.Errorf("gateway %q: want NAME=s3://BUCKET[/PREFIX]?…", g))
		}
	}
	switch c.Cache {
	case "auto", "on", "off":
	default:
		errs = append(errs, fmt.Errorf("cache: %q is not auto, on or off", c.Cache))
	}
	if c.CacheSize <= 0 || c.CacheMemory < 0 {
		errs = append(errs, errors.New("cache-size: must be > 0, cache-memory >= 0"))
	}
	if c.CacheChunk < 64<<10 || c.CacheChunk > 64<<20 {
		errs = append(errs, errors.New("cache-chunk: must be between 64KiB and 64MiB"))
	}
	if c.MetaMaxConns < 0 || c.MetaWait < 0 {
		errs = append(errs, errors.New("meta-max-conns and meta-wait: must be >= 0"))
	}
	if c.Region == "" {
		errs = append(errs, errors.New("region: must not be empty"))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("tls-cert and tls-key: give both (the certificate and its key) or neither"))
	}
	if c.HSTSMaxAge < 0 {
		errs = append(errs, errors.New("hsts-max-age: must be >= 0 (0 = no Strict-Transport-Security)"))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level: %q is not debug, info, warn or error", c.LogLevel))
	}
	switch c.LogFormat {
	case "auto", "json", "text":
	default:
		errs = append(errs, fmt.Errorf("log-format: %q is not auto, json or text", c.LogFormat))
	}
	switch c.MetaCache {
	case "off", "on":
	default:
		errs = append(errs, fmt.Errorf("meta-cache: %q is not off or on", c.MetaCache))
	}
	if c.MetaCacheSize < 1<<20 || c.MetaCacheTTL < time.Millisecond {
		errs = append(errs, errors.New("meta-cache-size and meta-cache-ttl: must be at least 1MiB and 1ms"))
	}
	if c.MetaCacheLease < 30*time.Millisecond || c.MetaCacheLease > time.Minute {
		errs = append(errs, errors.New("meta-cache-lease: must be between 30ms and 1m"))
	}
	switch c.Encryption {
	case "off", "on":
	default:
		errs = append(errs, fmt.Errorf("encryption: %q is not off or on", c.Encryption))
	}
	if c.Encryption == "on" && c.Meta != "" && (c.KMS == "" || c.KMS == "local:") {
		// Every node must use the same keys: a keyring each node made
		// in its own data folder would leave the others unable to read.
		errs = append(errs, errors.New("kms: with --meta (several nodes) and --encryption on, name the shared key provider (e.g. local:///etc/coffer/keyring or awskms:///alias/coffer)"))
	}
	if c.DefaultQuota < 0 {
		errs = append(errs, errors.New("default-quota: must be >= 0"))
	}
	if c.InlineMax < 0 || c.InlineMax > 1<<20 {
		errs = append(errs, errors.New("inline-max: must be between 0 and 1MiB"))
	}
	if c.MinFreeSpace < 0 {
		errs = append(errs, errors.New("min-free-space: must be >= 0"))
	}
	if c.ReplicateTo != "" && (c.Meta != "" || c.Blob != "") {
		errs = append(errs, errors.New("replicate-to: continuous replication is for the embedded shape (SQLite and the local disk); with --meta or --blob use PostgreSQL's own tools and the S3 store's versioning (docs/operations.md)"))
	}
	if c.ReplicateTo != "" && c.ReplicateWindow < time.Second {
		errs = append(errs, errors.New("replicate-window: must be at least 1s"))
	}
	if c.MaxObjectSize <= 0 {
		errs = append(errs, errors.New("max-object-size: must be > 0"))
	}
	if c.ShutdownTimeout <= 0 || c.RequestTimeout <= 0 {
		errs = append(errs, errors.New("shutdown-timeout and request-timeout: must be > 0"))
	}
	if c.MaxInFlight <= 0 {
		errs = append(errs, errors.New("max-in-flight: must be > 0"))
	}
	if c.WriteIdle <= 0 {
		errs = append(errs, errors.New("write-idle-timeout: must be > 0"))
	}
	if c.MaxInFlightPerClient < 0 {
		errs = append(errs, errors.New("max-in-flight-per-client: must be >= 0 (0 = unbounded)"))
	}
	switch c.Admission {
	case "adaptive", "fixed":
	default:
		errs = append(errs, fmt.Errorf("admission: %q is not adaptive or fixed", c.Admission))
	}
	if c.AdmissionFloor < 0 {
		errs = append(errs, errors.New("admission-floor: must be >= 0 (0 = 8 x cores)"))
	}
	if c.OverloadTarget <= 0 {
		errs = append(errs, errors.New("overload-target: must be > 0"))
	}
	if c.MinUploadRate <= 0 {
		errs = append(errs, errors.New("min-upload-rate: must be > 0"))
	}
	if c.OrphanGrace <= 0 || c.JanitorInterval <= 0 {
		errs = append(errs, errors.New("orphan-grace and janitor-interval: must be > 0"))
	}
	if c.KMSJobPage < 1 || c.KMSJobPage > 1000 || c.KMSJobPause < 0 {
		errs = append(errs, errors.New("kms-job-page: must be 1 to 1000; kms-job-pause: must be >= 0"))
	}
	if c.LifecycleInterval < time.Second || c.LifecyclePage < 1 || c.LifecyclePage > 1000 {
		errs = append(errs, errors.New("lifecycle-interval: must be >= 1s; lifecycle-page: must be 1 to 1000"))
	}
	if c.ScrubEvery < 0 || (c.ScrubEvery > 0 && c.ScrubEvery < time.Minute) || c.ScrubRate < 1<<10 {
		errs = append(errs, errors.New("scrub-every: 0 (off) or >= 1m; scrub-rate: must be >= 1KiB"))
	}
	if c.OTelSampleRatio < 0 || c.OTelSampleRatio > 1 || c.OTelSampleRatio != c.OTelSampleRatio {
		errs = append(errs, errors.New("otel-sample-ratio: must be 0 to 1"))
	}
	if c.OTelEndpoint != "" {
		if u, err := url.Parse(c.OTelEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("otel-endpoint: %q is not an http:// or https:// URL", c.OTelEndpoint))
		}
	}
	if c.IdleTrim < 0 {
		errs = append(errs, errors.New("idle-trim: 0 (never) or > 0"))
	}
	if c.HeapFloor < 0 || c.HeapFloor > 1<<40 {
		errs = append(errs, errors.New("heap-floor: 0 (GOGC alone) to 1TiB"))
	}
	if c.LifecycleDay < 0 || c.LifecycleDay > time.Minute {
		errs = append(errs, errors.New("lifecycle-day: TEST ONLY; 0 (a real day) or at most 1m"))
	}
	if c.ClockOffset < -24*time.Hour || c.ClockOffset > 24*time.Hour {
		errs = append(errs, errors.New("clock-offset: TEST ONLY; at most 24h either way"))
	}
	if c.TusExpiry < time.Second {
		errs = append(errs, errors.New("tus-expiry: must be >= 1s"))
	}
	if c.StagingLease < time.Second {
		errs = append(errs, errors.New("staging-lease: must be >= 1s"))
	}
	switch c.Signup {
	case "open", "invite", "closed":
	default:
		errs = append(errs, fmt.Errorf("signup: %q is not open, invite or closed", c.Signup))
	}
	if err := c.SignupRate.check(); err != nil {
		errs = append(errs, fmt.Errorf("signup-rate: %v", err))
	}
	if c.Argon2Memory < 8*1024 || c.Argon2Time < 1 {
		errs = append(errs, errors.New("argon2: memory must be >= 8192 KiB and time >= 1"))
	}
	if !c.fixedPositive() {
		// No flag sets them: only a configuration built by hand, not
		// from Defaults, gets here.
		errs = append(errs, errors.New("fixed values (graces, API limits, token lifetimes, login limits, job timings): must be > 0; start from config.Defaults()"))
	}
	return errors.Join(errs...)
}

// fixedPositive reports whether every fixed value (no flag sets them) is
// positive: none has a meaning for zero.
func (c Config) fixedPositive() bool {
	for _, d := range []time.Duration{c.GarbageGrace, c.PressureGrace, c.ShareDefaultExpiry, c.ShareGrantTTL, c.DirectUploadExpiry, c.MultipartExpiry,
		c.TusLockLease, c.DeadRowGrace, c.AccessTokenTTL, c.RefreshTokenTTL, c.LoginWindow, c.LoginAccountWindow,
		c.LoginBackoffBase, c.LoginBackoffMax, c.LoginKnownFor, c.PasswordWait, c.KMSJobLease, c.KMSJobPoll, c.KMSJobSettle, c.KMSKeyTTL} {
		if d <= 0 {
			return false
		}
	}
	for _, n := range []int64{c.MaxJSONBody, int64(c.MaxFormFiles), int64(c.MaxZipEntries), c.MaxZipBytes, c.MaxXMLBody,
		int64(c.LoginPerPair), int64(c.LoginPerAddress), int64(c.LoginPerAccount), int64(c.PasswordQueue)} {
		if n <= 0 {
			return false
		}
	}
	return true
}

// ResolvePaths makes every file and folder path of c absolute, against
// the working directory at start-up: the one place relative paths (the
// default ./coffer-data, a relative --data or COFFER_DATA) are resolved,
// so that no layer below (the local keyring, the cache, the TLS reloader)
// sees a path whose meaning depends on where it is used.
func (c *Config) ResolvePaths() error {
	for _, p := range []*string{&c.Data, &c.ServerKeyFile, &c.CacheDir, &c.TLSCert, &c.TLSKey} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("%s: %w", *p, err)
		}
		*p = abs
	}
	return nil
}

// CacheOn reports whether the blob read cache is on in front of the blob
// store.
func (c *Config) CacheOn() bool {
	return c.Cache == "on" || c.Cache == "auto" && c.Blob != ""
}

// GatewayCacheOn reports whether reads of gateway buckets go through the
// blob cache: unless it is off, since a gateway's backend is always
// remote, whatever the shape (docs/gateway.md).
func (c *Config) GatewayCacheOn() bool { return c.Cache != "off" }

// FlagSet binds c's fields to a new flag set for `coffer serve`.
func (c *Config) FlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = usage(fs) // every flag with its COFFER_* variable
	c.BindStores(fs)
	fs.StringVar(&c.Listen, "listen", c.Listen, "address of the file API")
	fs.IntVar(&c.MetaMaxConns, "meta-max-conns", c.MetaMaxConns, "PostgreSQL connection pool size per node (0 = 4 x cores, min 8)")
	fs.DurationVar(&c.MetaWait, "meta-wait", c.MetaWait, "longest wait for a PostgreSQL connection before answering 503 (0 = 5s)")
	fs.StringVar(&c.MetaCache, "meta-cache", c.MetaCache, "on: cache bucket and object records on each node, invalidated on every node before a write returns; off: every read asks the metadata store")
	fs.Var((*bytesValue)(&c.MetaCacheSize), "meta-cache-size", "bytes of bucket and object records cached per node, e.g. 64MiB")
	fs.DurationVar(&c.MetaCacheLease, "meta-cache-lease", c.MetaCacheLease, "scale-out: a node trusts its caches only this long after its listening connection to PostgreSQL last proved alive; a write waits 1.25× it for a node that does not acknowledge")
	fs.DurationVar(&c.MetaCacheTTL, "meta-cache-ttl", c.MetaCacheTTL, "longest life of a cached record: how stale a record can be if an invalidation is lost (e.g. a write by another process on SQLite)")
	fs.Var((*gatewaysValue)(&c.Gateways), "gateway", "gateway bucket (repeatable): NAME=s3://BUCKET[/PREFIX]?endpoint=URL&region=R&mode=ro|rw&owner=EMAIL[&public=true][&credentials_file=FILE] exposes an existing bucket as Coffer bucket NAME (docs/gateway.md); COFFER_GATEWAY: several separated by whitespace")
	fs.StringVar(&c.Cache, "cache", c.Cache, "blob read cache: auto (on when --blob names a remote store; gateway buckets' reads always), on or off")
	fs.StringVar(&c.CacheDir, "cache-dir", c.CacheDir, "folder of the blob cache's disk tier, owned by the cache (default DATA/cache)")
	fs.Var((*bytesValue)(&c.CacheSize), "cache-size", "bytes the blob cache's disk tier may hold, e.g. 20GiB")
	fs.Var((*bytesValue)(&c.CacheMemory), "cache-memory", "bytes of small blobs the cache holds in memory (0 = no memory tier)")
	fs.Var((*bytesValue)(&c.CacheChunk), "cache-chunk", "unit of caching and of backend reads on a miss (64KiB..64MiB)")
	fs.StringVar(&c.Encryption, "encryption", c.Encryption, "on: encrypt every new object at rest (envelope encryption, keys from --kms); off: store new objects as they are (encrypted ones stay readable)")
	fs.StringVar(&c.KMS, "kms", c.KMS, "key provider: local: (keyring DATA/kms.keyring, created 0600), local:///FILE, awskms:///KEY?region=R, gcpkms://…, azurekeyvault://…, hashivault://KEY (default local:)")
	fs.StringVar(&c.S3Listen, "s3-listen", c.S3Listen, `address of the S3 API ("off" disables it)`)
	fs.StringVar(&c.S3Domain, "s3-domain", c.S3Domain, "domain for virtual-host-style S3 addressing (BUCKET.domain)")
	fs.StringVar(&c.S3PublicURL, "s3-public-url", c.S3PublicURL, "base URL of the S3 API as clients reach it (default http://<s3-listen>, https:// with --tls-cert)")
	fs.StringVar(&c.Region, "region", c.Region, "S3 region")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "PEM certificate chain: both listeners serve HTTPS (HTTP/2 on); re-read when it changes and on SIGHUP (needs --tls-key)")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "PEM private key of --tls-cert")
	fs.DurationVar(&c.HSTSMaxAge, "hsts-max-age", c.HSTSMaxAge, "with TLS, the max-age of the file API's Strict-Transport-Security header (whole seconds; 0 = no header)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "auto (text on a terminal, else JSON), text or json; text leaves the per-request access log to --log-level debug")
	fs.Var((*bytesValue)(&c.DefaultQuota), "default-quota", "storage quota of new accounts, e.g. 10GiB (0 = unlimited)")
	fs.Var((*bytesValue)(&c.MaxObjectSize), "max-object-size", "largest single upload, e.g. 64GiB")
	fs.Var((*bytesValue)(&c.InlineMax), "inline-max", "objects up to this size are stored in the metadata store, not as files (0 disables)")
	fs.Var((*bytesValue)(&c.MinFreeSpace), "min-free-space", "embedded shape: uploads are refused (507) rather than leave less than this free on the data folder's disk, kept for deletes and the janitor, which reclaims deleted files at once below twice this (0 = no reserve)")
	fs.StringVar(&c.ReplicateTo, "replicate-to", c.ReplicateTo, "embedded shape: stream meta.db's changes and every new blob to this folder or s3://BUCKET[/PREFIX]?endpoint=… URL (as --blob); restore with coffer restore --from URL --at TIME")
	fs.DurationVar(&c.ReplicateWindow, "replicate-window", c.ReplicateWindow, "with --replicate-to: at most this much of acknowledged writes may be lost (replication passes run every window/10, at most 1s apart)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long in-flight requests may finish on SIGINT/SIGTERM")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", c.MaxInFlight, "concurrent requests served before new ones get 503")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "deadline of requests that move no object bytes")
	fs.Var((*bytesValue)(&c.MinUploadRate), "min-upload-rate", "bytes per second a client must sustain (after 10s grace)")
	fs.DurationVar(&c.WriteIdle, "write-idle-timeout", c.WriteIdle, "a response write that makes no progress this long fails (a client that stops reading gives back its slot)")
	fs.IntVar(&c.MaxInFlightPerClient, "max-in-flight-per-client", c.MaxInFlightPerClient, "concurrent requests of one client address carrying credentials; anonymous ones get a quarter; never more than half of --max-in-flight (0 = unbounded)")
	fs.StringVar(&c.Admission, "admission", c.Admission, "adaptive (shed load when the CPU falls behind) or fixed (only --max-in-flight and the per-client bound)")
	fs.DurationVar(&c.OverloadTarget, "overload-target", c.OverloadTarget, "CPU scheduling delay (90th percentile per 100ms) above which adaptive admission sheds load")
	fs.IntVar(&c.AdmissionFloor, "admission-floor", c.AdmissionFloor, "concurrent requests per listener and class that adaptive admission never sheds (0 = 8 x cores)")
	fs.Var((*prefixesValue)(&c.TrustedProxies), "trusted-proxies", "comma-separated CIDRs whose X-Forwarded-For is trusted")
	fs.Var((*originsValue)(&c.CORSOrigins), "cors-origins", "comma-separated web origins (https://app.example.com, or *) whose pages may use share links and direct uploads of the file API across origins (docs/cors.md)")
	fs.BoolVar(&c.Console, "console", c.Console, "serve the web console at / of the file API listener (false: / answers 404)")
	fs.StringVar(&c.Signup, "signup", c.Signup, "who may create an account through the API: open (anyone who reaches it), invite (with a code from 'coffer invite create') or closed (administrators only)")
	fs.Var(&c.RateUser, "rate-user", "requests one authenticated user may make, e.g. 600/m (0 = unlimited)")
	fs.Var(&c.RateKey, "rate-key", "requests one S3 access key may make, e.g. 600/m (0 = unlimited)")
	fs.Var(&c.RateShare, "rate-share", "requests through one share link, e.g. 120/m (0 = unlimited)")
	fs.Var(&c.RateAnonymous, "rate-anonymous", "requests without credentials one client address may make, e.g. 120/m (0 = unlimited)")
	fs.Var(&c.RateUserMiB, "rate-user-bytes", "request body MiB one authenticated user may send, e.g. 1024/m (0 = unlimited)")
	fs.Var(&c.RateKeyMiB, "rate-key-bytes", "request body MiB one S3 access key may send, e.g. 1024/m (0 = unlimited)")
	fs.Var(&c.RateShareMiB, "rate-share-bytes", "request body MiB sent through one share link (drop boxes), e.g. 256/m (0 = unlimited)")
	fs.Var(&c.RateAnonymousMiB, "rate-anonymous-bytes", "request body MiB one anonymous client address may send (0 = unlimited)")
	fs.Var(&c.SignupRate, "signup-rate", "signups one client address may attempt, e.g. 5/h, 20/d, 3/10m (0 = unlimited)")
	fs.DurationVar(&c.PublicMaxAge, "public-max-age", c.PublicMaxAge, "Cache-Control max-age of objects in public-read buckets")
	fs.DurationVar(&c.ShareMaxExpiry, "share-max-expiry", c.ShareMaxExpiry, "longest lifetime of a share link (links default to 7 days, or this if shorter)")
	fs.StringVar(&c.MetricsToken, "metrics-token", c.MetricsToken, "bearer token allowing /metrics from non-loopback clients")
	fs.StringVar(&c.DebugListen, "debug-listen", c.DebugListen, "loopback address serving /debug/pprof (off when empty)")
	fs.StringVar(&c.AuditLog, "audit-log", c.AuditLog, "file of the audit log: one JSON line per security-relevant event, created 0600, rotated by size (docs/audit.md)")
	fs.Var((*bytesValue)(&c.AuditLogMaxSize), "audit-log-max-size", "the audit log file is rotated before it grows past this, e.g. 100MiB")
	fs.IntVar(&c.AuditLogMaxFiles, "audit-log-max-files", c.AuditLogMaxFiles, "audit log files kept in all, the current one included")
	fs.StringVar(&c.AuditWebhook, "audit-webhook", c.AuditWebhook, "http(s) URL receiving the audit events as JSON arrays (batched, retried with backoff; dropped when its queue is full, counted in coffer_audit_dropped_total)")
	fs.IntVar(&c.AuditRecent, "audit-recent", c.AuditRecent, "audit events each node keeps in memory for GET /api/v1/admin/audit")
	fs.DurationVar(&c.OrphanGrace, "orphan-grace", c.OrphanGrace, "advanced: age before a blob that no row and no live upload points at is deleted")
	fs.DurationVar(&c.JanitorInterval, "janitor-interval", c.JanitorInterval, "advanced: how often replaced blobs and expired uploads are reclaimed (orphans every orphan-grace, at most hourly)")
	fs.DurationVar(&c.StagingLease, "staging-lease", c.StagingLease, "advanced: lease of an upload in flight, renewed every third of it; a dead node's reservations lapse after it")
	fs.DurationVar(&c.TusExpiry, "tus-expiry", c.TusExpiry, "how long an unfinished tus upload lives (its Upload-Expires); the janitor reclaims it after")
	fs.IntVar(&c.KMSJobPage, "kms-job-page", c.KMSJobPage, "advanced: rows per page of a key re-wrap or coffer encrypt job (its cursor is saved after each)")
	fs.DurationVar(&c.KMSJobPause, "kms-job-pause", c.KMSJobPause, "advanced: pause between pages of a key re-wrap or coffer encrypt job (a throttle)")
	fs.DurationVar(&c.LifecycleInterval, "lifecycle-interval", c.LifecycleInterval, "time between the starts of two lifecycle runs (docs/lifecycle.md)")
	fs.IntVar(&c.LifecyclePage, "lifecycle-page", c.LifecyclePage, "advanced: versions per page of a lifecycle run (its cursor is saved after each)")
	fs.BoolVar(&c.VerifyReads, "verify-reads", c.VerifyReads, "check a whole-object read of a plaintext object against its recorded CRC-32C (or SHA-256) while it streams; a damaged blob's response is cut, never completed (docs/operations.md)")
	fs.StringVar(&c.OTelEndpoint, "otel-endpoint", c.OTelEndpoint, "send OpenTelemetry traces over OTLP/HTTP (protobuf) to this URL, e.g. http://127.0.0.1:4318 (path default /v1/traces; empty = tracing off, at no cost; docs/tracing.md)")
	fs.Float64Var(&c.OTelSampleRatio, "otel-sample-ratio", c.OTelSampleRatio, "share of new traces recorded and exported, 0 to 1 (an incoming sampled traceparent is always followed)")
	fs.DurationVar(&c.ScrubEvery, "scrub-every", c.ScrubEvery, "time between the starts of two background scrubs, which check every blob against its checksum (0 = off; coffer fsck runs one)")
	fs.Var((*bytesValue)(&c.ScrubRate), "scrub-rate", "bytes per second the scrub reads, at most, e.g. 50MiB")
	fs.Var((*bytesValue)(&c.HeapFloor), "heap-floor", "while the node serves requests, let the Go heap grow to this before a garbage collection whatever GOGC says (fewer collections at a small live heap; the idle trim gives it back), e.g. 32MiB (0 = GOGC alone)")
	fs.DurationVar(&c.IdleTrim, "idle-trim", c.IdleTrim, "after this long without a request, return the memory the node holds free to the OS: a garbage collection, and SQLite's page caches (0 = never)")
	fs.DurationVar(&c.LifecycleDay, "lifecycle-day", c.LifecycleDay, "TEST ONLY: length of a lifecycle day (0 = 24h; at most 1m), so tests expire objects in seconds; never set it in production")
	fs.DurationVar(&c.ClockOffset, "clock-offset", c.ClockOffset, "TEST ONLY: skew the clock of the object and account services by this much (at most 24h either way), for fault tests; never set it in production")
	fs.IntVar(&c.LoginConcurrency, "login-concurrency", c.LoginConcurrency, "password hashes run in parallel (0 = half the cores)")
	fs.Func("argon2-memory", "argon2id memory in `KiB` (default 19456)", func(s string) error {
		n, err := strconv.ParseUint(s, 10, 32)
		c.Argon2Memory = uint32(n)
		return err
	})
	fs.Func("argon2-time", "argon2id `passes` (default 2)", func(s string) error {
		n, err := strconv.ParseUint(s, 10, 32)
		c.Argon2Time = uint32(n)
		return err
	})
	return fs
}

// StoreFlags are the flags that name the stores and the server key,
// bound by BindStores.
var StoreFlags = []string{"data", "meta", "blob", "server-key-file"}

// BindStores binds the flags that name the stores and the server key
// (StoreFlags) to c's fields. coffer serve's FlagSet and every admin
// command (coffer user, key, gc, invite, kms, encrypt) bind them here, so
// that both read the same fields, with the same help, and ResolvePaths
// resolves them the same way.
func (c *Config) BindStores(fs *flag.FlagSet) {
	fs.StringVar(&c.Data, "data", c.Data, "data folder (SQLite metadata, blobs, server key)")
	fs.StringVar(&c.Meta, "meta", c.Meta, "metadata database: postgres://USER:PASS@HOST/DB (default: SQLite in the data folder)")
	fs.StringVar(&c.Blob, "blob", c.Blob, "blob store: s3://BUCKET[/PREFIX]?endpoint=URL&region=R (credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY; default: the data folder)")
	fs.StringVar(&c.ServerKeyFile, "server-key-file", c.ServerKeyFile, "file holding the server key, shared by every node of a cluster (default DATA/server.key, which coffer serve creates if missing)")
}

// EnvName is the environment variable of a flag: COFFER_ and the flag name
// in upper case with '-' as '_'.
func EnvName(flagName string) string {
	return "COFFER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ApplyEnv sets every flag not given on the command line from its
// environment variable, if set. Flags win over the environment. With
// names, only those flags read the environment (an admin command's own
// flags, --email or --password, have no variable).
func ApplyEnv(fs *flag.FlagSet, getenv func(string) string, names ...string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || len(names) > 0 && !slices.Contains(names, f.Name) {
			return
		}
		if v := getenv(EnvName(f.Name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", EnvName(f.Name), err))
			}
		}
	})
	return errors.Join(errs...)
}

// bytesValue parses sizes like 1048576, 64KiB, 10MB, 5GiB.
type bytesValue int64

// String is the size in the largest binary unit that divides it exactly
// (65536 → 64KiB), which Set reads back.
func (b *bytesValue) String() string {
	n := int64(*b)
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// Type names the value in the help.
func (*bytesValue) Type() string { return "size" }

func (b *bytesValue) Set(s string) error {
	n, err := ParseBytes(s)
	*b = bytesValue(n)
	return err
}

// ParseBytes parses a byte size with an optional unit (B, KB, MB, GB, TB
// in powers of 1000; KiB, MiB, GiB, TiB in powers of 1024).
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("invalid size unit in %q", s)
	}
	return int64(f * mult), nil
}

// originsValue is a comma-separated list of web origins.
type originsValue []string

// Type names the value in the help.
func (*originsValue) Type() string { return "origins" }

func (o *originsValue) String() string { return strings.Join(*o, ",") }

func (o *originsValue) Set(s string) error {
	*o = nil
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if err := ValidOrigin(part); err != nil {
			return err
		}
		*o = append(*o, part)
	}
	return nil
}

// ValidOrigin checks a web origin as browsers send it in Origin:
// scheme://host[:port] with scheme http or https and nothing after, or
// "*" (any origin).
func ValidOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#") || o != u.Scheme+"://"+strings.ToLower(u.Host) {
		return fmt.Errorf("%q is not a web origin (scheme://host[:port], lower-case, no path, or *)", o)
	}
	return nil
}

type prefixesValue []netip.Prefix

// Type names the value in the help.
func (*prefixesValue) Type() string { return "cidrs" }

func (p *prefixesValue) String() string {
	var s []string
	for _, x := range *p {
		s = append(s, x.String())
	}
	return strings.Join(s, ",")
}

func (p *prefixesValue) Set(s string) error {
	*p = nil
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			a, err := netip.ParseAddr(part)
			if err != nil {
				return err
			}
			*p = append(*p, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		pr, err := netip.ParsePrefix(part)
		if err != nil {
			return err
		}
		*p = append(*p, pr.Masked())
	}
	return nil
}

// Rate is a number of events per period. The zero Rate means unlimited.
type Rate struct {
	N   int
	Per time.Duration
}

// Off reports whether r sets no limit.
func (r Rate) Off() bool { return r.N == 0 }

// String formats r the way ParseRate reads it.
func (r Rate) String() string {
	if r.Off() {
		return "0"
	}
	for _, u := range rateUnits {
		if r.Per == u.d {
			return fmt.Sprintf("%d/%s", r.N, u.name)
		}
	}
	return fmt.Sprintf("%d/%s", r.N, r.Per)
}

// Set implements flag.Value.
func (r *Rate) Set(s string) error {
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

var rateUnits = []struct {
	name string
	d    time.Duration
}{{"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}}

const maxRatePeriod = 366 * 24 * time.Hour

// ParseRate parses "N/UNIT" with UNIT s, m, h or d ("5/h"), or "N/DURATION"
// with a Go duration ("3/10m", "100/1h30m"); "0" (or "off") is unlimited.
// N is 1 to 1,000,000,000 and the period 1s to 366 days.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if s == "0" || s == "off" {
		return Rate{}, nil
	}
	num, per, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf("invalid rate %q: want N/UNIT such as 5/h, or 0 for unlimited", s)
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil {
		return Rate{}, fmt.Errorf("invalid rate %q: %q is not a whole number", s, num)
	}
	r := Rate{N: n}
	per = strings.TrimSpace(per)
	for _, u := range rateUnits {
		if per == u.name {
			r.Per = u.d
		}
	}
	if r.Per == 0 {
		if r.Per, err = time.ParseDuration(per); err != nil {
			return Rate{}, fmt.Errorf("invalid rate %q: period %q is not s, m, h, d or a duration", s, per)
		}
	}
	if err := r.check(); err != nil {
		return Rate{}, fmt.Errorf("invalid rate %q: %v", s, err)
	}
	if r.Off() {
		return Rate{}, nil
	}
	return r, nil
}

func (r Rate) check() error {
	switch {
	case r.Off():
		return nil
	case r.N < 0 || r.N > 1_000_000_000:
		return errors.New("the count must be between 1 and 1000000000 (0 for unlimited)")
	case r.Per < time.Second || r.Per > maxRatePeriod:
		return errors.New("the period must be between 1s and 366d")
	}
	return nil
}

// ParseDuration is time.ParseDuration that also takes whole days ("7d",
// "30d"), for values people write in days.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100_000 {
			return 0, fmt.Errorf("invalid duration %q: want whole days (7d) or a duration (12h, 90m)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want whole days (7d) or a duration (12h, 90m)", s)
	}
	return d, nil
}

// gatewaysValue is a repeatable flag; one value may hold several
// specifications separated by whitespace (COFFER_GATEWAY).
type gatewaysValue []string

func (g *gatewaysValue) String() string {
	if g == nil {
		return ""
	}
	return strings.Join(*g, " ")
}

func (g *gatewaysValue) Set(s string) error {
	f := strings.Fields(s)
	if len(f) == 0 {
		return errors.New("empty gateway specification")
	}
	*g = append(*g, f...)
	return nil
}

package config

import (
	"strings"
	"testing"
	"time"
)

func TestFlagsWinOverEnv(t *testing.T) {
	c := Defaults()
	fs := c.FlagSet("serve")
	if err := fs.Parse([]string{"--listen", "127.0.0.1:1234"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"COFFER_LISTEN":           "127.0.0.1:9999",
		"COFFER_DATA":             "/srv/coffer",
		"COFFER_DEFAULT_QUOTA":    "10GiB",
		"COFFER_SHUTDOWN_TIMEOUT": "5s",
		"COFFER_TRUSTED_PROXIES":  "10.0.0.0/8, 192.168.1.1",
	}
	if err := ApplyEnv(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:1234" {
		t.Errorf("Listen = %q: the flag must win", c.Listen)
	}
	if c.Data != "/srv/coffer" || c.DefaultQuota != 10<<30 || c.ShutdownTimeout != 5*time.Second {
		t.Errorf("env not applied: %+v", c)
	}
	if len(c.TrustedProxies) != 2 || c.TrustedProxies[1].Bits() != 32 {
		t.Errorf("TrustedProxies = %v", c.TrustedProxies)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestEnvErrorsNamed(t *testing.T) {
	c := Defaults()
	fs := c.FlagSet("serve")
	fs.Parse(nil)
	err := ApplyEnv(fs, func(k string) string {
		if k == "COFFER_MAX_IN_FLIGHT" {
			return "lots"
		}
		return ""
	})
	if err == nil || !contains(err.Error(), "COFFER_MAX_IN_FLIGHT") {
		t.Fatalf("err = %v", err)
	}
}

func TestValidate(t *testing.T) {
	c := Defaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	c.Listen = "nonsense"
	c.LogLevel = "loud"
	c.MaxInFlight = 0
	c.HSTSMaxAge = -time.Second
	err := c.Validate()
	for _, want := range []string{"listen", "log-level", "max-in-flight", "hsts-max-age"} {
		if err == nil || !contains(err.Error(), want) {
			t.Errorf("Validate error %v lacks %q", err, want)
		}
	}
}

// TestFixedValuesRefuseZero: a fixed value (no flag) that is zero or
// negative is refused: none has a meaning for zero, and the services
// take them as given.
func TestFixedValuesRefuseZero(t *testing.T) {
	for name, zero := range map[string]func(*Config){
		"GarbageGrace": func(c *Config) { c.GarbageGrace = 0 }, "MaxJSONBody": func(c *Config) { c.MaxJSONBody = 0 },
		"MaxXMLBody": func(c *Config) { c.MaxXMLBody = 0 }, "MultipartExpiry": func(c *Config) { c.MultipartExpiry = 0 },
		"DirectUploadExpiry": func(c *Config) { c.DirectUploadExpiry = -time.Hour }, "TusLockLease": func(c *Config) { c.TusLockLease = 0 },
		"DeadRowGrace": func(c *Config) { c.DeadRowGrace = 0 }, "AccessTokenTTL": func(c *Config) { c.AccessTokenTTL = 0 },
		"RefreshTokenTTL": func(c *Config) { c.RefreshTokenTTL = 0 }, "LoginPerPair": func(c *Config) { c.LoginPerPair = 0 },
		"LoginPerAddress": func(c *Config) { c.LoginPerAddress = 0 }, "LoginWindow": func(c *Config) { c.LoginWindow = 0 },
		"LoginPerAccount": func(c *Config) { c.LoginPerAccount = 0 }, "LoginAccountWindow": func(c *Config) { c.LoginAccountWindow = 0 },
		"LoginBackoffBase": func(c *Config) { c.LoginBackoffBase = 0 }, "LoginBackoffMax": func(c *Config) { c.LoginBackoffMax = 0 },
		"LoginKnownFor": func(c *Config) { c.LoginKnownFor = 0 }, "PasswordQueue": func(c *Config) { c.PasswordQueue = 0 },
		"PasswordWait": func(c *Config) { c.PasswordWait = 0 }, "KMSJobLease": func(c *Config) { c.KMSJobLease = 0 },
		"KMSJobPoll": func(c *Config) { c.KMSJobPoll = 0 }, "KMSJobSettle": func(c *Config) { c.KMSJobSettle = 0 },
		"KMSKeyTTL": func(c *Config) { c.KMSKeyTTL = 0 }, "PressureGrace": func(c *Config) { c.PressureGrace = 0 },
	} {
		c := Defaults()
		zero(&c)
		if err := c.Validate(); err == nil || !contains(err.Error(), "fixed values") {
			t.Errorf("%s <= 0: Validate = %v", name, err)
		}
	}
}

// TestTLSFlags: the TLS pair comes from flags or COFFER_TLS_*; one without
// the other is refused.
func TestTLSFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr bool
	}{
		{name: "neither"},
		{name: "both flags", args: []string{"--tls-cert", "c.pem", "--tls-key", "k.pem"}},
		{name: "both env", env: map[string]string{"COFFER_TLS_CERT": "c.pem", "COFFER_TLS_KEY": "k.pem"}},
		{name: "flag and env", args: []string{"--tls-cert", "c.pem"}, env: map[string]string{"COFFER_TLS_KEY": "k.pem"}},
		{name: "cert only", args: []string{"--tls-cert", "c.pem"}, wantErr: true},
		{name: "key only", args: []string{"--tls-key", "k.pem"}, wantErr: true},
		{name: "key only by env", env: map[string]string{"COFFER_TLS_KEY": "k.pem"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			fs := c.FlagSet("serve")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := ApplyEnv(fs, func(k string) string { return tc.env[k] }); err != nil {
				t.Fatal(err)
			}
			err := c.Validate()
			if got, want := err != nil, tc.wantErr; got != want {
				t.Fatalf("Validate: %v, want error %v", err, want)
			}
			if err != nil && !contains(err.Error(), "tls-cert and tls-key") {
				t.Errorf("error %q does not name the flags", err)
			}
			if !tc.wantErr && tc.name != "neither" && (c.TLSCert != "c.pem" || c.TLSKey != "k.pem") {
				t.Errorf("TLSCert, TLSKey = %q, %q", c.TLSCert, c.TLSKey)
			}
		})
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1048576": 1 << 20, "64KiB": 64 << 10, "10MB": 10e6, "1.5GiB": 3 << 29, "2 tib": 2 << 40} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "10XB"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]Rate{
		"0":         {},
		"off":       {},
		"5/h":       {5, time.Hour},
		" 20 / d ":  {20, 24 * time.Hour},
		"3/10m":     {3, 10 * time.Minute},
		"100/1h30m": {100, 90 * time.Minute},
		"1/s":       {1, time.Second},
		"0/h":       {},
	} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "5", "5/", "/h", "x/h", "-1/h", "5/week", "5/0s", "5/500ms", "5/9000h", "2000000000/h", "1.5/h"} {
		if r, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = %+v, want an error", bad, r)
		}
	}
	for _, r := range []Rate{{}, {5, time.Hour}, {3, 10 * time.Minute}, {7, 24 * time.Hour}} {
		if got, err := ParseRate(r.String()); err != nil || got != r {
			t.Errorf("ParseRate(%q) = %+v, %v; want %+v", r.String(), got, err, r)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"0", "off", "5/h", "3/10m", "100/1h30m", "-1/h", "5/", "1/9223372036854775807ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		if r.check() != nil {
			t.Fatalf("ParseRate(%q) = %+v, which is out of range", s, r)
		}
		if r.N == 0 && r.Per != 0 {
			t.Fatalf("ParseRate(%q) = %+v: unlimited with a period", s, r)
		}
		back, err := ParseRate(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRate(%q) = %+v, but its String %q parses to %+v, %v", s, r, r.String(), back, err)
		}
	})
}

func TestSignupFlags(t *testing.T) {
	c := Defaults()
	if c.Signup != "open" || c.SignupRate != (Rate{5, time.Hour}) {
		t.Errorf("defaults: signup %q, rate %v; want open, 5/h", c.Signup, c.SignupRate)
	}
	fs := c.FlagSet("serve")
	if err := fs.Parse([]string{"--signup-rate", "0"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"COFFER_SIGNUP": "invite", "COFFER_SIGNUP_RATE": "9/h"}
	if err := ApplyEnv(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.Signup != "invite" || !c.SignupRate.Off() {
		t.Errorf("signup %q, rate %v; want invite from the environment and 0 from the flag", c.Signup, c.SignupRate)
	}
	c.Signup = "maybe"
	c.SignupRate = Rate{N: -3, Per: time.Hour}
	err := c.Validate()
	for _, want := range []string{"signup:", "signup-rate"} {
		if err == nil || !contains(err.Error(), want) {
			t.Errorf("Validate error %v lacks %q", err, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "0d": 0, " 1d ": 24 * time.Hour, "12h": 12 * time.Hour, "90m": 90 * time.Minute, "1h30m": 90 * time.Minute} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "d", "1.5d", "-1d", "7days", "999999d", "x"} {
		if got, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", bad, got)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"7d", "12h", "1h30m", "-1d", "99999d", "d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if days, ok := strings.CutSuffix(strings.TrimSpace(s), "d"); ok && (d < 0 || d%(24*time.Hour) != 0) {
			t.Fatalf("ParseDuration(%q) = %v: %q days are not whole days", s, d, days)
		}
	})
}

func TestLogFormats(t *testing.T) {
	for _, c := range []struct {
		format string
		ok     bool
	}{{"auto", true}, {"text", true}, {"json", true}, {"pretty", false}, {"", false}} {
		cfg := Defaults()
		cfg.LogFormat = c.format
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("log format %q: Validate = %v, want ok %v", c.format, err, c.ok)
		}
	}
	if got, want := Defaults().LogFormat, "auto"; got != want {
		t.Errorf("default log format %q, want %q", got, want)
	}
}

// TestSizeDefaultsReadBack: the help shows sizes in binary units, and
// what it shows parses back to the same value.
func TestSizeDefaultsReadBack(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0"}, {1000, "1000"}, {64 << 10, "64KiB"}, {64 << 30, "64GiB"}, {3 << 19, "1536KiB"}, {5 << 40, "5TiB"}} {
		v := bytesValue(c.n)
		if got := v.String(); got != c.want {
			t.Errorf("String(%d) = %q, want %q", c.n, got, c.want)
		}
		var back bytesValue
		if err := back.Set(v.String()); err != nil || back != v {
			t.Errorf("Set(%q) = %d, %v; want %d", v.String(), back, err, c.n)
		}
	}
}

// TestEncryptionFlags: --encryption off|on and --kms, from flags or
// COFFER_ENCRYPTION / COFFER_KMS; several nodes must name a shared key
// provider.
func TestEncryptionFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    string // Encryption after parsing
		wantKMS string
		wantErr string
	}{
		{name: "default off", want: "off"},
		{name: "on by flag", args: []string{"--encryption", "on"}, want: "on"},
		{name: "on by env", env: map[string]string{"COFFER_ENCRYPTION": "on", "COFFER_KMS": "local:///k"}, want: "on", wantKMS: "local:///k"},
		{name: "kms by flag", args: []string{"--encryption", "on", "--kms", "awskms:///alias/c?region=us-east-1"}, want: "on", wantKMS: "awskms:///alias/c?region=us-east-1"},
		{name: "bad value", args: []string{"--encryption", "yes"}, want: "yes", wantErr: "encryption"},
		{name: "scale-out needs a shared kms", args: []string{"--encryption", "on", "--meta", "postgres://x/y"}, want: "on", wantErr: "kms"},
		{name: "scale-out with a shared kms", args: []string{"--encryption", "on", "--meta", "postgres://x/y", "--kms", "local:///etc/k"}, want: "on", wantKMS: "local:///etc/k"},
		{name: "scale-out off needs none", args: []string{"--meta", "postgres://x/y"}, want: "off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			fs := c.FlagSet("serve")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := ApplyEnv(fs, func(k string) string { return tc.env[k] }); err != nil {
				t.Fatal(err)
			}
			if c.Encryption != tc.want || c.KMS != tc.wantKMS {
				t.Errorf("Encryption, KMS = %q, %q; want %q, %q", c.Encryption, c.KMS, tc.want, tc.wantKMS)
			}
			err := c.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !contains(err.Error(), tc.wantErr+":")):
				t.Errorf("Validate: %v, want an error about %q", err, tc.wantErr)
			}
		})
	}
}

func TestGatewayFlags(t *testing.T) {
	const a = "photos=s3://bk?mode=ro&owner=a@x.io"
	const b = "drop=s3://up/p?mode=rw&owner=b@x.io&credentials_file=/c"
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    []string
		wantErr bool
	}{
		{name: "none"},
		{name: "repeated flag", args: []string{"--gateway", a, "--gateway", b}, want: []string{a, b}},
		{name: "env, whitespace-separated", env: map[string]string{"COFFER_GATEWAY": a + "\n  " + b + " "}, want: []string{a, b}},
		{name: "flag wins over env", args: []string{"--gateway", b}, env: map[string]string{"COFFER_GATEWAY": a}, want: []string{b}},
		{name: "no name", args: []string{"--gateway", "s3://bk?mode=ro"}, want: []string{"s3://bk?mode=ro"}, wantErr: true},
		{name: "not s3", args: []string{"--gateway", "x=http://bk"}, want: []string{"x=http://bk"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			fs := c.FlagSet("serve")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := ApplyEnv(fs, func(k string) string { return tc.env[k] }); err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(c.Gateways, " | "), strings.Join(tc.want, " | "); got != want {
				t.Errorf("Gateways: got %q, want %q", got, want)
			}
			err := c.Validate()
			if got, want := err != nil, tc.wantErr; got != want {
				t.Fatalf("Validate: %v, want error %v", err, want)
			}
		})
	}
	c := Defaults()
	if err := c.FlagSet("serve").Parse([]string{"--gateway", "  "}); err == nil {
		t.Error("an empty --gateway: want an error")
	}
}

// TestMetaCacheFlags: --meta-cache on|off (COFFER_META_CACHE), its size
// and TTL, validated.
func TestMetaCacheFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    string
		size    int64
		wantErr string
	}{
		{name: "default on, 64MiB", want: "on", size: 64 << 20},
		{name: "off by flag", args: []string{"--meta-cache", "off"}, want: "off", size: 64 << 20},
		{name: "off by env", env: map[string]string{"COFFER_META_CACHE": "off"}, want: "off", size: 64 << 20},
		{name: "size", args: []string{"--meta-cache-size", "256MiB"}, want: "on", size: 256 << 20},
		{name: "bad value", args: []string{"--meta-cache", "yes"}, want: "yes", size: 64 << 20, wantErr: "meta-cache"},
		{name: "too small", args: []string{"--meta-cache-size", "1KiB"}, want: "on", size: 1 << 10, wantErr: "meta-cache-size and meta-cache-ttl"},
		{name: "no ttl", args: []string{"--meta-cache-ttl", "0s"}, want: "on", size: 64 << 20, wantErr: "meta-cache-size and meta-cache-ttl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			fs := c.FlagSet("serve")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := ApplyEnv(fs, func(k string) string { return tc.env[k] }); err != nil {
				t.Fatal(err)
			}
			if got, want := c.MetaCache, tc.want; got != want {
				t.Errorf("MetaCache = %q, want %q", got, want)
			}
			if got, want := c.MetaCacheSize, tc.size; got != want {
				t.Errorf("MetaCacheSize = %d, want %d", got, want)
			}
			err := c.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !contains(err.Error(), tc.wantErr+":")):
				t.Errorf("Validate: %v, want an error about %q", err, tc.wantErr)
			}
		})
	}
}

// TestCacheFlags: --cache auto is on for a remote blob store only; the
// sizes parse and are bounded.
func TestCacheFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantOn  bool
		wantErr string
	}{
		{nil, false, ""},
		{[]string{"--blob", "s3://b?endpoint=http://127.0.0.1:1"}, true, ""},
		{[]string{"--blob", "s3://b?endpoint=http://127.0.0.1:1", "--cache", "off"}, false, ""},
		{[]string{"--cache", "on", "--cache-size", "1GiB", "--cache-memory", "0", "--cache-chunk", "4MiB"}, true, ""},
		{[]string{"--cache", "maybe"}, false, "cache"},
		{[]string{"--cache-size", "0"}, false, "cache-size"},
		{[]string{"--cache-chunk", "1KiB"}, false, "cache-chunk"},
	} {
		c := Defaults()
		if err := c.FlagSet("serve").Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := c.Validate()
		if tc.wantErr != "" {
			if err == nil || !contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: Validate = %v, want an error naming %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
		}
		if got := c.CacheOn(); got != tc.wantOn {
			t.Errorf("%q: CacheOn = %v, want %v", tc.args, got, tc.wantOn)
		}
	}
}

// TestGatewayCacheOn: gateway reads are cached unless --cache off, on the
// embedded shape too (a gateway's backend is always remote).
func TestGatewayCacheOn(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--cache", "auto"}, true},
		{[]string{"--cache", "on"}, true},
		{[]string{"--cache", "off"}, false},
		{[]string{"--blob", "s3://b?endpoint=http://127.0.0.1:1", "--cache", "off"}, false},
		{[]string{"--blob", "s3://b?endpoint=http://127.0.0.1:1"}, true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c := Defaults()
			if err := c.FlagSet("serve").Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if got, want := c.GatewayCacheOn(), tc.want; got != want {
				t.Errorf("GatewayCacheOn = %v, want %v", got, want)
			}
		})
	}
}

// TestLifecycleFlags: --lifecycle-day is test-only and bounded (at most a
// minute, never negative: a typo cannot shorten days to an hour), read
// from COFFER_LIFECYCLE_DAY like every flag; interval and page size are
// checked.
func TestLifecycleFlags(t *testing.T) {
	checkFlags(t, "lifecycle", []flagCase{
		{nil, nil, true},
		{[]string{"--lifecycle-day", "2s"}, nil, true},
		{nil, map[string]string{"COFFER_LIFECYCLE_DAY": "1m"}, true},
		{[]string{"--lifecycle-day", "61s"}, nil, false},
		{nil, map[string]string{"COFFER_LIFECYCLE_DAY": "24h"}, false},
		{[]string{"--lifecycle-day", "-1s"}, nil, false},
		{[]string{"--lifecycle-interval", "0s"}, nil, false},
		{[]string{"--lifecycle-page", "0"}, nil, false},
		{[]string{"--lifecycle-page", "1001"}, nil, false},
	}, nil)
}

// flagCase is a command line and environment, and whether Validate
// accepts them.
type flagCase struct {
	args []string
	env  map[string]string
	ok   bool
}

// checkFlags parses and validates each case from the defaults: a refusal
// must name word; then check, if not nil, looks at the configuration.
func checkFlags(t *testing.T, word string, cases []flagCase, check func(flagCase, Config)) {
	t.Helper()
	for _, tc := range cases {
		c := Defaults()
		fs := c.FlagSet("coffer serve")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if err := ApplyEnv(fs, func(k string) string { return tc.env[k] }); err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		err := c.Validate()
		if (err == nil) != tc.ok || err != nil && !contains(err.Error(), word) {
			t.Errorf("%v %v: Validate = %v, want ok %v", tc.args, tc.env, err, tc.ok)
		}
		if check != nil {
			check(tc, c)
		}
	}
}

// TestScrubFlags: --scrub-every is 0 (off) or at least a minute,
// --scrub-rate a size of at least 1KiB; --verify-reads is on by default
// and COFFER_VERIFY_READS turns it off.
func TestScrubFlags(t *testing.T) {
	if c := Defaults(); !c.VerifyReads || c.ScrubEvery != 168*time.Hour || c.ScrubRate != 50<<20 {
		t.Errorf("defaults: verify %v, every %v, rate %d", c.VerifyReads, c.ScrubEvery, c.ScrubRate)
	}
	checkFlags(t, "scrub", []flagCase{
		{[]string{"--scrub-every", "0"}, nil, true},
		{[]string{"--scrub-every", "24h", "--scrub-rate", "10MiB"}, nil, true},
		{nil, map[string]string{"COFFER_VERIFY_READS": "false"}, true},
		{[]string{"--scrub-every", "30s"}, nil, false},
		{[]string{"--scrub-every", "-1h"}, nil, false},
		{[]string{"--scrub-rate", "100"}, nil, false},
	}, func(tc flagCase, c Config) {
		if tc.env != nil && c.VerifyReads {
			t.Errorf("COFFER_VERIFY_READS=false: VerifyReads still on")
		}
	})
}

// TestCORSOriginsFlag: --cors-origins and COFFER_CORS_ORIGINS take
// comma-separated web origins (or *); anything else is refused at parse.
func TestCORSOriginsFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want []string // nil with ok false: refused
		ok   bool
	}{
		{nil, nil, nil, true},
		{[]string{"--cors-origins", "https://app.example.com, http://127.0.0.1:5173"}, nil, []string{"https://app.example.com", "http://127.0.0.1:5173"}, true},
		{nil, map[string]string{"COFFER_CORS_ORIGINS": "*"}, []string{"*"}, true},
		{[]string{"--cors-origins", "https://app.example.com/"}, nil, nil, false},
		{[]string{"--cors-origins", "app.example.com"}, nil, nil, false},
		{[]string{"--cors-origins", "ftp://app.example.com"}, nil, nil, false},
		{[]string{"--cors-origins", "https://App.example.com"}, nil, nil, false},
		{[]string{"--cors-origins", "https://u@app.example.com"}, nil, nil, false},
	} {
		c := Defaults()
		fs := c.FlagSet("coffer serve")
		err := fs.Parse(tc.args)
		if err == nil {
			err = ApplyEnv(fs, func(k string) string { return tc.env[k] })
		}
		if (err == nil) != tc.ok {
			t.Errorf("%v %v: %v, want ok %v", tc.args, tc.env, err, tc.ok)
			continue
		}
		if tc.ok && strings.Join(c.CORSOrigins, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%v %v: CORSOrigins %q, want %q", tc.args, tc.env, c.CORSOrigins, tc.want)
		}
	}
}

// TestHeapFloorFlag: --heap-floor (COFFER_HEAP_FLOOR) takes a size, 0
// turning the floor off; a negative one is refused.
func TestHeapFloorFlag(t *testing.T) {
	if c := Defaults(); c.HeapFloor != 32<<20 {
		t.Errorf("default heap floor %d, want 32 MiB", c.HeapFloor)
	}
	checkFlags(t, "heap-floor", []flagCase{
		{[]string{"--heap-floor", "0"}, nil, true},
		{[]string{"--heap-floor", "64MiB"}, nil, true},
		{nil, map[string]string{"COFFER_HEAP_FLOOR": "16MiB"}, true},
		{[]string{"--heap-floor", "2TiB"}, nil, false},
	}, func(tc flagCase, c Config) {
		switch {
		case tc.env != nil && c.HeapFloor != 16<<20:
			t.Errorf("COFFER_HEAP_FLOOR=16MiB: %d", c.HeapFloor)
		case len(tc.args) == 2 && tc.args[1] == "64MiB" && c.HeapFloor != 64<<20:
			t.Errorf("--heap-floor 64MiB: %d", c.HeapFloor)
		}
	})
}

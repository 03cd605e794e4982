package config

import (
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
	err := c.Validate()
	for _, want := range []string{"listen", "log-level", "max-in-flight"} {
		if err == nil || !contains(err.Error(), want) {
			t.Errorf("Validate error %v lacks %q", err, want)
		}
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

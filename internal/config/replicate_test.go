package config

import (
	"strings"
	"testing"
	"time"
)

// TestReplicateValidate: --replicate-to is the embedded shape's; the
// scale-out shape is refused with the reason.
func TestReplicateValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*Config)
		want string // "" valid
	}{
		{"off", func(*Config) {}, ""},
		{"folder", func(c *Config) { c.ReplicateTo = "/mnt/replica" }, ""},
		{"with --blob", func(c *Config) { c.ReplicateTo = "/mnt/replica"; c.Blob = "s3://b?endpoint=http://127.0.0.1:1" }, "embedded shape"},
		{"with --meta", func(c *Config) { c.ReplicateTo = "/mnt/replica"; c.Meta = "postgres://x@127.0.0.1/db" }, "embedded shape"},
		{"short window", func(c *Config) { c.ReplicateTo = "/mnt/replica"; c.ReplicateWindow = time.Millisecond }, "replicate-window"},
		{"window unused", func(c *Config) { c.ReplicateWindow = 0 }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.Data = t.TempDir()
			c.set(&cfg)
			err := cfg.Validate()
			if c.want == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("got %v, want an error naming %q", err, c.want)
			}
		})
	}
}

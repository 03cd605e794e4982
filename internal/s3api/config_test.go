package s3api

import (
	"testing"

	"github.com/coffer-storage/coffer/internal/config"
)

// testConfig is the S3 API's default configuration (config.Defaults())
// changed by change, if not nil.
func testConfig(change func(*Config)) Config {
	c := ConfigFrom(config.Defaults())
	if change != nil {
		change(&c)
	}
	return c
}

// TestDefaultConfig: the defaults come from config.Defaults() alone; New
// takes its configuration as given (a zero one stays zero).
func TestDefaultConfig(t *testing.T) {
	got := New(Services{}, testConfig(nil), nil).cfg
	if got.Region != "us-east-1" || got.Domain != "" || got.MaxXMLBody != 4<<20 {
		t.Errorf("config.Defaults(): %+v", got)
	}
	if zero := New(Services{}, Config{}, nil).cfg; zero.Region != "" || zero.MaxXMLBody != 0 {
		t.Errorf("New defaulted a zero configuration: %+v", zero)
	}
}

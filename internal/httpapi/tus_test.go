package httpapi

import (
	"net/http/httptest"
	"testing"

	"github.com/coffer-storage/coffer/internal/ratelimit"
)

// TestClassifyTus: tus bodies stream and are writes (admission class,
// no request timeout); the rest are control requests.
func TestClassifyTus(t *testing.T) {
	api := New(Services{}, testConfig(nil), nil)
	tests := []struct {
		method, path string
		class        ratelimit.Class
		streams      bool
	}{
		{"PATCH", "/api/v1/tus/abc", ratelimit.Write, true},
		{"POST", "/api/v1/tus/", ratelimit.Write, true},
		{"HEAD", "/api/v1/tus/abc", ratelimit.Control, false},
		{"DELETE", "/api/v1/tus/abc", ratelimit.Control, false},
		{"OPTIONS", "/api/v1/tus/", ratelimit.Control, false},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			k := api.Classify(httptest.NewRequest(tc.method, tc.path, nil))
			if k.Class != tc.class || k.Streams != tc.streams {
				t.Errorf("got class %v streams %v, want %v %v", k.Class, k.Streams, tc.class, tc.streams)
			}
		})
	}
}

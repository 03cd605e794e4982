package config

import "testing"

// TestOTelFlags: --otel-endpoint (COFFER_OTEL_ENDPOINT) is empty (off) or
// an http(s) URL; --otel-sample-ratio (COFFER_OTEL_SAMPLE_RATIO) is 0 to
// 1, default 0.1.
func TestOTelFlags(t *testing.T) {
	if d := Defaults(); d.OTelEndpoint != "" || d.OTelSampleRatio != 0.1 {
		t.Fatalf("defaults: %q %v", d.OTelEndpoint, d.OTelSampleRatio)
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		ok   bool
	}{
		{nil, nil, true},
		{[]string{"--otel-endpoint", "http://127.0.0.1:4318"}, nil, true},
		{nil, map[string]string{"COFFER_OTEL_ENDPOINT": "https://otlp.example.com/v1/traces", "COFFER_OTEL_SAMPLE_RATIO": "1"}, true},
		{[]string{"--otel-endpoint", "127.0.0.1:4318"}, nil, false},
		{[]string{"--otel-endpoint", "grpc://collector:4317"}, nil, false},
		{[]string{"--otel-sample-ratio", "1.5"}, nil, false},
		{nil, map[string]string{"COFFER_OTEL_SAMPLE_RATIO": "-0.1"}, false},
		{[]string{"--otel-sample-ratio", "NaN"}, nil, false},
	} {
		err := parseValidate(t, tc.args, tc.env)
		if (err == nil) != tc.ok || err != nil && !contains(err.Error(), "otel-") {
			t.Errorf("%v %v: Validate = %v, want ok %v", tc.args, tc.env, err, tc.ok)
		}
	}
}

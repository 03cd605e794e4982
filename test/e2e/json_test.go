package e2e

import (
	"encoding/json"
	"testing"
)

func mustJSON(t testing.TB, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decoding %q: %v", raw, err)
	}
}

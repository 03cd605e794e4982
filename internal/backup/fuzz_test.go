package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/coffer-storage/coffer/internal/blob/memblob"
)

// FuzzLoadManifest: a manifest read from a destination (which anyone with
// write access to it may have changed) never panics Load, and a manifest
// Load accepts is one this coffer writes: its format, the id asked for.
func FuzzLoadManifest(f *testing.F) {
	good, _ := json.Marshal(Manifest{Format: Format, ID: "20261128T050000Z-ab12"})
	f.Add(good)
	f.Add([]byte(`{"format":1,"id":"x","blobs":[{"key":"../../etc/passwd","size":-1}]}`))
	f.Add([]byte(`{`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ctx := context.Background()
		st := memblob.New()
		id := "20261128T050000Z-ab12"
		if _, err := st.Put(ctx, manifestKey(id), bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
		m, err := Load(ctx, st, id)
		if err == nil && (m.Format != Format || m.ID != id) {
			t.Fatalf("Load accepted format %d id %q", m.Format, m.ID)
		}
	})
}

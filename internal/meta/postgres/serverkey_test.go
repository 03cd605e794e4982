package postgres_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta/postgres"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// TestClaimKeyFingerprintAcrossStores: stores on one database (nodes)
// claiming different fingerprints at once agree on exactly one.
func TestClaimKeyFingerprintAcrossStores(t *testing.T) {
	u := freshSchema(t, testbackend.SharedPostgres(t).CreateDatabase(t))
	const n = 4
	stores := make([]*postgres.Store, n)
	for i := range stores {
		stores[i] = open(t, u, postgres.Options{})
	}
	got := make([]string, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			<-start
			got[i], errs[i] = s.ClaimKeyFingerprint(t.Context(), fmt.Sprintf("fp-%d", i))
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("store %d: ClaimKeyFingerprint: %v", i, errs[i])
		}
		if got[i] != got[0] {
			t.Errorf("store %d got %q, store 0 got %q: want one recorded fingerprint", i, got[i], got[0])
		}
	}
	var winners int
	for i := range n {
		if got[0] == fmt.Sprintf("fp-%d", i) {
			winners++
		}
	}
	if winners != 1 {
		t.Errorf("recorded %q, want exactly one of the claimed fingerprints", got[0])
	}
}

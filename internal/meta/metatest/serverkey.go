package metatest

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
)

var serverKeyTests = []test{
	{name: "FirstClaimRecords", fn: testClaimFirst},
	{name: "OtherFingerprintGetsTheRecordedOne", fn: testClaimOther},
	{name: "Invalid", fn: testClaimInvalid},
	{name: "ConcurrentClaimsAgreeOnOne", fn: testClaimConcurrent},
}

func testClaimFirst(t *testing.T, s store) {
	for i := range 2 {
		got, err := s.ClaimKeyFingerprint(t.Context(), "fp-a")
		ok(t, err, fmt.Sprintf("ClaimKeyFingerprint #%d", i+1))
		if want := "fp-a"; got != want {
			t.Errorf("ClaimKeyFingerprint #%d = %q, want %q", i+1, got, want)
		}
	}
}

func testClaimOther(t *testing.T, s store) {
	_, err := s.ClaimKeyFingerprint(t.Context(), "fp-a")
	ok(t, err, "ClaimKeyFingerprint fp-a")
	got, err := s.ClaimKeyFingerprint(t.Context(), "fp-b")
	ok(t, err, "ClaimKeyFingerprint fp-b")
	if want := "fp-a"; got != want {
		t.Errorf("ClaimKeyFingerprint(fp-b) after fp-a = %q, want %q (the first stays)", got, want)
	}
	// The refused claim changed nothing.
	got, err = s.ClaimKeyFingerprint(t.Context(), "fp-a")
	ok(t, err, "ClaimKeyFingerprint fp-a again")
	if want := "fp-a"; got != want {
		t.Errorf("ClaimKeyFingerprint(fp-a) again = %q, want %q", got, want)
	}
}

func testClaimInvalid(t *testing.T, s store) {
	for _, fp := range []string{"", strings.Repeat("f", 129)} {
		_, err := s.ClaimKeyFingerprint(t.Context(), fp)
		wantCode(t, err, errcode.InvalidArgument, fmt.Sprintf("ClaimKeyFingerprint of %d bytes", len(fp)))
	}
	// Nothing was recorded by the refused claims.
	got, err := s.ClaimKeyFingerprint(t.Context(), strings.Repeat("f", 128))
	ok(t, err, "ClaimKeyFingerprint of 128 bytes")
	if want := strings.Repeat("f", 128); got != want {
		t.Errorf("ClaimKeyFingerprint = %q, want %q", got, want)
	}
}

func testClaimConcurrent(t *testing.T, s store) {
	const n = 16
	got := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			got[i], errs[i] = s.ClaimKeyFingerprint(t.Context(), fmt.Sprintf("fp-%02d", i))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		ok(t, err, fmt.Sprintf("ClaimKeyFingerprint fp-%02d", i))
	}
	winner := got[0]
	if !strings.HasPrefix(winner, "fp-") {
		t.Fatalf("recorded fingerprint %q is none of the claimed ones", winner)
	}
	for i, g := range got {
		if g != winner {
			t.Errorf("claim %d returned %q, claim 0 returned %q: want one recorded fingerprint", i, g, winner)
		}
	}
	after, err := s.ClaimKeyFingerprint(t.Context(), "fp-late")
	ok(t, err, "ClaimKeyFingerprint fp-late")
	if after != winner {
		t.Errorf("ClaimKeyFingerprint after the race = %q, want the winner %q", after, winner)
	}
}

package faults

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestReplay re-checks a history a failing run saved, for debugging:
//
//	COFFER_FAULTS_HISTORY=/tmp/coffer-faults-…/history.json go test -run TestReplay -v ./test/faults/
//
// It prints the keys that are not linearizable, and for each the
// operations before the shortest prefix of its history that is not (the
// anomaly is among the last), and the stale reads.
func TestReplay(t *testing.T) {
	path := os.Getenv("COFFER_FAULTS_HISTORY")
	if path == "" {
		t.Skip("set COFFER_FAULTS_HISTORY to the history.json of a failing run to re-check it")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var h []record
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	for _, v := range checkStale(h) {
		t.Logf("stale read: %s", v)
	}
	for _, v := range checkLists(h) {
		t.Logf("listing: %s", v)
	}
	byKey := map[string][]record{}
	for _, r := range h {
		if !r.List {
			byKey[r.In.Key] = append(byKey[r.In.Key], r)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		kh := byKey[key]
		if porcupine.CheckOperationsTimeout(registerModel(), operations(kh), time.Minute) == porcupine.Ok {
			continue
		}
		slices.SortFunc(kh, func(a, b record) int { return int(a.Call - b.Call) })
		lo, hi := 1, len(kh)
		for lo < hi {
			mid := (lo + hi) / 2
			if porcupine.CheckOperationsTimeout(registerModel(), operations(kh[:mid]), time.Minute) == porcupine.Ok {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		t.Logf("%s is not linearizable; the first %d of its %d operations are not already; the last of them:", key, lo, len(kh))
		for _, r := range kh[max(0, lo-25):lo] {
			ret := "?"
			if r.Return >= 0 {
				ret = ms(r.Return)
			}
			t.Logf("  client %d node %d %s–%s %s: %s %q", r.Client, r.Node, ms(r.Call), ret, r.Fault,
				registerModel().DescribeOperation(r.In, r.Out), r.Out.Err)
		}
	}
}

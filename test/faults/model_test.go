package faults

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// ---- values ----

// A value is a unique string id ("c3-17": client 3's 17th write) expanded
// into a body that proves itself complete: a first line naming the id, a
// filler derived from the id (small, inline in the metadata store, or
// large, in the blob store) and a last line with the SHA-256 of all
// before it. A torn, truncated or mixed body fails checkBody.
func valueBody(id string) []byte {
	seed := sha256.Sum256([]byte(id))
	n := 512 + int(binary.BigEndian.Uint16(seed[:2]))%3584 // 0.5–4 KiB: inline
	if seed[2]%3 == 0 {
		n = 70<<10 + int(binary.BigEndian.Uint16(seed[3:5]))%(30<<10) // 70–100 KiB: a blob
	}
	var b strings.Builder
	b.WriteString("v:" + id + "\n")
	block := hex.EncodeToString(seed[:])
	for b.Len() < n {
		b.WriteString(block)
	}
	sum := sha256.Sum256([]byte(b.String()))
	b.WriteString("\n" + hex.EncodeToString(sum[:]))
	return []byte(b.String())
}

// etagOf is the S3 ETag (hex MD5) of a single-part object holding id.
func etagOf(id string) string {
	s := md5.Sum(valueBody(id))
	return hex.EncodeToString(s[:])
}

// checkBody returns the id a body holds, or an error if the body is not
// exactly a value some writer made.
func checkBody(b []byte) (string, error) {
	first, _, ok := strings.Cut(string(b), "\n")
	if !ok || !strings.HasPrefix(first, "v:") {
		return "", fmt.Errorf("not a value (%d bytes, starts %q)", len(b), head(b))
	}
	id := first[2:]
	if want := valueBody(id); string(want) != string(b) {
		return "", fmt.Errorf("value %s torn or corrupt: %d bytes, want %d", id, len(b), len(want))
	}
	return id, nil
}

func head(b []byte) string {
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}

// ---- the model of one S3 key ----

type opKind uint8

const (
	opPut      opKind = iota // PUT
	opGet                    // GET
	opDelete                 // DELETE
	opPutIfNew               // PUT If-None-Match: *
	opPutMatch               // PUT If-Match: etag
	opCopy                   // CopyObject into this key
)

var opNames = [...]string{"put", "get", "delete", "put-if-absent", "put-if-match", "copy"}

func (k opKind) String() string { return opNames[k] }

// input is an operation on one key. Value is the id a PUT writes; Match
// the ETag of If-Match; Source the key a copy reads.
type input struct {
	Kind   opKind `json:"kind"`
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Match  string `json:"match,omitempty"`
	Source string `json:"source,omitempty"`
}

// output is how the operation ended. Unknown: indeterminate (a timeout,
// a 5xx, a broken connection): it may or may not have taken effect. OK: a
// write succeeded (2xx) or a GET found the key. Status is the HTTP status
// (0 for a transport error). Value: the id a GET read or a copy wrote
// (from its ETag); "" when a copy's value is unknown.
type output struct {
	Unknown bool   `json:"unknown,omitempty"`
	OK      bool   `json:"ok"`
	Status  int    `json:"status"`
	Value   string `json:"value,omitempty"`
	Err     string `json:"err,omitempty"`
}

// state is the register of one key. Value "?" is a value written by a
// copy whose response did not say what it copied: the next read of the
// key reveals it.
type state struct {
	Present bool
	Value   string
}

const unknownValue = "?"

// etags maps a value's id to its ETag, memoised (valueBody is not free);
// porcupine checks the keys in parallel.
type etags struct {
	mu sync.Mutex
	m  map[string]string
}

func (e *etags) of(id string) string {
	e.mu.Lock()
	t, ok := e.m[id]
	e.mu.Unlock()
	if !ok {
		t = etagOf(id)
		e.mu.Lock()
		e.m[id] = t
		e.mu.Unlock()
	}
	return t
}

// registerModel is the porcupine model of one S3 key: PUT sets, DELETE
// clears, PUT If-None-Match:* succeeds only on an absent key (412
// otherwise), PUT If-Match:e only when the current ETag is e (412
// otherwise, also on an absent key), GET returns the value or 404, and a
// copy into the key writes the value the source held (learnt from the
// copy's ETag). Definite failures change nothing. Indeterminate
// operations end at the end of the history and take effect or not.
//
// Copies are checked as writes of their destination only: the read of the
// source is another key's history, which the per-key partition cannot
// join; that the copied value is one some PUT wrote is checked by the
// ETag lookup (and every later read's body check).
func registerModel() porcupine.Model {
	et := &etags{m: map[string]string{}}
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range h {
				k := op.Input.(input).Key
				if _, ok := byKey[k]; !ok {
					keys = append(keys, k)
				}
				byKey[k] = append(byKey[k], op)
			}
			sort.Strings(keys)
			out := make([][]porcupine.Operation, 0, len(keys))
			for _, k := range keys {
				out = append(out, byKey[k])
			}
			return out
		},
		Init: func() any { return state{} },
		Step: func(st, in, out any) (bool, any) {
			return step(et, st.(state), in.(input), out.(output))
		},
		Equal: func(a, b any) bool { return a.(state) == b.(state) },
		DescribeOperation: func(in, out any) string {
			i, o := in.(input), out.(output)
			var s string
			switch i.Kind {
			case opPut, opPutIfNew:
				s = fmt.Sprintf("%s(%s)", i.Kind, i.Value)
			case opPutMatch:
				s = fmt.Sprintf("%s(%s, if %.8s)", i.Kind, i.Value, i.Match)
			case opCopy:
				s = fmt.Sprintf("copy(from %s)", i.Source)
			default:
				s = i.Kind.String()
			}
			switch {
			case o.Unknown:
				return s + " → ? " + o.Err
			case i.Kind == opGet && o.OK:
				return s + " → " + o.Value
			case i.Kind == opCopy && o.OK:
				return s + " → wrote " + o.Value
			default:
				return fmt.Sprintf("%s → %d", s, o.Status)
			}
		},
		DescribeState: func(s any) string {
			st := s.(state)
			if !st.Present {
				return "absent"
			}
			return st.Value
		},
	}
}

func step(et *etags, st state, in input, out output) (bool, state) {
	matches := func() bool {
		return st.Present && (st.Value == unknownValue || et.of(st.Value) == in.Match)
	}
	if !out.Unknown && out.Status == 0 {
		return true, st // never reached a server (a refused connection)
	}
	if out.Unknown {
		switch in.Kind {
		case opPut:
			return true, state{true, in.Value}
		case opDelete:
			return true, state{}
		case opPutIfNew:
			if !st.Present {
				return true, state{true, in.Value}
			}
		case opPutMatch:
			if matches() {
				return true, state{true, in.Value}
			}
		case opCopy:
			v := out.Value
			if v == "" {
				v = unknownValue
			}
			return true, state{true, v}
		}
		return true, st
	}
	switch in.Kind {
	case opGet:
		if !out.OK {
			return out.Status == 404 && !st.Present, st
		}
		if !st.Present {
			return false, st
		}
		if st.Value == unknownValue {
			return true, state{true, out.Value}
		}
		return st.Value == out.Value, st
	case opPut:
		if out.OK {
			return true, state{true, in.Value}
		}
		return true, st
	case opDelete:
		if out.OK {
			return true, state{}
		}
		return true, st
	case opPutIfNew:
		if out.OK {
			return !st.Present, state{true, in.Value}
		}
		if out.Status == 412 {
			return st.Present, st
		}
		return true, st
	case opPutMatch:
		if out.OK {
			return matches(), state{true, in.Value}
		}
		if out.Status == 412 {
			return !st.Present || st.Value == unknownValue || et.of(st.Value) != in.Match, st
		}
		if out.Status == 404 { // S3's answer to If-Match on a missing key
			return !st.Present, st
		}
		return true, st
	case opCopy:
		if out.OK {
			v := out.Value
			if v == "" {
				v = unknownValue
			}
			return true, state{true, v}
		}
		return true, st
	}
	return false, st
}

// ---- the history ----

// record is one operation of the history, as the JSON file shows it.
// Call and Return are nanoseconds since the start of the run; Return is
// -1 for an indeterminate operation (porcupine sees it as ending after
// every other). Node is the node the client talked to; Fault the fault
// window open at the call ("" in a quiet period).
type record struct {
	Client int    `json:"client"`
	Node   int    `json:"node"`
	In     input  `json:"in"`
	Out    output `json:"out"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
	Fault  string `json:"fault,omitempty"`
	// Latency is how long the client waited, whatever the outcome.
	Latency int64 `json:"latency"`
	// List: the keys a ListObjectsV2 returned (In.Key is the prefix).
	List   bool     `json:"list,omitempty"`
	Listed []string `json:"listed,omitempty"`
}

// operations turns the records into porcupine's operations: lists and
// indeterminate reads (which constrain nothing) are left out, and
// indeterminate writes return after every other operation.
func operations(h []record) []porcupine.Operation {
	var end int64
	for _, r := range h {
		end = max(end, r.Return, r.Call)
	}
	var ops []porcupine.Operation
	for _, r := range h {
		if r.List || r.Out.Unknown && r.In.Kind == opGet {
			continue
		}
		ret := r.Return
		if r.Out.Unknown || ret < 0 {
			ret = end + 1
		}
		ops = append(ops, porcupine.Operation{ClientId: r.Client, Input: r.In, Output: r.Out, Call: r.Call, Return: ret})
	}
	return ops
}

// checkLists checks every listing: each key with a write acknowledged
// before the list began, and no DELETE (of any outcome) that could have
// taken effect between that write and the end of the list, is listed.
// Keys never written are never listed. It returns the violations.
func checkLists(h []record) []string {
	type span struct{ call, ret int64 }
	writes := map[string][]span{}  // acknowledged writes
	deletes := map[string][]span{} // every DELETE; ret MaxInt64 when indeterminate
	written := map[string]bool{}   // keys any write (of any outcome) was sent to
	for _, r := range h {
		if r.List {
			continue
		}
		switch r.In.Kind {
		case opPut, opPutIfNew, opPutMatch, opCopy:
			written[r.In.Key] = true
			if !r.Out.Unknown && r.Out.OK {
				writes[r.In.Key] = append(writes[r.In.Key], span{r.Call, r.Return})
			}
		case opDelete:
			ret := r.Return
			if r.Out.Unknown || ret < 0 {
				ret = math.MaxInt64
			}
			deletes[r.In.Key] = append(deletes[r.In.Key], span{r.Call, ret})
		}
	}
	var bad []string
	for _, l := range h {
		if !l.List || l.Out.Unknown || !l.Out.OK {
			continue
		}
		listed := map[string]bool{}
		for _, k := range l.Listed {
			listed[k] = true
			if !written[k] {
				bad = append(bad, fmt.Sprintf("list %q by client %d at %v listed %s, which no one wrote", l.In.Key, l.Client, ms(l.Call), k))
			}
		}
		for key, ws := range writes {
			if !strings.HasPrefix(key, l.In.Key) || listed[key] {
				continue
			}
			for _, w := range ws {
				if w.ret >= l.Call {
					continue
				}
				deleted := false
				for _, d := range deletes[key] {
					// d may take effect after w and before the list ends.
					if d.call < l.Return && d.ret > w.call {
						deleted = true
						break
					}
				}
				if !deleted {
					bad = append(bad, fmt.Sprintf("list %q by client %d on node %d at %v–%v lacks %s, written (acknowledged) at %v–%v and not deleted since",
						l.In.Key, l.Client, l.Node, ms(l.Call), ms(l.Return), key, ms(w.call), ms(w.ret)))
					break
				}
			}
		}
	}
	return bad
}

func ms(ns int64) string { return fmt.Sprintf("%.6fs", float64(ns)/1e9) }

// checkStale checks Coffer's documented contract, which is weaker than
// linearizability (docs/architecture.md, "Caching metadata"): a write
// acknowledged by any node is never served stale by any node afterwards.
// A GET returning the value of write w is stale when another write or
// DELETE w2 of the key began after w ended and was acknowledged before
// the GET began; a GET returning 404 is stale when a write was
// acknowledged before it began and no DELETE could have taken effect
// between them. It returns the violations.
func checkStale(h []record) []string {
	type span struct {
		call, ret int64
		value     string // "" for a DELETE
	}
	acked := map[string][]span{}     // acknowledged writes and deletes
	lastEnd := map[[2]string]int64{} // (key, value) → the latest end of a write of it (copies repeat values)
	deletes := map[string][]span{}   // every DELETE; ret MaxInt64 when indeterminate
	for _, r := range h {
		if r.List || r.In.Kind == opGet {
			continue
		}
		ret := r.Return
		if r.Out.Unknown || ret < 0 {
			ret = math.MaxInt64
		}
		v := r.In.Value
		if r.In.Kind == opCopy {
			v = r.Out.Value
			if r.Out.Unknown {
				v = ""
			}
		}
		if r.In.Kind == opDelete {
			deletes[r.In.Key] = append(deletes[r.In.Key], span{r.Call, ret, ""})
		} else if v != "" {
			k := [2]string{r.In.Key, v}
			lastEnd[k] = max(lastEnd[k], ret)
		}
		if !r.Out.Unknown && r.Out.OK {
			acked[r.In.Key] = append(acked[r.In.Key], span{r.Call, ret, v})
		}
	}
	var bad []string
	for _, r := range h {
		if r.List || r.In.Kind != opGet || r.Out.Unknown || r.Out.Status == 0 {
			continue
		}
		for _, w2 := range acked[r.In.Key] {
			if w2.ret >= r.Call {
				continue
			}
			if r.Out.OK {
				end, ok := lastEnd[[2]string{r.In.Key, r.Out.Value}]
				if ok && w2.value != r.Out.Value && end < w2.call {
					bad = append(bad, fmt.Sprintf("GET %s by client %d on node %d at %v–%v returned %s (last written by %v), older than %s acknowledged at %v–%v (%v before the GET)",
						r.In.Key, r.Client, r.Node, ms(r.Call), ms(r.Return), r.Out.Value, ms(end), orDeleted(w2.value), ms(w2.call), ms(w2.ret), time.Duration(r.Call-w2.ret).Round(time.Millisecond)))
					break
				}
				continue
			}
			if w2.value == "" {
				continue
			}
			deleted := false
			for _, d := range deletes[r.In.Key] {
				if d.call < r.Return && d.ret > w2.call {
					deleted = true
					break
				}
			}
			if !deleted {
				bad = append(bad, fmt.Sprintf("GET %s by client %d on node %d at %v–%v returned 404, but %s was acknowledged at %v–%v (%v before the GET) and not deleted since",
					r.In.Key, r.Client, r.Node, ms(r.Call), ms(r.Return), w2.value, ms(w2.call), ms(w2.ret), time.Duration(r.Call-w2.ret).Round(time.Millisecond)))
				break
			}
		}
	}
	return bad
}

func orDeleted(v string) string {
	if v == "" {
		return "a DELETE"
	}
	return v
}

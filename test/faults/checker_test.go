package faults

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestChecker shows the checker catches what it must: hand-made histories
// that are not linearizable are rejected, linearizable ones pass.
func TestChecker(t *testing.T) {
	put := func(c int, key, v string, call, ret int64) record {
		return record{Client: c, In: input{Kind: opPut, Key: key, Value: v}, Out: output{OK: true, Status: 200}, Call: call, Return: ret}
	}
	get := func(c int, key, v string, call, ret int64) record {
		if v == "" {
			return record{Client: c, In: input{Kind: opGet, Key: key}, Out: output{Status: 404}, Call: call, Return: ret}
		}
		return record{Client: c, In: input{Kind: opGet, Key: key}, Out: output{OK: true, Status: 200, Value: v}, Call: call, Return: ret}
	}
	ifNew := func(c int, key, v string, status int, call, ret int64) record {
		return record{Client: c, In: input{Kind: opPutIfNew, Key: key, Value: v}, Out: output{OK: status == 200, Status: status}, Call: call, Return: ret}
	}
	ifMatch := func(c int, key, v, match string, status int, call, ret int64) record {
		return record{Client: c, In: input{Kind: opPutMatch, Key: key, Value: v, Match: etagOf(match)}, Out: output{OK: status == 200, Status: status}, Call: call, Return: ret}
	}
	del := func(c int, key string, call, ret int64) record {
		return record{Client: c, In: input{Kind: opDelete, Key: key}, Out: output{OK: true, Status: 204}, Call: call, Return: ret}
	}
	lost := func(r record) record { r.Out = output{Unknown: true, Err: "timeout"}; r.Return = -1; return r }
	cp := func(c int, key, src, v string, call, ret int64) record {
		return record{Client: c, In: input{Kind: opCopy, Key: key, Source: src}, Out: output{OK: true, Status: 200, Value: v}, Call: call, Return: ret}
	}
	cases := []struct {
		name string
		ok   bool
		h    []record
	}{
		{"sequential put get delete", true, []record{
			put(0, "a", "c0-1", 0, 10), get(1, "a", "c0-1", 20, 30), del(0, "a", 40, 50), get(1, "a", "", 60, 70)}},
		{"concurrent read sees either value", true, []record{
			put(0, "a", "c0-1", 0, 10), put(0, "a", "c0-2", 20, 50), get(1, "a", "c0-1", 25, 30), get(2, "a", "c0-2", 30, 40)}},
		{"stale read", false, []record{
			put(0, "a", "c0-1", 0, 10), put(0, "a", "c0-2", 20, 30), get(1, "a", "c0-1", 40, 50)}},
		{"read goes back in time", false, []record{
			put(0, "a", "c0-1", 0, 10), put(0, "a", "c0-2", 20, 60), get(1, "a", "c0-2", 25, 30), get(2, "a", "c0-1", 35, 40)}},
		{"lost write", false, []record{
			put(0, "a", "c0-1", 0, 10), get(1, "a", "", 20, 30)}},
		{"deleted key read back", false, []record{
			put(0, "a", "c0-1", 0, 10), del(0, "a", 20, 30), get(1, "a", "c0-1", 40, 50)}},
		{"both If-None-Match writes succeed", false, []record{
			ifNew(0, "a", "c0-1", 200, 0, 10), ifNew(1, "a", "c1-1", 200, 5, 15)}},
		{"one If-None-Match write wins", true, []record{
			ifNew(0, "a", "c0-1", 200, 0, 10), ifNew(1, "a", "c1-1", 412, 5, 15), get(2, "a", "c0-1", 20, 30)}},
		{"both If-Match writes on one ETag succeed", false, []record{
			put(0, "a", "c0-1", 0, 10), ifMatch(1, "a", "c1-1", "c0-1", 200, 20, 30), ifMatch(2, "a", "c2-1", "c0-1", 200, 25, 35)}},
		{"If-Match fails on a matching ETag", false, []record{
			put(0, "a", "c0-1", 0, 10), ifMatch(1, "a", "c1-1", "c0-1", 412, 20, 30)}},
		{"If-Match chain", true, []record{
			put(0, "a", "c0-1", 0, 10), ifMatch(1, "a", "c1-1", "c0-1", 200, 20, 30), ifMatch(2, "a", "c2-1", "c0-1", 412, 40, 50), get(0, "a", "c1-1", 60, 70)}},
		{"indeterminate write may show up later", true, []record{
			lost(put(0, "a", "c0-1", 0, 10)), get(1, "a", "", 20, 30), get(1, "a", "c0-1", 40, 50)}},
		{"indeterminate write cannot vanish once read", false, []record{
			lost(put(0, "a", "c0-1", 0, 10)), get(1, "a", "c0-1", 20, 30), get(1, "a", "", 40, 50)}},
		{"copy writes the source's value", true, []record{
			cp(0, "a", "b", "c9-1", 0, 10), get(1, "a", "c9-1", 20, 30)}},
		{"copy overwritten by a stale value", false, []record{
			put(0, "a", "c0-1", 0, 10), cp(0, "a", "b", "c9-1", 20, 30), get(1, "a", "c0-1", 40, 50)}},
		{"keys are independent", true, []record{
			put(0, "a", "c0-1", 0, 10), put(0, "b", "c0-2", 0, 10), get(1, "a", "c0-1", 20, 30), get(1, "b", "c0-2", 20, 30)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, _ := porcupine.CheckOperationsVerbose(registerModel(), operations(c.h), 10*time.Second)
			if got, want := res == porcupine.Ok, c.ok; got != want {
				t.Errorf("linearizable = %v (%s), want %v", got, res, want)
			}
		})
	}
}

// TestListCheck: a listing must show every key acknowledged before it
// began and not (possibly) deleted since, and nothing no one wrote.
func TestListCheck(t *testing.T) {
	put := func(key string, call, ret int64) record {
		return record{In: input{Kind: opPut, Key: key, Value: "x"}, Out: output{OK: true, Status: 200}, Call: call, Return: ret}
	}
	list := func(call, ret int64, keys ...string) record {
		return record{List: true, In: input{Key: "p/"}, Out: output{OK: true, Status: 200}, Call: call, Return: ret, Listed: keys}
	}
	del := func(key string, call, ret int64, unknown bool) record {
		r := record{In: input{Kind: opDelete, Key: key}, Out: output{OK: true, Status: 204}, Call: call, Return: ret}
		if unknown {
			r.Out, r.Return = output{Unknown: true}, -1
		}
		return r
	}
	cases := []struct {
		name string
		bad  int
		h    []record
	}{
		{"listed", 0, []record{put("p/a", 0, 10), list(20, 30, "p/a")}},
		{"missing", 1, []record{put("p/a", 0, 10), list(20, 30)}},
		{"write concurrent with the list", 0, []record{put("p/a", 0, 25), list(20, 30)}},
		{"deleted before", 0, []record{put("p/a", 0, 10), del("p/a", 12, 15, false), list(20, 30)}},
		{"delete in flight", 0, []record{put("p/a", 0, 10), del("p/a", 25, 40, false), list(20, 30)}},
		{"indeterminate delete", 0, []record{put("p/a", 0, 10), del("p/a", 12, 0, true), list(20, 30)}},
		{"deleted, then written again", 1, []record{put("p/a", 0, 10), del("p/a", 12, 15, false), put("p/a", 16, 18), list(20, 30)}},
		{"other prefix", 0, []record{put("q/a", 0, 10), list(20, 30)}},
		{"listed but never written", 1, []record{list(20, 30, "p/z")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := checkLists(c.h); len(got) != c.bad {
				t.Errorf("violations %q, want %d", got, c.bad)
			}
		})
	}
}

// TestValueBody: a body proves itself complete.
func TestValueBody(t *testing.T) {
	for _, id := range []string{"c0-1", "c1-2", "c2-3", "c3-4", "c4-5", "c5-6"} {
		b := valueBody(id)
		if got, err := checkBody(b); err != nil || got != id {
			t.Fatalf("checkBody(valueBody(%s)) = %q, %v", id, got, err)
		}
		flipped := append([]byte{}, b...)
		flipped[len(b)/2] ^= 1
		for _, bad := range [][]byte{b[:len(b)-1], append(append([]byte{}, b...), 'x'), b[:len(b)/2], nil, flipped} {
			if _, err := checkBody(bad); err == nil {
				t.Errorf("checkBody accepted a damaged %s (%d bytes)", id, len(bad))
			}
		}
	}
}

// TestStaleCheck: the documented contract's check flags a read older
// than an acknowledged write, and only that.
func TestStaleCheck(t *testing.T) {
	put := func(key, v string, call, ret int64) record {
		return record{In: input{Kind: opPut, Key: key, Value: v}, Out: output{OK: true, Status: 200}, Call: call, Return: ret}
	}
	get := func(key, v string, call, ret int64) record {
		if v == "" {
			return record{In: input{Kind: opGet, Key: key}, Out: output{Status: 404}, Call: call, Return: ret}
		}
		return record{In: input{Kind: opGet, Key: key}, Out: output{OK: true, Status: 200, Value: v}, Call: call, Return: ret}
	}
	del := func(key string, call, ret int64) record {
		return record{In: input{Kind: opDelete, Key: key}, Out: output{OK: true, Status: 204}, Call: call, Return: ret}
	}
	cases := []struct {
		name string
		bad  int
		h    []record
	}{
		{"fresh", 0, []record{put("a", "1", 0, 10), put("a", "2", 20, 30), get("a", "2", 40, 50)}},
		{"stale value", 1, []record{put("a", "1", 0, 10), put("a", "2", 20, 30), get("a", "1", 40, 50)}},
		{"old value during the write (not the contract's business)", 0, []record{put("a", "1", 0, 10), put("a", "2", 20, 45), get("a", "1", 40, 50)}},
		{"overlapping writes", 0, []record{put("a", "1", 0, 25), put("a", "2", 20, 30), get("a", "1", 40, 50)}},
		{"lost write", 1, []record{put("a", "1", 0, 10), get("a", "", 40, 50)}},
		{"deleted", 0, []record{put("a", "1", 0, 10), del("a", 15, 20), get("a", "", 40, 50)}},
		{"read after delete", 1, []record{put("a", "1", 0, 10), del("a", 15, 20), get("a", "1", 40, 50)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := checkStale(c.h); len(got) != c.bad {
				t.Errorf("violations %q, want %d", got, c.bad)
			}
		})
	}
}

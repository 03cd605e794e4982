package meta

import (
	"testing"
)

func TestCursorRoundTrip(t *testing.T) {
	for _, r := range []EnvelopeRef{
		{Table: EnvelopeObjects, Bucket: "b", Key: "k\x00\xff/é"},
		{Table: EnvelopeObjectParts, PartsID: 1 << 40, Index: 3},
		{Table: EnvelopeUploadParts, UploadID: "u-1", Number: 10000},
		{Table: EnvelopeObjects},
	} {
		got, err := ParseCursor(r.Table, r.Encode())
		if err != nil || got == nil || *got != r {
			t.Errorf("ParseCursor(Encode(%+v)) = %+v, %v", r, got, err)
		}
	}
	for _, bad := range []string{"{", "[]", `{"t":1}x`, `{"t":0,"z":1}`, `{"t":1}`, `{"t":0,"k":"not base64!"}`, `{"t":0} {"t":0}`, `{"k":"YQ==","t":0}`} {
		if _, err := ParseCursor(EnvelopeObjects, bad); err == nil {
			t.Errorf("ParseCursor(%q) accepted", bad)
		}
	}
	if got, err := ParseCursor(EnvelopeObjects, ""); got != nil || err != nil {
		t.Errorf("ParseCursor(\"\") = %v, %v; want nil, nil", got, err)
	}
}

// FuzzParseCursor: a cursor is accepted only in the one form Encode
// writes, and reads back to the same ref.
func FuzzParseCursor(f *testing.F) {
	f.Add(0, `{"t":0,"b":"YQ==","k":"Yg=="}`)
	f.Add(1, `{"t":1,"p":3,"i":2}`)
	f.Add(2, `{"t":2,"u":"dQ==","n":1}`)
	f.Fuzz(func(t *testing.T, table int, s string) {
		r, err := ParseCursor(EnvelopeTable(table), s)
		if err != nil || r == nil {
			return
		}
		if r.Encode() != s || r.Table != EnvelopeTable(table) {
			t.Fatalf("ParseCursor(%q) = %+v, which encodes as %q", s, r, r.Encode())
		}
	})
}

package metasql

import (
	"encoding/json"
	"maps"
	"testing"
)

// FuzzDecodeMetadata: the fast path of DecodeMetadata (decodeFlat) agrees
// with encoding/json wherever it answers, and what encodeMetadata writes
// decodes back to the same map.
func FuzzDecodeMetadata(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"1"}`, `{"a":"1","b":""}`, `{"a":"\u003c"}`, `{"a": "1"}`, `{"a":1}`,
		`{"a":"1",}`, `{"a":"1"`, `{"é":"ü"}`, "{\"a\":\"\xff\"}", `{"a":"1","a":"2"}`, `{,}`, `{"":""}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, ok := decodeFlat(s); ok {
			var want map[string]string
			if err := json.Unmarshal([]byte(s), &want); err != nil {
				t.Fatalf("decodeFlat(%q) = %v, encoding/json fails: %v", s, m, err)
			}
			if !maps.Equal(m, want) || m == nil {
				t.Fatalf("decodeFlat(%q) = %v, encoding/json %v", s, m, want)
			}
		}
		var m map[string]string
		if json.Unmarshal([]byte(s), &m) != nil || m == nil {
			return
		}
		enc, _, err := encodeMetadata(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeMetadata(&enc)
		if err != nil || (len(m) > 0 && !maps.Equal(back, m)) {
			t.Fatalf("%v encoded as %v decodes to %v, %v", m, enc, back, err)
		}
	})
}

// The common case takes the fast path; escapes and spaces do not.
func TestDecodeFlat(t *testing.T) {
	for s, ok := range map[string]bool{`{"owner":"bench","n":"7"}`: true, `{}`: true, `{"a":"\n"}`: false, `{"a": "1"}`: false, `{"a":1}`: false} {
		if _, got := decodeFlat(s); got != ok {
			t.Errorf("decodeFlat(%q) ok %v, want %v", s, got, ok)
		}
	}
}

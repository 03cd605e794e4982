package crypt

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	kms := newEnvelope(t)
	named := NewEnvelope(ModeKMSKey)
	named.KEKID, named.WrappedKey = "awskms:///arn:aws:kms:us-east-1:123456789012:key/1234abcd", bytes.Repeat([]byte{7}, 184)
	chacha := newEnvelope(t)
	chacha.Cipher = ChaCha20Poly1305
	cust, _, err := NewCustomerEnvelope(bytes.Repeat([]byte{1}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []Envelope{kms, named, chacha, cust} {
		t.Run(e.Mode.String()+"/"+e.Cipher.String(), func(t *testing.T) {
			b, err := e.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseEnvelope(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, e) {
				t.Fatalf("got %+v, want %+v", got, e)
			}
			if e.Mode != ModeCustomer && len(b) > 36+8+len(e.KEKID)+len(e.KEKVersion)+len(e.WrappedKey) {
				t.Fatalf("%d bytes: not compact", len(b))
			}
		})
	}
}

func TestEnvelopeRejects(t *testing.T) {
	good := newEnvelope(t)
	b, err := good.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(b)) }
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"short", b[:20]},
		{"truncated field", b[:len(b)-1]},
		{"trailing byte", append(bytes.Clone(b), 0)},
		{"version 2", mut(func(b []byte) []byte { b[0] = 2; return b })},
		{"version 0", mut(func(b []byte) []byte { b[0] = 0; return b })},
		{"unknown mode", mut(func(b []byte) []byte { b[1] = 9; return b })},
		{"customer mode without key check", mut(func(b []byte) []byte { b[1] = byte(ModeCustomer); return b })},
		{"unknown cipher", mut(func(b []byte) []byte { b[2] = 0; return b })},
		{"other segment size", mut(func(b []byte) []byte { b[3] = 20; return b })},
		{"length past the end", mut(func(b []byte) []byte { b[36] = 0xff; return b })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseEnvelope(tc.b); !IsIntegrity(err) {
				t.Fatalf("err = %v, want an integrity error", err)
			}
		})
	}
	for _, tc := range []struct {
		name string
		e    func(e *Envelope)
	}{
		{"no KEK id", func(e *Envelope) { e.KEKID = "" }},
		{"no wrapped key", func(e *Envelope) { e.WrappedKey = nil }},
		{"key check on a KMS envelope", func(e *Envelope) { e.KeyCheck = make([]byte, 32) }},
		{"KEK id too long", func(e *Envelope) { e.KEKID = strings.Repeat("k", MaxKEKIDLen+1) }},
		{"KEK id not UTF-8", func(e *Envelope) { e.KEKID = "\xff" }},
		{"wrapped key too long", func(e *Envelope) { e.WrappedKey = make([]byte, MaxWrappedKeyLen+1) }},
	} {
		t.Run("marshal "+tc.name, func(t *testing.T) {
			e := newEnvelope(t)
			tc.e(&e)
			if _, err := e.Marshal(); err == nil {
				t.Fatal("Marshal accepted an invalid envelope")
			}
		})
	}
}

func TestCustomerKey(t *testing.T) {
	key := bytes.Repeat([]byte{0x42}, KeySize)
	env, dk, err := NewCustomerEnvelope(key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, key) || bytes.Contains(b, dk) {
		t.Fatal("the envelope holds the customer key or the data key in the clear")
	}
	stored, err := ParseEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := stored.UnwrapCustomerKey(key)
	if err != nil || !bytes.Equal(got, dk) {
		t.Fatalf("unwrap with the right key: %v", err)
	}
	wrong := bytes.Repeat([]byte{0x43}, KeySize)
	for _, k := range [][]byte{wrong, key[:16], nil} {
		if stored.CustomerKeyMatches(k) {
			t.Fatalf("key %x matches", k)
		}
		_, err := stored.UnwrapCustomerKey(k)
		if e := errcode.As(err); e == nil || e.Code != errcode.PermissionDenied || e.Detail["reason"] != "customer_key_mismatch" {
			t.Fatalf("unwrap with key %x: %v, want PermissionDenied customer_key_mismatch", k, err)
		}
	}
	// Two objects with the same key have different checks (salted).
	env2, _, _ := NewCustomerEnvelope(key)
	if bytes.Equal(env.KeyCheck, env2.KeyCheck) {
		t.Fatal("key checks are not salted")
	}
	// A matching key with a tampered wrapped key is an integrity error.
	tampered := stored
	tampered.WrappedKey = bytes.Clone(stored.WrappedKey)
	tampered.WrappedKey[20] ^= 1
	if _, err := tampered.UnwrapCustomerKey(key); !IsIntegrity(err) {
		t.Fatalf("tampered wrapped key: %v", err)
	}
	// The data key encrypts and decrypts the object.
	s, err := NewStream(got, &stored, "o/1")
	if err != nil {
		t.Fatal(err)
	}
	ct, _ := io.ReadAll(s.Encrypt(strings.NewReader("customer secret")))
	pt, err := readRange(s, ct, 15, 0, -1)
	if err != nil || string(pt) != "customer secret" {
		t.Fatalf("round trip: %q %v", pt, err)
	}
}

// FuzzParseEnvelope: garbage never panics; what parses re-marshals to the
// same bytes (one stored form per envelope).
func FuzzParseEnvelope(f *testing.F) {
	e := NewEnvelope(ModeServer)
	e.KEKID, e.KEKVersion, e.WrappedKey = "local:default", "3", []byte("wrapped")
	b, _ := e.Marshal()
	f.Add(b)
	c, _, _ := NewCustomerEnvelope(make([]byte, KeySize))
	b, _ = c.Marshal()
	f.Add(b)
	f.Add([]byte{1, 1, 1, 16})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseEnvelope(b)
		if err != nil {
			if !IsIntegrity(err) {
				t.Fatalf("error %v is not an integrity error", err)
			}
			return
		}
		out, err := e.Marshal()
		if err != nil {
			t.Fatalf("parsed envelope does not marshal: %v", err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("re-marshalled %x, parsed %x", out, b)
		}
	})
}

// FuzzDecrypt: a stored object whose ciphertext is changed at one place (or
// replaced by garbage) never panics and never yields bytes that are not
// the plaintext: a read returns the exact range, or a correct prefix and an
// error.
func FuzzDecrypt(f *testing.F) {
	const size = 2*SegmentSize + 300
	o := encryptObject(f, size, "o/fuzz")
	f.Add(uint32(0), byte(0), int64(0), int64(-1), []byte(nil))
	f.Add(uint32(SegmentSize+40), byte(1), int64(SegmentSize), int64(100), []byte(nil))
	f.Add(uint32(5), byte(0x80), int64(size-1), int64(1), []byte(nil))
	f.Add(uint32(0), byte(0), int64(0), int64(-1), []byte("garbage that replaces the whole ciphertext"))
	f.Fuzz(func(t *testing.T, pos uint32, x byte, off, n int64, garbage []byte) {
		ct := bytes.Clone(o.ct)
		if garbage != nil {
			ct = garbage
		} else if len(ct) > 0 {
			ct[int(pos)%len(ct)] ^= x
		}
		if off < 0 || off > size {
			off = int64(uint64(off) % (size + 1))
		}
		got, err := readRange(o.stream, ct, size, off, n)
		end := int64(size)
		if n >= 0 && off+n < end && off+n >= off {
			end = off + n
		}
		want := o.plain[off:end]
		if err != nil {
			if len(got) > len(want) || !bytes.Equal(got, want[:len(got)]) {
				t.Fatalf("returned %d wrong bytes with error %v", len(got), err)
			}
			if !IsIntegrity(err) {
				t.Fatalf("error %v is not an integrity error", err)
			}
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("no error but %d bytes that are not the %d plaintext bytes", len(got), len(want))
		}
		if garbage != nil && len(want) > 0 {
			t.Fatal("garbage decrypted")
		}
	})
}

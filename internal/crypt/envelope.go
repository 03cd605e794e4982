package crypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/minio/sio"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Mode says who holds the key that protects an object's data key.
type Mode uint8

// The modes. The numbers are stored: never reuse one.
const (
	// ModeServer: the data key is wrapped by the server's default KEK
	// (encryption turned on for the server or the bucket; S3 SSE-S3).
	ModeServer Mode = 1
	// ModeKMSKey: the data key is wrapped by a KEK the client named
	// (S3 SSE-KMS); KEKID says which.
	ModeKMSKey Mode = 2
	// ModeCustomer: the data key is wrapped by a key the client sends
	// with every request (S3 SSE-C); only KeyCheck is stored to
	// recognise it.
	ModeCustomer Mode = 3
)

func (m Mode) String() string {
	switch m {
	case ModeServer:
		return "server"
	case ModeKMSKey:
		return "kms-key"
	case ModeCustomer:
		return "customer"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// Cipher is the AEAD sealing the segments.
type Cipher uint8

// The ciphers. The numbers are stored: never reuse one.
const (
	AES256GCM        Cipher = 1 // the default: AES-NI makes it the fastest here
	ChaCha20Poly1305 Cipher = 2 // for machines without AES instructions
)

func (c Cipher) String() string {
	switch c {
	case AES256GCM:
		return "AES-256-GCM"
	case ChaCha20Poly1305:
		return "ChaCha20-Poly1305"
	}
	return fmt.Sprintf("cipher(%d)", uint8(c))
}

func (c Cipher) sio() byte {
	if c == ChaCha20Poly1305 {
		return sio.CHACHA20_POLY1305
	}
	return sio.AES_256_GCM
}

// EnvelopeVersion is the envelope format Marshal writes.
const EnvelopeVersion = 1

// Limits of the envelope's variable fields.
const (
	MaxKEKIDLen      = 2048 // an AWS key ARN is ~80 bytes, a GCP key version name ~200
	MaxKEKVersionLen = 256
	MaxWrappedKeyLen = 8192 // an AWS KMS ciphertext blob is at most 6144 bytes
)

// customerWrappedLen is the size of a data key wrapped with a customer key:
// a 12-byte nonce, the 32-byte key and a 16-byte tag.
const customerWrappedLen = 12 + KeySize + 16

// keyCheckLen is the size of a customer key check (HMAC-SHA256).
const keyCheckLen = sha256.Size

// Envelope is the encryption metadata of one object, part or inline
// object, stored next to it. It holds no secret in the clear.
type Envelope struct {
	Version     uint8 // EnvelopeVersion
	Mode        Mode
	Cipher      Cipher
	SegmentSize int      // plaintext bytes per segment: SegmentSize
	Salt        [32]byte // random per object: HKDF salt of the object key
	// KEKID and KEKVersion name the key-encryption key that wrapped the
	// data key (empty for ModeCustomer). KEKVersion may be empty when the
	// key service keeps versions inside its ciphertext (AWS KMS).
	KEKID      string
	KEKVersion string
	// WrappedKey is the data key wrapped by the KEK (or the customer key).
	WrappedKey []byte
	// KeyCheck, for ModeCustomer only, is HMAC-SHA256 keyed with the
	// customer key over a label and Salt: it recognises the key without
	// revealing it (see CustomerKeyMatches).
	KeyCheck []byte
}

// NewEnvelope returns the envelope of a new object in mode: current
// version, AES-256-GCM, a fresh random salt. The caller sets KEKID,
// KEKVersion and WrappedKey (for ModeCustomer use NewCustomerEnvelope).
func NewEnvelope(mode Mode) Envelope {
	e := Envelope{Version: EnvelopeVersion, Mode: mode, Cipher: AES256GCM, SegmentSize: SegmentSize}
	rand.Read(e.Salt[:])
	return e
}

// validate checks what Marshal writes and ParseEnvelope accepts.
func (e *Envelope) validate() error {
	bad := func(format string, args ...any) error {
		return integrityErr(fmt.Errorf("envelope: "+format, args...))
	}
	switch {
	case e.Version != EnvelopeVersion:
		return bad("unknown version %d", e.Version)
	case e.Cipher != AES256GCM && e.Cipher != ChaCha20Poly1305:
		return bad("unknown cipher %d", e.Cipher)
	case e.SegmentSize != SegmentSize:
		return bad("unsupported segment size %d", e.SegmentSize)
	case len(e.KEKID) > MaxKEKIDLen || len(e.KEKVersion) > MaxKEKVersionLen || len(e.WrappedKey) > MaxWrappedKeyLen:
		return bad("field too long")
	case !utf8.ValidString(e.KEKID) || !utf8.ValidString(e.KEKVersion):
		return bad("KEK id or version is not UTF-8")
	}
	switch e.Mode {
	case ModeServer, ModeKMSKey:
		if e.KEKID == "" || len(e.WrappedKey) == 0 || len(e.KeyCheck) != 0 {
			return bad("a %s envelope needs a KEK id and a wrapped key, and no key check", e.Mode)
		}
	case ModeCustomer:
		if e.KEKID != "" || e.KEKVersion != "" || len(e.WrappedKey) != customerWrappedLen || len(e.KeyCheck) != keyCheckLen {
			return bad("malformed customer-key envelope")
		}
	default:
		return bad("unknown mode %d", e.Mode)
	}
	return nil
}

// segmentShift is log2(SegmentSize), the form the segment size is stored in.
const segmentShift = 16

// Marshal returns the envelope's stored form:
//
//	version(1) mode(1) cipher(1) log2(segment size)(1) salt(32)
//	then KEK id, KEK version, wrapped key, key check, each as a
//	big-endian uint16 length and that many bytes.
//
// An invalid envelope is an error.
func (e *Envelope) Marshal() ([]byte, error) {
	if err := e.validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 36+8+len(e.KEKID)+len(e.KEKVersion)+len(e.WrappedKey)+len(e.KeyCheck))
	b = append(b, e.Version, byte(e.Mode), byte(e.Cipher), segmentShift)
	b = append(b, e.Salt[:]...)
	for _, f := range [][]byte{[]byte(e.KEKID), []byte(e.KEKVersion), e.WrappedKey, e.KeyCheck} {
		b = binary.BigEndian.AppendUint16(b, uint16(len(f)))
		b = append(b, f...)
	}
	return b, nil
}

// ParseEnvelope parses Marshal's output. Anything else — another
// version, a truncated or overlong input, a field out of range — is an
// integrity error: an envelope is only ever written by Marshal.
func ParseEnvelope(b []byte) (Envelope, error) {
	bad := func(what string) (Envelope, error) {
		return Envelope{}, integrityErr(fmt.Errorf("envelope: %s", what))
	}
	if len(b) < 36 {
		return bad("too short")
	}
	if b[0] != EnvelopeVersion {
		return bad(fmt.Sprintf("unknown version %d", b[0]))
	}
	if b[3] != segmentShift {
		return bad("unsupported segment size")
	}
	e := Envelope{Version: b[0], Mode: Mode(b[1]), Cipher: Cipher(b[2]), SegmentSize: SegmentSize}
	copy(e.Salt[:], b[4:36])
	rest := b[36:]
	var fields [4][]byte
	for i := range fields {
		if len(rest) < 2 {
			return bad("truncated")
		}
		n := int(binary.BigEndian.Uint16(rest))
		rest = rest[2:]
		if len(rest) < n {
			return bad("truncated")
		}
		if n > 0 {
			fields[i] = append([]byte(nil), rest[:n]...)
		}
		rest = rest[n:]
	}
	if len(rest) != 0 {
		return bad("trailing bytes")
	}
	e.KEKID, e.KEKVersion, e.WrappedKey, e.KeyCheck = string(fields[0]), string(fields[1]), fields[2], fields[3]
	if err := e.validate(); err != nil {
		return Envelope{}, err
	}
	return e, nil
}

// ---------------------------------------------------------- customer keys

// NewCustomerEnvelope returns a ModeCustomer envelope for a new object and
// its fresh data key, wrapped with customerKey (AES-256-GCM, bound to the
// envelope's salt); the envelope records only a salted HMAC of the key.
func NewCustomerEnvelope(customerKey []byte) (Envelope, []byte, error) {
	if len(customerKey) != KeySize {
		return Envelope{}, nil, customerKeyErr("the customer key must be 256 bits")
	}
	e := NewEnvelope(ModeCustomer)
	dk := NewDataKey()
	aead, err := customerAEAD(customerKey)
	if err != nil {
		return Envelope{}, nil, err
	}
	nonce := make([]byte, aead.NonceSize(), customerWrappedLen)
	rand.Read(nonce)
	e.WrappedKey = aead.Seal(nonce, nonce, dk, customerAD(&e))
	e.KeyCheck = keyCheck(customerKey, &e)
	return e, dk, nil
}

// CustomerKeyMatches reports whether customerKey is the key the object was
// stored with (in constant time).
func (e *Envelope) CustomerKeyMatches(customerKey []byte) bool {
	return e.Mode == ModeCustomer && len(e.KeyCheck) == keyCheckLen &&
		hmac.Equal(keyCheck(customerKey, e), e.KeyCheck)
}

// UnwrapCustomerKey returns the data key of a ModeCustomer envelope. Another
// key than the object was stored with is errcode.PermissionDenied with
// Detail["reason"] = "customer_key_mismatch"; a matching key that does not
// unwrap the data key is an integrity error.
func (e *Envelope) UnwrapCustomerKey(customerKey []byte) ([]byte, error) {
	if e.Mode != ModeCustomer {
		return nil, errcode.New(errcode.InvalidArgument, "the object is not encrypted with a customer key")
	}
	if err := e.validate(); err != nil {
		return nil, err
	}
	if len(customerKey) != KeySize || !e.CustomerKeyMatches(customerKey) {
		return nil, customerKeyErr("the customer key does not match the object's")
	}
	aead, err := customerAEAD(customerKey)
	if err != nil {
		return nil, err
	}
	n := aead.NonceSize()
	dk, err := aead.Open(nil, e.WrappedKey[:n], e.WrappedKey[n:], customerAD(e))
	if err != nil {
		return nil, integrityErr(fmt.Errorf("unwrap data key: %w", err))
	}
	return dk, nil
}

func customerKeyErr(msg string) error {
	return &errcode.Error{Code: errcode.PermissionDenied, Message: msg,
		Detail: map[string]any{"reason": "customer_key_mismatch"}}
}

func customerAEAD(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, customerKeyErr("the customer key must be 256 bits")
	}
	return cipher.NewGCM(b)
}

const (
	customerWrapLabel  = "coffer/crypt customer wrap v1\x00"
	customerCheckLabel = "coffer/crypt customer key check v1\x00"
)

func customerAD(e *Envelope) []byte {
	ad := append([]byte(customerWrapLabel), e.Version, byte(e.Cipher))
	return append(ad, e.Salt[:]...)
}

func keyCheck(key []byte, e *Envelope) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(customerCheckLabel))
	m.Write(e.Salt[:])
	return m.Sum(nil)
}

package object

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/coffer-storage/coffer/internal/audit"
	"io"

	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/kms"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Encryption at rest (docs/encryption.md)
//
// With Config.Encrypt, every new object, part and inline object gets its
// own data key from Config.Keys, and its bytes go to the blob store (or
// into the metadata store, inline) as crypt's DARE ciphertext bound to the
// blob key (identity "inline" for inline bytes, whose envelope salt is
// random). The envelope (meta.Object.Encryption, meta.ObjectPart.
// Encryption) holds the wrapped data key; a row without one is plaintext,
// so objects written before encryption was turned on stay readable.
//
// Everything the APIs see is the plaintext's: Size, ETag, SHA-256 and
// checksums are computed on the plaintext before it is encrypted; Range
// offsets are plaintext offsets, mapped to the ciphertext segments they
// touch (crypt.Stream.Open). A failing key service is errcode.Unavailable
// (503 + Retry-After): nothing is written without a data key, and nothing
// plaintext is ever written for an encrypted object. Tampered ciphertext
// fails the read with an integrity error (errcode.Internal, reason
// "integrity"), logged here at error level.

// Keys is what the service needs of a key provider; *kms.Keys has it.
type Keys interface {
	// GenerateDataKey returns a fresh data key wrapped under keyID's
	// current KEK ("" = the default).
	GenerateDataKey(ctx context.Context, keyID string) (kms.DataKey, error)
	// Unwrap returns the data key w holds.
	Unwrap(ctx context.Context, w kms.Wrapped) ([]byte, error)
	// KeyExists reports whether keyID names a usable key: nil, NotFound
	// or PermissionDenied (resource kms_key), Unavailable.
	KeyExists(ctx context.Context, keyID string) error
}

// bucketSSE is the encryption a bucket's default asks for (the zero
// value: the server's default).
func bucketSSE(b meta.Bucket) SSE {
	switch b.Encryption {
	case meta.EncryptAES256:
		return SSE{Mode: crypt.ModeServer}
	case meta.EncryptKMS:
		return SSE{Mode: crypt.ModeKMSKey, KMSKeyID: b.EncryptionKMSKey}
	}
	return SSE{}
}

// ErrKMSKey is the answer to an SSE-KMS key a user may not name: one that
// does not exist, and one that exists but is not on the user's allow list,
// alike (S3: 400 KMS.NotFoundException), so key names cannot be probed.
func ErrKMSKey(keyID string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: fmt.Sprintf("KMS key %q does not exist or is not allowed", keyID),
		Detail: map[string]any{"resource": "kms_key", "key_id": keyID}}
}

// checkKMSKey checks that user userID may have bytes encrypted under the
// SSE-KMS key keyID, and that it exists. The provider's default key ("",
// or its name) is everyone's; any other only its allow list's
// (meta.KeyGrants, kept by administrators), checked before the key
// service is asked anything: an unknown key and a key not allowed are
// ErrKMSKey both.
func (s *core) checkKMSKey(ctx context.Context, userID, keyID string) error {
	if s.cfg.Keys == nil {
		return errcode.New(errcode.NotImplemented, "server-side encryption needs a key provider: start the server with --kms")
	}
	if keyID != "" && keyID != s.defaultKMSKey() {
		ok, err := s.meta.KMSKeyAllowed(ctx, keyID, userID)
		if err != nil {
			return err
		}
		if !ok {
			return ErrKMSKey(keyID)
		}
	}
	err := s.cfg.Keys.KeyExists(ctx, keyID)
	if errcode.Is(err, errcode.NotFound) {
		return ErrKMSKey(keyID)
	}
	return err
}

// AllowKMSKey lets user userID name the SSE-KMS key key (for
// administrators: the APIs check the role) and returns the grant as
// stored: allowing again changes nothing, its CreatedAt included. The
// name is not checked against the key provider: a grant of a key that
// does not exist answers as no grant does.
func (s *Service) AllowKMSKey(ctx context.Context, key, userID string) (_ meta.KMSKeyGrant, err error) {
	defer func() {
		s.cfg.Audit.Log(ctx, audit.Event{Action: audit.KMSKeyAllow, Target: audit.Target{KMSKey: key, User: userID}}.Result(err))
	}()
	g := meta.KMSKeyGrant{Key: key, UserID: userID, CreatedAt: s.now().UTC()}
	if err := s.meta.AllowKMSKey(ctx, g); err != nil {
		return meta.KMSKeyGrant{}, err
	}
	gs, err := s.meta.ListKMSKeyGrants(ctx) // an administrator's short list
	if err != nil {
		return meta.KMSKeyGrant{}, err
	}
	for _, have := range gs {
		if have.Key == key && have.UserID == userID {
			return have, nil
		}
	}
	return g, nil // withdrawn meanwhile
}

// DisallowKMSKey withdraws userID's grant of key (NotFound if none): new
// writes under it stop at once, those under bucket defaults userID set
// included; objects already encrypted under it stay readable.
func (s *Service) DisallowKMSKey(ctx context.Context, key, userID string) error {
	err := s.meta.DisallowKMSKey(ctx, key, userID)
	s.cfg.Audit.Log(ctx, audit.Event{Action: audit.KMSKeyDisallow, Target: audit.Target{KMSKey: key, User: userID}}.Result(err))
	return err
}

// ListKMSKeyGrants lists every grant, by key then user.
func (s *Service) ListKMSKeyGrants(ctx context.Context) ([]meta.KMSKeyGrant, error) {
	return s.meta.ListKMSKeyGrants(ctx)
}

// defaultKMSKey is the name of the provider's default key ("" when the
// provider does not say).
func (s *core) defaultKMSKey() string {
	if d, ok := s.cfg.Keys.(interface{ Default() kms.KeyRef }); ok {
		return d.Default().Name()
	}
	return ""
}

// writeSSE decides the encryption of a write by a into b, once: sse,
// else b's default (bucketSSE), else the server's (orDefault); Mode 0 is
// plaintext. A KMS key it names must be one its chooser may use
// (checkKMSKey): the request's, a; the bucket default's, b's owner (so a
// withdrawn grant stops new writes under the bucket's default too).
func (s *core) writeSSE(ctx context.Context, a Actor, b meta.Bucket, sse SSE) (SSE, error) {
	who := a.UserID
	if sse.Mode == 0 {
		sse, who = bucketSSE(b), b.OwnerID
	}
	if sse.Mode == crypt.ModeKMSKey {
		if err := s.checkKMSKey(ctx, who, sse.KMSKeyID); err != nil {
			return SSE{}, err
		}
	}
	return s.orDefault(sse), nil
}

// orDefault is sse, or the server's default when sse asks for nothing:
// SSE-S3 with --encryption on, else plaintext.
func (s *core) orDefault(sse SSE) SSE {
	if sse.Mode == 0 && s.cfg.Encrypt {
		sse.Mode = crypt.ModeServer
	}
	return sse
}

// inlineIdentity is what inline ciphertext is bound to (it has no blob
// key); the envelope's random salt makes each inline object's key unique.
const inlineIdentity = "inline"

// sealer encrypts one new object, part or inline object.
type sealer struct {
	stream   *crypt.Stream
	envelope []byte // crypt.Envelope.Marshal()
	kek      string // kms.KeyRef.String()
}

// SSE is a request's choice of encryption (S3's SSE headers). The zero
// value takes the server's default (Config.Encrypt).
type SSE struct {
	// Mode is 0 (the default), crypt.ModeServer (SSE-S3) or
	// crypt.ModeKMSKey (SSE-KMS).
	Mode crypt.Mode
	// KMSKeyID, with ModeKMSKey, is the key the client named ("": the
	// default KEK).
	KMSKeyID string
	// CustomerKey, with crypt.ModeCustomer (S3 SSE-C), is the client's
	// 256-bit key: it wraps the data key and is never stored (the
	// envelope keeps a salted HMAC to recognise it).
	CustomerKey []byte
}

// ErrCustomerKeyRequired is the error of a read of an object stored with a
// customer key, without one (S3: 400 InvalidRequest).
func ErrCustomerKeyRequired() error {
	return &errcode.Error{Code: errcode.InvalidArgument,
		Message: "the object was stored using a form of server-side encryption with a customer key: the correct parameters must be provided to retrieve it",
		Detail:  map[string]any{"reason": "customer_key_required"}}
}

// ErrNotCustomerEncrypted is the error of customer key headers for an
// object that was not stored with one (S3: 400 InvalidRequest).
func ErrNotCustomerEncrypted() error {
	return &errcode.Error{Code: errcode.InvalidArgument,
		Message: "the encryption parameters are not applicable to this object",
		Detail:  map[string]any{"reason": "not_customer_encrypted"}}
}

// CheckCustomerKey checks, before any byte is sent, that key (nil: none
// given) opens o: nil for a plaintext or server-encrypted object read
// without one and for an SSE-C object read with its key;
// ErrCustomerKeyRequired, ErrNotCustomerEncrypted, or PermissionDenied
// (reason customer_key_mismatch) otherwise.
func CheckCustomerKey(o meta.Object, key []byte) error {
	env := o.Encryption
	if len(o.Parts) > 0 {
		env = o.Parts[0].Encryption
	}
	isCustomer := false
	var e crypt.Envelope
	if env != nil {
		var err error
		if e, err = crypt.ParseEnvelope(env); err == nil && e.Mode == crypt.ModeCustomer {
			isCustomer = true
		}
	}
	switch {
	case !isCustomer && key == nil:
		return nil
	case !isCustomer:
		return ErrNotCustomerEncrypted()
	case key == nil:
		return ErrCustomerKeyRequired()
	case !e.CustomerKeyMatches(key):
		return &errcode.Error{Code: errcode.PermissionDenied, Message: "the customer key does not match the object's",
			Detail: map[string]any{"reason": "customer_key_mismatch"}}
	}
	return nil
}

// EncryptsByDefault reports whether new objects are encrypted without
// being asked (--encryption on).
func (s *core) EncryptsByDefault() bool { return s.cfg.Encrypt }

// Encryption says how an object's bytes are stored, for the APIs'
// response headers: Mode 0 for plaintext.
type Encryption struct {
	Mode     crypt.Mode
	KMSKeyID string // ModeKMSKey: the key's name (as the client named it)
}

// EncryptionOf returns how o is stored (a multipart object: as its first
// part; all its parts share the upload's choice).
func EncryptionOf(o meta.Object) Encryption {
	env := o.Encryption
	if len(o.Parts) > 0 {
		env = o.Parts[0].Encryption
	}
	return encryptionOf(env)
}

func encryptionOf(env []byte) Encryption {
	if env == nil {
		return Encryption{}
	}
	e, err := crypt.ParseEnvelope(env)
	if err != nil {
		return Encryption{Mode: crypt.ModeServer} // encrypted; the read will report the damage
	}
	out := Encryption{Mode: e.Mode}
	if e.Mode == crypt.ModeKMSKey {
		out.KMSKeyID = kms.KeyRef{ID: e.KEKID}.Name()
	}
	return out
}

// PartEncryption returns how a part's bytes are stored.
func PartEncryption(p meta.Part) Encryption { return encryptionOf(p.Encryption) }

// newSealer returns a sealer for bytes bound to identity (a blob key, or
// inlineIdentity) encrypted as sse says (decided by writeSSE or partSSE),
// or nil for plaintext (Mode 0).
func (s *core) newSealer(ctx context.Context, identity string, sse SSE) (*sealer, error) {
	mode := sse.Mode
	keyID := ""
	switch mode {
	case 0:
		return nil, nil
	case crypt.ModeServer:
	case crypt.ModeKMSKey:
		keyID = sse.KMSKeyID
	case crypt.ModeCustomer:
		env, dk, err := crypt.NewCustomerEnvelope(sse.CustomerKey)
		if err != nil {
			return nil, err
		}
		defer clear(dk)
		return newSealerOf(env, dk, identity, "")
	default:
		return nil, errcode.New(errcode.NotImplemented, "encryption mode %v is not implemented", mode)
	}
	if s.cfg.Keys == nil {
		return nil, errcode.New(errcode.NotImplemented, "server-side encryption needs a key provider: start the server with --kms")
	}
	dk, err := s.cfg.Keys.GenerateDataKey(ctx, keyID)
	if err != nil {
		return nil, err
	}
	defer clear(dk.Plaintext)
	env := crypt.NewEnvelope(mode)
	env.KEKID, env.KEKVersion, env.WrappedKey = dk.Wrapped.KEK.ID, dk.Wrapped.KEK.Version, dk.Wrapped.Ciphertext
	return newSealerOf(env, dk.Plaintext, identity, dk.Wrapped.KEK.String())
}

func newSealerOf(env crypt.Envelope, dk []byte, identity, kek string) (*sealer, error) {
	st, err := crypt.NewStream(dk, &env, identity)
	if err != nil {
		return nil, err
	}
	b, err := env.Marshal()
	if err != nil {
		return nil, err
	}
	return &sealer{stream: st, envelope: b, kek: kek}, nil
}

// blobSize is the size of the blob holding size plaintext bytes (-1 stays
// -1: unknown).
func (sl *sealer) blobSize(size int64) (int64, error) {
	if sl == nil || size < 0 {
		return size, nil
	}
	n, err := crypt.CiphertextSize(size)
	if err != nil {
		return 0, errcode.New(errcode.TooLarge, "object too large to encrypt")
	}
	return n, nil
}

// plainSize is the plaintext size of a blob of size bytes written through
// sl.
func (sl *sealer) plainSize(size int64) (int64, error) {
	if sl == nil {
		return size, nil
	}
	n, err := crypt.PlaintextSize(size)
	if err != nil {
		return 0, errcode.Wrap(errcode.Internal, err, "encrypted blob has an impossible size")
	}
	return n, nil
}

// encrypt returns r encrypted (or r itself for a nil sealer).
func (sl *sealer) encrypt(r io.Reader) io.Reader {
	if sl == nil {
		return r
	}
	return sl.stream.Encrypt(r)
}

// opener opens stored bytes [offset, offset+length) of plaintext, given
// their envelope (nil: plaintext).
type opener struct {
	s              *core
	bucket, key    string // for the log
	envelope       []byte
	customerKey    []byte // SSE-C: the key the reader was given, or nil
	identity       string // blob key, or inlineIdentity
	size           int64  // plaintext size
	fetch          crypt.Fetcher
	plainOpenerErr func(error) error // maps the store's errors (missing blob → missing object)
}

// open returns the plaintext bytes [offset, offset+length) (length ≥ 0,
// within size): straight from fetch without an envelope, else through the
// stream the envelope describes, fetching only the segments the range
// touches.
func (op opener) open(ctx context.Context, offset, length int64) (io.ReadCloser, error) {
	if op.envelope == nil {
		rc, err := op.fetch(offset, length)
		return rc, op.plainOpenerErr(err)
	}
	st, err := op.stream(ctx)
	if err != nil {
		return nil, err
	}
	fetch := func(off, n int64) (io.ReadCloser, error) {
		rc, err := op.fetch(off, n)
		return rc, op.plainOpenerErr(err)
	}
	rc, err := st.Open(fetch, op.size, offset, length)
	if err != nil {
		if crypt.IsIntegrity(err) {
			return nil, op.integrity(ctx, err)
		}
		return nil, err
	}
	// Authenticate the first segment now: tampering there (or a blob
	// shorter than its first segment) is an error before any header is
	// sent (a 500), not a cut connection. (bufio passes large reads
	// straight through once its buffer is drained.)
	cr := &checkedReader{ReadCloser: rc, ctx: ctx, op: op}
	br := bufio.NewReaderSize(cr, 512)
	if _, err := br.Peek(1); err != nil && err != io.EOF {
		rc.Close()
		return nil, err
	}
	return peekedReader{br, rc}, nil
}

// stream returns the decryption stream of the envelope: from the cache
// (keycache.go) for server and KMS keys, else parsed, unwrapped and
// derived (and then cached).
func (op opener) stream(ctx context.Context) (*crypt.Stream, error) {
	var ck [32]byte
	cacheable := len(op.envelope) > 1 && crypt.Mode(op.envelope[1]) != crypt.ModeCustomer
	if cacheable {
		ck = streamKey(op.identity, op.envelope)
		if st := op.s.streams.get(ck, op.s.now()); st != nil {
			return st, nil
		}
	}
	env, err := crypt.ParseEnvelope(op.envelope)
	if err != nil {
		return nil, op.integrity(ctx, err)
	}
	var dk []byte
	switch env.Mode {
	case crypt.ModeServer, crypt.ModeKMSKey:
		if op.s.cfg.Keys == nil {
			return nil, errcode.New(errcode.Unavailable, "object is encrypted but no key provider is configured")
		}
		dk, err = op.s.cfg.Keys.Unwrap(ctx, kms.Wrapped{KEK: kms.KeyRef{ID: env.KEKID, Version: env.KEKVersion}, Ciphertext: env.WrappedKey})
		if err != nil {
			if crypt.IsIntegrity(err) || errcode.As(err).Detail["reason"] == "integrity" {
				return nil, op.integrity(ctx, err)
			}
			return nil, err
		}
	case crypt.ModeCustomer:
		if op.customerKey == nil {
			return nil, ErrCustomerKeyRequired()
		}
		if dk, err = env.UnwrapCustomerKey(op.customerKey); err != nil {
			if crypt.IsIntegrity(err) {
				return nil, op.integrity(ctx, err)
			}
			return nil, err
		}
	default:
		return nil, op.integrity(ctx, errcode.New(errcode.Internal, "unknown encryption mode %v", env.Mode))
	}
	defer clear(dk)
	st, err := crypt.NewStream(dk, &env, op.identity)
	if err != nil {
		return nil, op.integrity(ctx, err)
	}
	if cacheable && env.Mode != crypt.ModeCustomer {
		op.s.streams.put(ck, st, op.s.now())
	}
	return st, nil
}

// peekedReader is open's reader of decrypted bytes: Read, and WriteTo (the
// rest of the peeked buffer, then crypt's WriteTo through checkedReader),
// which io.Copy uses.
type peekedReader struct {
	*bufio.Reader
	io.Closer
}

// integrity logs an integrity failure and returns it.
func (op opener) integrity(ctx context.Context, err error) error {
	op.s.log.ErrorContext(ctx, "encrypted object failed authentication: tampered or corrupt",
		"bucket", op.bucket, "key", op.key, "blob", op.identity, "err", err)
	if crypt.IsIntegrity(err) {
		return err
	}
	return &errcode.Error{Code: errcode.Internal, Message: "stored object failed its integrity check",
		Detail: map[string]any{"reason": "integrity"}, Err: err}
}

// checkedReader logs an integrity failure met mid-stream.
type checkedReader struct {
	io.ReadCloser
	ctx    context.Context // the read's, for the log line of a failure
	op     opener
	logged bool
}

func (c *checkedReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.check(err)
	return n, err
}

// WriteTo passes on the decrypting reader's WriteTo (its large pooled
// buffer), logging an integrity failure as Read does.
func (c *checkedReader) WriteTo(w io.Writer) (int64, error) {
	wt, ok := c.ReadCloser.(io.WriterTo)
	if !ok {
		return io.Copy(w, struct{ io.Reader }{c})
	}
	n, err := wt.WriteTo(w)
	c.check(err)
	return n, err
}

func (c *checkedReader) check(err error) {
	if err != nil && err != io.EOF && !c.logged && crypt.IsIntegrity(err) {
		c.logged = true
		c.op.integrity(c.ctx, err)
	}
}

// bytesFetcher fetches from bytes held in memory (inline objects).
func bytesFetcher(b []byte) crypt.Fetcher {
	return func(off, n int64) (io.ReadCloser, error) {
		if off < 0 || off > int64(len(b)) {
			return nil, errcode.New(errcode.RangeNotSatisfiable, "offset %d outside %d stored bytes", off, len(b))
		}
		end := min(off+n, int64(len(b)))
		return io.NopCloser(bytes.NewReader(b[off:end])), nil
	}
}

// uploadEncryption records in u the encryption every part of a new upload
// by a into b is written under, as writeSSE decides it. Of a customer key
// only a salted check is kept (a customer-mode envelope whose data key is
// thrown away: each part gets its own).
func (s *core) uploadEncryption(ctx context.Context, a Actor, b meta.Bucket, sse SSE, u *meta.Upload) error {
	sse, err := s.writeSSE(ctx, a, b, sse)
	if err != nil {
		return err
	}
	switch sse.Mode {
	case 0:
		return nil
	case crypt.ModeServer, crypt.ModeKMSKey:
		if s.cfg.Keys == nil {
			return errcode.New(errcode.NotImplemented, "server-side encryption needs a key provider: start the server with --kms")
		}
		if sse.Mode == crypt.ModeKMSKey {
			u.EncryptionKMSKey = sse.KMSKeyID // checked by writeSSE
		}
	case crypt.ModeCustomer:
		env, dk, err := crypt.NewCustomerEnvelope(sse.CustomerKey)
		if err != nil {
			return err
		}
		clear(dk) // never used: the envelope serves only as the key check
		if u.CustomerKeyCheck, err = env.Marshal(); err != nil {
			return err
		}
	default:
		return errcode.New(errcode.NotImplemented, "encryption mode %v is not implemented", sse.Mode)
	}
	u.EncryptionMode = int(sse.Mode)
	return nil
}

// partSSE decides the encryption of a part of upload u into bucket b, as
// writeSSE does for objects: the upload's (uploadSSE), else the server's
// default.
func (s *core) partSSE(u meta.Upload, b meta.Bucket, customerKey []byte) (SSE, error) {
	sse, err := uploadSSE(u, b, customerKey)
	return s.orDefault(sse), err
}

// uploadSSE is the encryption a part of upload u into bucket b asks for,
// given the customer key the request brought (nil: none): the upload's,
// with the same customer key for SSE-C uploads (S3's errors otherwise).
// Uploads recorded without a mode (plaintext at creation, or created
// before uploads recorded theirs) take the bucket's default (Mode 0 if it
// has none).
func uploadSSE(u meta.Upload, b meta.Bucket, customerKey []byte) (SSE, error) {
	mode := crypt.Mode(u.EncryptionMode)
	if mode != crypt.ModeCustomer {
		if customerKey != nil {
			return SSE{}, &errcode.Error{Code: errcode.InvalidArgument,
				Message: "the upload was not initiated with a customer key (SSE-C): the encryption parameters are not applicable",
				Detail:  map[string]any{"reason": "not_customer_encrypted"}}
		}
		if mode == 0 {
			return bucketSSE(b), nil
		}
		return SSE{Mode: mode, KMSKeyID: u.EncryptionKMSKey}, nil
	}
	if customerKey == nil {
		return SSE{}, &errcode.Error{Code: errcode.InvalidArgument,
			Message: "The multipart upload initiate requested encryption. Subsequent part requests must include the appropriate encryption parameters.",
			Detail:  map[string]any{"reason": "customer_key_required"}}
	}
	env, err := crypt.ParseEnvelope(u.CustomerKeyCheck)
	if err != nil {
		return SSE{}, errcode.Wrap(errcode.Internal, err, "upload %q has a damaged customer key check", u.ID)
	}
	if env.Mode != crypt.ModeCustomer || !env.CustomerKeyMatches(customerKey) {
		return SSE{}, &errcode.Error{Code: errcode.InvalidArgument,
			Message: "The provided encryption parameters did not match the ones used originally.",
			Detail:  map[string]any{"reason": "customer_key_params_mismatch"}}
	}
	return SSE{Mode: crypt.ModeCustomer, CustomerKey: customerKey}, nil
}

// UploadEncryption returns how the parts of u are stored, for the APIs'
// response headers (SSE-KMS without a named key: the provider's default
// key, when it says which).
func (s *Uploads) UploadEncryption(u meta.Upload) Encryption {
	e := Encryption{Mode: crypt.Mode(u.EncryptionMode), KMSKeyID: u.EncryptionKMSKey}
	if e.Mode == crypt.ModeKMSKey && e.KMSKeyID == "" {
		if d, ok := s.cfg.Keys.(interface{ Default() kms.KeyRef }); ok {
			e.KMSKeyID = d.Default().Name()
		}
	}
	return e
}

// CheckUploadCustomerKey checks a customer key given for upload u (S3
// SSE-C headers on CompleteMultipartUpload): it must be the upload's.
func CheckUploadCustomerKey(u meta.Upload, key []byte) error {
	_, err := uploadSSE(u, meta.Bucket{}, key)
	return err
}

package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coffer-storage/coffer/internal/kms"
)

// KMS returns p with a span around each call to the key service that a
// request makes (Wrap, Unwrap, Rotate): the calls kms.Keys makes when
// its caches of intermediate keys miss. The KEK's name is an attribute;
// key material never is.
func KMS(p kms.Provider) kms.Provider { return kmsProvider{p} }

type kmsProvider struct{ kms.Provider }

func (p kmsProvider) Wrap(ctx context.Context, keyID string, plaintext []byte) ([]byte, kms.KeyRef, error) {
	ctx, span := Start(ctx, "kms wrap", attribute.String("coffer.kms.key", keyID))
	out, ref, err := p.Provider.Wrap(ctx, keyID, plaintext)
	End(span, err)
	return out, ref, err
}

func (p kmsProvider) Unwrap(ctx context.Context, kek kms.KeyRef, ciphertext []byte) ([]byte, error) {
	ctx, span := Start(ctx, "kms unwrap", attribute.String("coffer.kms.key", kek.String()))
	out, err := p.Provider.Unwrap(ctx, kek, ciphertext)
	End(span, err)
	return out, err
}

func (p kmsProvider) Rotate(ctx context.Context) (kms.KeyRef, error) {
	ctx, span := Start(ctx, "kms rotate")
	ref, err := p.Provider.Rotate(ctx)
	End(span, err)
	return ref, err
}

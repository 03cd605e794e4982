//go:build !coffer_no_cloudkms && !coffer_no_awskms

package kms

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awskmsapi "github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// motoKMS starts moto and returns it with a KMS client for setting keys up.
func motoKMS(t *testing.T) (*testbackend.Moto, *awskmsapi.Client) {
	t.Helper()
	m := testbackend.StartMoto(t)
	for _, kv := range m.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	c := awskmsapi.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("moto", "moto", ""),
	}, func(o *awskmsapi.Options) { o.BaseEndpoint = aws.String(m.Endpoint()) })
	return m, c
}

func createKey(t *testing.T, c *awskmsapi.Client, alias string) string {
	t.Helper()
	ctx := context.Background()
	out, err := c.CreateKey(ctx, &awskmsapi.CreateKeyInput{Description: aws.String("coffer test")})
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	if alias != "" {
		if _, err := c.CreateAlias(ctx, &awskmsapi.CreateAliasInput{AliasName: aws.String(alias), TargetKeyId: out.KeyMetadata.KeyId}); err != nil {
			t.Fatalf("create alias: %v", err)
		}
	}
	return *out.KeyMetadata.KeyId
}

// TestAWSKMS runs the key service path against a real AWS KMS API (moto).
func TestAWSKMS(t *testing.T) {
	m, c := motoKMS(t)
	ctx := context.Background()
	keyID := createKey(t, c, "alias/coffer-test")
	other := createKey(t, c, "")
	url := "awskms://alias/coffer-test?region=us-east-1&endpoint=" + m.Endpoint()
	k := openLocalKeys(t, url, Options{})
	if got, want := k.Default(), (KeyRef{ID: "awskms:alias/coffer-test"}); got != want {
		t.Fatalf("default %v, want %v", got, want)
	}

	dk := roundTrip(t, k, "")
	if got, want := dk.Wrapped.KEK, (KeyRef{ID: "awskms:alias/coffer-test"}); got != want {
		t.Fatalf("KEK %v, want %v", got, want)
	}
	// A cold node (fresh provider) unwraps it through moto.
	cold := openLocalKeys(t, url, Options{})
	if got, err := cold.Unwrap(ctx, dk.Wrapped); err != nil || !bytes.Equal(got, dk.Plaintext) {
		t.Fatalf("cold unwrap: %v", err)
	}

	t.Run("named keys", func(t *testing.T) {
		for _, id := range []string{keyID, other, "arn:aws:kms:us-east-1:123456789012:key/" + other} {
			if err := k.KeyExists(ctx, id); err != nil {
				t.Fatalf("KeyExists(%q): %v", id, err)
			}
			dk := roundTrip(t, k, id)
			if got := dk.Wrapped.KEK.Name(); got != id {
				t.Fatalf("KEK name %q, want %q", got, id)
			}
			if got, err := cold.Unwrap(ctx, dk.Wrapped); err != nil || !bytes.Equal(got, dk.Plaintext) {
				t.Fatalf("cold unwrap under %q: %v", id, err)
			}
		}
	})

	t.Run("endpoint from AWS_ENDPOINT_URL, awssdk=v2", func(t *testing.T) {
		t.Setenv("AWS_ENDPOINT_URL", m.Endpoint())
		k := openLocalKeys(t, "awskms:///"+keyID+"?awssdk=v2&region=us-east-1", Options{})
		dk := roundTrip(t, k, "")
		// Another node (opened on the alias) opens a keeper for this key id.
		if got, err := cold.Unwrap(ctx, dk.Wrapped); err != nil || !bytes.Equal(got, dk.Plaintext) {
			t.Fatalf("unwrap of a key-id KEK by another node: %v", err)
		}
	})

	t.Run("unknown key id", func(t *testing.T) {
		for _, id := range []string{"alias/nope", "00000000-0000-0000-0000-000000000000", "bad key?x=1"} {
			err := k.KeyExists(ctx, id)
			if e := errcode.As(err); e == nil || e.Code != errcode.NotFound || e.Detail["resource"] != "kms_key" {
				t.Fatalf("KeyExists(%q) = %v, want NotFound with resource kms_key", id, err)
			}
		}
		// Made-up key ids leave no keeper behind.
		before := k.Provider().(*Cloud).keeperCount()
		for i := range 20 {
			_ = k.KeyExists(ctx, fmt.Sprintf("alias/made-up-%d", i))
		}
		if got := k.Provider().(*Cloud).keeperCount(); got != before {
			t.Fatalf("%d keepers after 20 unknown key ids, want %d", got, before)
		}
	})

	t.Run("tampered wrapped key", func(t *testing.T) {
		// The wrapped intermediate key is moto's blob: key id (36 bytes),
		// IV, ciphertext, tag; it starts at byte 3 of ours.
		n := int(dk.Wrapped.Ciphertext[1])<<8 | int(dk.Wrapped.Ciphertext[2])
		for _, tc := range []struct {
			name string
			pos  int
			want errcode.Code
		}{
			{"in the sealed part", 3 + n - 1, errcode.Internal}, // InvalidCiphertextException: integrity
			{"in the key id", 3 + 5, errcode.PermissionDenied},  // moto: AccessDeniedException
		} {
			w := dk.Wrapped
			w.Ciphertext = bytes.Clone(w.Ciphertext)
			w.Ciphertext[tc.pos] ^= 1
			cold := openLocalKeys(t, url, Options{})
			if _, err := cold.Unwrap(ctx, w); errcode.Of(err) != tc.want {
				t.Fatalf("%s: err = %v, want %v", tc.name, err, tc.want)
			}
		}
	})

	t.Run("outage and recovery without reopening", func(t *testing.T) {
		// No caching: every call goes to moto.
		p, err := OpenProvider(ctx, url, Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		strict := New(p, Options{IntermediateKeyTTL: -1, CacheTTL: -1})
		defer strict.Close()
		cached := openLocalKeys(t, url, Options{})
		before := roundTrip(t, strict, "")
		warm := roundTrip(t, cached, "")

		wantUnavailable := func(what string, err error) {
			t.Helper()
			if e := errcode.As(err); e == nil || e.Code != errcode.Unavailable || e.RetryAfter <= 0 {
				t.Fatalf("%s: %v, want Unavailable with RetryAfter", what, err)
			}
		}
		// A hung key service (moto frozen): the timeout answers.
		m.Pause()
		start := time.Now()
		_, err = strict.GenerateDataKey(ctx, "")
		wantUnavailable("generate, hung service", err)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("a hung key service held the call %v", d)
		}
		m.Resume()
		roundTrip(t, strict, "")

		// A stopped key service: connection refused.
		m.Stop()
		_, err = strict.GenerateDataKey(ctx, "")
		wantUnavailable("generate, stopped service", err)
		_, err = strict.Unwrap(ctx, before.Wrapped)
		wantUnavailable("unwrap, stopped service", err)
		// Cached intermediate keys keep serving (documented).
		if got, err := cached.Unwrap(ctx, warm.Wrapped); err != nil || !bytes.Equal(got, warm.Plaintext) {
			t.Fatalf("cached key during the outage: %v", err)
		}

		// moto forgets its keys on restart: make the alias point at a new
		// key; the same provider works again.
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
		createKey(t, c, "alias/coffer-test")
		roundTrip(t, strict, "")
	})
}

// keeperCount is the number of open keepers (for tests).
func (c *Cloud) keeperCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.keepers)
}

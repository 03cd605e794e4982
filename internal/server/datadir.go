package server

// The data folder and the server key.
//
// # Files at rest
//
// The data folder holds the embedded shape's metadata (meta.db, with
// inline objects and password hashes), its blobs and the server key.
// Every file Coffer creates in it is 0600 and every folder 0700, each at
// the depth that creates it: PrepareDataDir for the folder itself,
// sqlite.Open for meta.db and its -wal and -shm, diskblob.Open and Put for
// blobs/, LoadOrCreateKey for server.key. A folder that already existed
// with group or other access is tightened to 0700 (the data folder with a
// warning in the log), so no mode of a pre-existing folder leaks files.
//
// # One server key per metadata store
//
// Tokens, S3 secrets and presigned URLs are made with the server key, so
// every node sharing a metadata store must hold the same key. The store
// records a fingerprint of the key on the first start (KeyFingerprint: an
// HMAC, never the key) and a node or admin command holding another key is
// refused (ErrKeyMismatch) instead of serving with it.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/coffer-storage/coffer/internal/meta"
)

// PrepareDataDir makes dir ready to be the data folder: it creates it
// (mode 0700) if missing; an existing folder that its group or others may
// access is tightened to 0700 and a warning logged.
func PrepareDataDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating data folder: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data folder %s is not a folder", dir)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		if err := os.Chmod(dir, perm&^0o077); err != nil {
			return fmt.Errorf("data folder %s is accessible to its group or others (mode %v) and could not be tightened: %w", dir, perm, err)
		}
		log.Warn("the data folder was accessible to its group or others; tightened it to owner-only",
			"data", dir, "mode_was", perm.String(), "mode", (perm &^ 0o077).String())
	}
	return nil
}

// keyFingerprintLabel is the constant KeyFingerprint authenticates.
const keyFingerprintLabel = "coffer server key fingerprint v1"

// KeyFingerprint returns the fingerprint of a server key recorded in the
// metadata store: HMAC-SHA256 of a fixed constant under the key, in hex.
// It identifies the key without revealing it.
func KeyFingerprint(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(keyFingerprintLabel))
	return hex.EncodeToString(m.Sum(nil))
}

// ErrKeyMismatch is returned (wrapped, with a message for the operator)
// by OpenKey when the metadata store was initialised with another server
// key.
var ErrKeyMismatch = errors.New("the metadata store was initialised with a different server key")

// OpenKey loads the server key from keyFile (DATA/server.key when keyFile
// is "", creating it on first start) and checks it against the metadata
// store m: on the store's first start it records the key's fingerprint;
// afterwards it refuses any other key with ErrKeyMismatch. A key file
// this call created and that the store refuses is removed again.
func OpenKey(ctx context.Context, m meta.Store, data, keyFile string) ([]byte, error) {
	defaulted := keyFile == ""
	if defaulted {
		keyFile = filepath.Join(data, "server.key")
	}
	_, statErr := os.Lstat(keyFile)
	created := errors.Is(statErr, fs.ErrNotExist)
	key, err := LoadOrCreateKey(keyFile)
	if err != nil {
		return nil, err
	}
	fp := KeyFingerprint(key)
	recorded, err := m.ClaimKeyFingerprint(ctx, fp)
	if err != nil {
		return nil, fmt.Errorf("checking the server key against the metadata store: %w", err)
	}
	if recorded == fp {
		return key, nil
	}
	which := "server key file " + keyFile
	if defaulted {
		which += " (the default in the data folder: no --server-key-file was given)"
	}
	if created {
		which += ", generated just now because it did not exist, and removed again"
		os.Remove(keyFile)
	}
	return nil, fmt.Errorf("refusing to start with %s: %w (key fingerprint %.16s…, the metadata store's %.16s…). "+
		"Every node sharing a metadata store must use the same --server-key-file (COFFER_SERVER_KEY_FILE): "+
		"copy the key file of the node that started first to this node; if this data folder's server.key was replaced, restore the original",
		which, ErrKeyMismatch, fp, recorded)
}

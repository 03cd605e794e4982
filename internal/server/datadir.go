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
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/coffer-storage/coffer/internal/atomicfile"
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

// KeyFile says where a process finds the server key and whether it may
// make one.
type KeyFile struct {
	// Data is the data folder; File the --server-key-file, or "" for
	// Data/server.key.
	Data, File string
	// Create makes a missing key file (a fresh random key): coffer serve,
	// and the admin commands of the embedded shape. Without it a missing
	// file is an error: an admin command of the scale-out shape must use
	// the cluster's key, never one of its own.
	Create bool
}

// Path is the key file's path.
func (k KeyFile) Path() string {
	if k.File == "" {
		return filepath.Join(k.Data, "server.key")
	}
	return k.File
}

// describe names the key file for messages.
func (k KeyFile) describe() string {
	which := "server key file " + k.Path()
	if k.File == "" {
		which += " (the default in the data folder: no --server-key-file was given)"
	}
	return which
}

// Check checks the key file before anything is created: an existing one
// must be a key Coffer accepts (ReadKey); a missing one is an error
// unless k.Create.
func (k KeyFile) Check() error {
	_, err := ReadKey(k.Path())
	if errors.Is(err, fs.ErrNotExist) {
		if k.Create {
			return nil
		}
		return fmt.Errorf("%s does not exist: give the cluster's key with --server-key-file (COFFER_SERVER_KEY_FILE); "+
			"this command never makes a key of its own on a shared metadata store", k.describe())
	}
	return err
}

// OpenKey loads the server key (creating it if k.Create and missing) and
// checks it against the metadata store m: on the store's first start it
// records the key's fingerprint; afterwards it refuses any other key with
// ErrKeyMismatch. A key file this call created and that the store refuses
// is removed again.
func OpenKey(ctx context.Context, m meta.Cluster, k KeyFile) ([]byte, error) {
	path := k.Path()
	key, err := ReadKey(path)
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		if err := k.Check(); err != nil {
			return nil, err
		}
		key, created, err = LoadOrCreateKey(path)
	}
	if err != nil {
		return nil, err
	}
	fp := KeyFingerprint(key)
	recorded, err := m.ClaimKeyFingerprint(ctx, fp)
	if err != nil {
		// A key this call created stays: the claim may have committed,
		// and the next start claims it again.
		return nil, fmt.Errorf("checking the server key against the metadata store: %w", err)
	}
	if recorded == fp {
		return key, nil
	}
	which := k.describe()
	if created {
		which += ", generated just now because it did not exist, and removed again"
		os.Remove(path)
	}
	return nil, fmt.Errorf("refusing to start with %s: %w (key fingerprint %.16s…, the metadata store's %.16s…). "+
		"Every node sharing a metadata store must use the same --server-key-file (COFFER_SERVER_KEY_FILE): "+
		"copy the key file of the node that started first to this node; if this data folder's server.key was replaced, restore the original",
		which, ErrKeyMismatch, fp, recorded)
}

// ReadKey reads the server's 32-byte key from path (hex). It refuses a
// key file others can read and a malformed one; a missing file is an
// error wrapping fs.ErrNotExist.
func ReadKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("server key %s: %w", path, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("reading server key: %w", err)
	}
	if st, err := os.Stat(path); err == nil && !keyModeOK(st) {
		return nil, fmt.Errorf("server key %s is readable by others (mode %v); chmod 600 it", path, st.Mode().Perm())
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("server key %s is malformed (want 64 hex digits: openssl rand -hex 32)", path)
	}
	return key, nil
}

// keyModeOK says whether a key file's mode keeps it secret: owner-only,
// or, for a file owned by root, readable by its group too (u=rw,g=r, the
// rule PostgreSQL applies to its TLS key). The latter is how Kubernetes
// mounts a Secret for a pod running as non-root with an fsGroup (root:fsGroup,
// group read: deploy/helm); nothing else may read or write it.
func keyModeOK(st fs.FileInfo) bool {
	perm := st.Mode().Perm()
	if perm&0o077 == 0 {
		return true
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && sys.Uid == 0 && perm&0o037 == 0
}

// LoadOrCreateKey reads the server key at path, creating it (mode 0600,
// a fresh random key) if there is none; created says it did. The file is
// written whole or not at all (atomicfile), so no crash or failed start
// leaves a half-written key that the next start would refuse.
func LoadOrCreateKey(path string) (key []byte, created bool, err error) {
	key, err = ReadKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	key = make([]byte, 32)
	rand.Read(key)
	err = atomicfile.Create(path, []byte(hex.EncodeToString(key)+"\n"), 0o600)
	if errors.Is(err, fs.ErrExist) { // another process made it first: use that one
		key, err = ReadKey(path)
		return key, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("creating server key: %w", err)
	}
	return key, true, nil
}

// Package atomicfile writes small files whole or not at all: the server
// key and the KMS keyring, which a crash must never leave half-written
// (a later start would find a file it cannot use and refuse, with nothing
// to repair it).
//
// The bytes go to a temporary file in the target's folder, are fsynced,
// and only then get the target's name (a rename, or a hard link when an
// existing file must not be replaced); the folder is fsynced last, so the
// name survives a power cut. A crash leaves either no file or the whole
// one, plus at worst a temporary file (".NAME.tmp-…") nothing reads.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Create writes data to path, with mode perm, only if no file is there:
// fs.ErrExist (wrapped) if one is, and that file is left as it is. Of
// processes creating one path at once, exactly one succeeds.
func Create(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, os.Link)
}

// Replace writes data to path, with mode perm, replacing what is there.
// Readers see the old file or the new one, never a mix.
func Replace(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, os.Rename)
}

func write(path string, data []byte, perm fs.FileMode, place func(tmp, path string) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a link, the temporary name; after a rename, nothing
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := place(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
		}
		return err
	}
	return SyncDir(dir)
}

// SyncDir fsyncs the folder dir, making the names created or removed in
// it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

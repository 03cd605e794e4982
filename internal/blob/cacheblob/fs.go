package cacheblob

import (
	"io"
	"io/fs"
	"os"
)

// fileSystem is what the cache does with its folder; tests replace it to
// inject faults (a full disk, I/O errors).
type fileSystem interface {
	CreateTemp(dir string) (file, error)
	Open(name string) (file, error)
	Rename(from, to string) error
	Remove(name string) error
	RemoveAll(name string) error
	MkdirAll(dir string) error
	ReadDir(dir string) ([]fs.DirEntry, error)
}

// file is an open cache file.
type file interface {
	io.Reader
	io.ReaderAt
	io.Writer
	Sync() error
	Close() error
	Name() string
}

// osFS is the real file system.
type osFS struct{}

func (osFS) CreateTemp(dir string) (file, error) {
	f, err := os.CreateTemp(dir, "fill-*")
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Open(name string) (file, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Rename(from, to string) error { return os.Rename(from, to) }
func (osFS) Remove(name string) error     { return os.Remove(name) }
func (osFS) RemoveAll(name string) error  { return os.RemoveAll(name) }
func (osFS) MkdirAll(dir string) error    { return os.MkdirAll(dir, 0o700) }
func (osFS) ReadDir(dir string) ([]fs.DirEntry, error) {
	return os.ReadDir(dir)
}

package audit

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// rotator is the audit file: appended to (0600), one line at a time
// through a buffer, rotated by size. When a line would take the file past
// maxSize, FILE.(n-1) is removed, FILE.i renamed FILE.(i+1), FILE renamed
// FILE.1 and a new FILE begun, so at most maxFiles files exist. A flush
// writes the buffer and, when sync is set, fsyncs the file (and the
// folder after a rotation).
type rotator struct {
	path     string
	maxSize  int64
	maxFiles int
	doSync   bool

	f       *os.File
	w       *bufio.Writer
	size    int64
	rotated bool
}

func openRotator(path string, maxSize int64, maxFiles int, sync bool) (*rotator, error) {
	r := &rotator{path: path, maxSize: maxSize, maxFiles: maxFiles, doSync: sync}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rotator) open() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log: %w", err)
	}
	r.f, r.size = f, st.Size()
	if r.w == nil {
		r.w = bufio.NewWriterSize(f, 64<<10)
	} else {
		r.w.Reset(f)
	}
	return nil
}

// write appends one line, rotating first if it would not fit.
func (r *rotator) write(line []byte) error {
	if r.f == nil {
		if err := r.open(); err != nil {
			return err
		}
	}
	if r.size > 0 && r.size+int64(len(line)) > r.maxSize {
		if err := r.rotate(); err != nil {
			return err
		}
	}
	n, err := r.w.Write(line)
	r.size += int64(n)
	return err
}

func (r *rotator) rotate() error {
	if err := r.w.Flush(); err != nil {
		return err
	}
	if r.doSync {
		if err := r.f.Sync(); err != nil {
			return err
		}
	}
	if err := r.f.Close(); err != nil {
		return err
	}
	r.f = nil
	if r.maxFiles <= 1 {
		if err := os.Remove(r.path); err != nil && !os.IsNotExist(err) {
			return err
		}
	} else {
		os.Remove(fmt.Sprintf("%s.%d", r.path, r.maxFiles-1))
		for i := r.maxFiles - 2; i >= 1; i-- {
			if err := os.Rename(fmt.Sprintf("%s.%d", r.path, i), fmt.Sprintf("%s.%d", r.path, i+1)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
		if err := os.Rename(r.path, r.path+".1"); err != nil {
			return err
		}
	}
	r.rotated = true
	return r.open()
}

// flush writes the buffered lines to the file (no fsync: sync).
func (r *rotator) flush() error {
	if r.f == nil {
		return nil
	}
	return r.w.Flush()
}

// sync makes the lines written durable: an fsync of the file (and of the
// folder after a rotation), when the rotator syncs at all.
func (r *rotator) sync() error {
	if r.f == nil || !r.doSync {
		return nil
	}
	if err := r.f.Sync(); err != nil {
		return err
	}
	if r.rotated {
		r.rotated = false
		if d, err := os.Open(filepath.Dir(r.path)); err == nil {
			d.Sync()
			d.Close()
		}
	}
	return nil
}

func (r *rotator) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.flush()
	if err == nil {
		err = r.sync()
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.f = nil
	return err
}

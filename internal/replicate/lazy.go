package replicate

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// lazy is a destination that could not be opened at start (an S3 store
// that did not answer): every call fails with errcode.Unavailable until a
// background retry opens it, so that the server starts and serves while
// the replica is away (the lag grows and the errors count meanwhile).
type lazy struct {
	st atomic.Pointer[blob.Store]
}

func (l *lazy) get() (blob.Store, error) {
	if p := l.st.Load(); p != nil {
		return *p, nil
	}
	return nil, errcode.New(errcode.Unavailable, "the replica's destination is not reachable yet")
}

// open retries open with backoff (1 s to 30 s) until it succeeds or ctx
// ends, counting each failure.
func (l *lazy) open(ctx context.Context, open func(context.Context) (*Dest, error), errs *atomic.Uint64, log *slog.Logger) {
	backoff := time.Second
	for {
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		d, err := open(octx)
		cancel()
		if err == nil {
			var st blob.Store = d.Store
			l.st.Store(&st)
			log.Info("replication: the destination is reachable")
			return
		}
		if ctx.Err() != nil {
			return
		}
		errs.Add(1)
		log.Warn("replication: opening the destination failed; retrying", "error", err, "retry_in", backoff.String())
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func (l *lazy) Put(ctx context.Context, key string, r io.Reader, size int64) (blob.Info, error) {
	st, err := l.get()
	if err != nil {
		return blob.Info{}, err
	}
	return st.Put(ctx, key, r, size)
}

func (l *lazy) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	st, err := l.get()
	if err != nil {
		return nil, err
	}
	return st.Get(ctx, key, offset, length)
}

func (l *lazy) Stat(ctx context.Context, key string) (blob.Info, error) {
	st, err := l.get()
	if err != nil {
		return blob.Info{}, err
	}
	return st.Stat(ctx, key)
}

func (l *lazy) Delete(ctx context.Context, key string) error {
	st, err := l.get()
	if err != nil {
		return err
	}
	return st.Delete(ctx, key)
}

func (l *lazy) List(ctx context.Context, prefix string, fn func(blob.Info) error) error {
	st, err := l.get()
	if err != nil {
		return err
	}
	return st.List(ctx, prefix, fn)
}

// Close closes the store once opened.
func (l *lazy) Close() error {
	if p := l.st.Load(); p != nil {
		if c, ok := (*p).(blob.Closer); ok {
			return c.Close()
		}
	}
	return nil
}

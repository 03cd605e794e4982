package metasql

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// Trace starts a span for the metadata operation op (a fixed name: "get
// bucket", "put objects", ...) under ctx and returns the context the
// operation runs in and the function that ends the span with the
// operation's error. The server makes one when tracing is on
// (tracing.MetaHook); a backend given none (the default) wraps nothing.
type Trace func(ctx context.Context, op string) (context.Context, func(error))

// Traced returns b with every statement, transaction and Driver
// operation that Ops runs on it traced by t: the one place both backends'
// metadata queries go through. A nil t returns b itself.
func Traced(b Backend, t Trace) Backend {
	if t == nil {
		return b
	}
	return tracedBackend{b: b, t: t}
}

type tracedBackend struct {
	b Backend
	t Trace
}

func (tb tracedBackend) Query(ctx context.Context, what, query string, args []any, begin func(), row func(Row) error) error {
	ctx, end := tb.t(ctx, what)
	err := tb.b.Query(ctx, what, query, args, begin, row)
	end(err)
	return err
}

func (tb tracedBackend) Exec(ctx context.Context, what, query string, args []any, row func(Row) error) (int64, error) {
	ctx, end := tb.t(ctx, what)
	n, err := tb.b.Exec(ctx, what, query, args, row)
	end(err)
	return n, err
}

func (tb tracedBackend) Write(ctx context.Context, what string, fn func(w Writer) error) error {
	ctx, end := tb.t(ctx, what)
	err := tb.b.Write(ctx, what, fn)
	end(err)
	return err
}

func (tb tracedBackend) Ready() error { return tb.b.Ready() }

func (tb tracedBackend) GetVersion(ctx context.Context, bucket, key, version string) (meta.Object, error) {
	ctx, end := tb.t(ctx, "get object")
	o, err := tb.b.GetVersion(ctx, bucket, key, version)
	end(err)
	return o, err
}

func (tb tracedBackend) DeleteVersion(ctx context.Context, bucket, key, versionID string, cond meta.Cond) (meta.Object, error) {
	ctx, end := tb.t(ctx, "delete version")
	o, err := tb.b.DeleteVersion(ctx, bucket, key, versionID, cond)
	end(err)
	return o, err
}

func (tb tracedBackend) PutObjects(ctx context.Context, puts []meta.Put, staged []string) ([]meta.PutResult, error) {
	ctx, end := tb.t(ctx, "put objects")
	out, err := tb.b.PutObjects(ctx, puts, staged)
	end(err)
	return out, err
}

func (tb tracedBackend) MoveObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, dstCond meta.Cond) (meta.Object, error) {
	ctx, end := tb.t(ctx, "move object")
	o, err := tb.b.MoveObject(ctx, srcBucket, srcKey, dstBucket, dstKey, dstCond)
	end(err)
	return o, err
}

func (tb tracedBackend) CreateUpload(ctx context.Context, u meta.Upload, args []any) error {
	ctx, end := tb.t(ctx, "create upload")
	err := tb.b.CreateUpload(ctx, u, args)
	end(err)
	return err
}

func (tb tracedBackend) PutPart(ctx context.Context, p meta.Part, staged []string) (meta.Part, error) {
	ctx, end := tb.t(ctx, "put part")
	out, err := tb.b.PutPart(ctx, p, staged)
	end(err)
	return out, err
}

func (tb tracedBackend) CompleteBackendUpload(ctx context.Context, id string, obj meta.Object, cond meta.Cond) (meta.Object, error) {
	ctx, end := tb.t(ctx, "complete backend upload")
	o, err := tb.b.CompleteBackendUpload(ctx, id, obj, cond)
	end(err)
	return o, err
}

func (tb tracedBackend) Stage(ctx context.Context, s meta.Staging, minBytes int64) (meta.Staging, bool, error) {
	ctx, end := tb.t(ctx, "stage")
	out, ok, err := tb.b.Stage(ctx, s, minBytes)
	end(err)
	return out, ok, err
}

func (tb tracedBackend) RotateRefreshToken(ctx context.Context, oldHash string, next meta.RefreshToken, now time.Time) (meta.RefreshToken, error) {
	ctx, end := tb.t(ctx, "rotate refresh token")
	out, err := tb.b.RotateRefreshToken(ctx, oldHash, next, now)
	end(err)
	return out, err
}

func (tb tracedBackend) UpdateUser(ctx context.Context, id, set string, args []any, revoke bool) (meta.User, error) {
	ctx, end := tb.t(ctx, "update user")
	u, err := tb.b.UpdateUser(ctx, id, set, args, revoke)
	end(err)
	return u, err
}

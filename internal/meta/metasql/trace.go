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

// Observe records one metadata operation op (the same fixed names as
// Trace's) that took d and ended with err: the server's histogram
// coffer_meta_op_duration_seconds. It must not allocate: it runs for every
// statement.
type Observe func(op string, d time.Duration, err error)

// Traced returns b with every statement, transaction and Driver
// operation that Ops runs on it traced by t and observed by obs: the one
// place both backends' metadata queries go through. Either may be nil;
// with both nil it returns b itself.
func Traced(b Backend, t Trace, obs Observe) Backend {
	if t == nil && obs == nil {
		return b
	}
	return tracedBackend{b: b, t: t, obs: obs}
}

type tracedBackend struct {
	b   Backend
	t   Trace
	obs Observe
}

// opSpan is one operation in flight: its name, when it started (when
// observed) and the end of its span (when traced). A value: nothing
// allocates for it.
type opSpan struct {
	op    string
	start time.Time
	end   func(error)
}

func (tb tracedBackend) begin(ctx context.Context, op string) (context.Context, opSpan) {
	sp := opSpan{op: op}
	if tb.obs != nil {
		sp.start = time.Now()
	}
	if tb.t != nil {
		ctx, sp.end = tb.t(ctx, op)
	}
	return ctx, sp
}

func (tb tracedBackend) finish(sp opSpan, err error) {
	if tb.obs != nil {
		tb.obs(sp.op, time.Since(sp.start), err)
	}
	if sp.end != nil {
		sp.end(err)
	}
}

func (tb tracedBackend) Query(ctx context.Context, what, query string, args []any, begin func(), row func(Row) error) error {
	ctx, sp := tb.begin(ctx, what)
	err := tb.b.Query(ctx, what, query, args, begin, row)
	tb.finish(sp, err)
	return err
}

func (tb tracedBackend) Exec(ctx context.Context, what, query string, args []any, row func(Row) error) (int64, error) {
	ctx, sp := tb.begin(ctx, what)
	n, err := tb.b.Exec(ctx, what, query, args, row)
	tb.finish(sp, err)
	return n, err
}

func (tb tracedBackend) Write(ctx context.Context, what string, fn func(w Writer) error) error {
	ctx, sp := tb.begin(ctx, what)
	err := tb.b.Write(ctx, what, fn)
	tb.finish(sp, err)
	return err
}

func (tb tracedBackend) Ready() error { return tb.b.Ready() }

func (tb tracedBackend) GetVersion(ctx context.Context, bucket, key, version string) (meta.Object, error) {
	ctx, sp := tb.begin(ctx, "get object")
	o, err := tb.b.GetVersion(ctx, bucket, key, version)
	tb.finish(sp, err)
	return o, err
}

func (tb tracedBackend) DeleteVersion(ctx context.Context, bucket, key, versionID string, cond meta.Cond) (meta.Object, error) {
	ctx, sp := tb.begin(ctx, "delete version")
	o, err := tb.b.DeleteVersion(ctx, bucket, key, versionID, cond)
	tb.finish(sp, err)
	return o, err
}

func (tb tracedBackend) PutObjects(ctx context.Context, puts []meta.Put, staged []string) ([]meta.PutResult, error) {
	ctx, sp := tb.begin(ctx, "put objects")
	out, err := tb.b.PutObjects(ctx, puts, staged)
	tb.finish(sp, err)
	return out, err
}

func (tb tracedBackend) MoveObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, dstCond meta.Cond) (meta.Object, error) {
	ctx, sp := tb.begin(ctx, "move object")
	o, err := tb.b.MoveObject(ctx, srcBucket, srcKey, dstBucket, dstKey, dstCond)
	tb.finish(sp, err)
	return o, err
}

func (tb tracedBackend) CreateUpload(ctx context.Context, u meta.Upload, args []any) error {
	ctx, sp := tb.begin(ctx, "create upload")
	err := tb.b.CreateUpload(ctx, u, args)
	tb.finish(sp, err)
	return err
}

func (tb tracedBackend) PutPart(ctx context.Context, p meta.Part, staged []string) (meta.Part, error) {
	ctx, sp := tb.begin(ctx, "put part")
	out, err := tb.b.PutPart(ctx, p, staged)
	tb.finish(sp, err)
	return out, err
}

func (tb tracedBackend) CompleteBackendUpload(ctx context.Context, id string, obj meta.Object, cond meta.Cond) (meta.Object, error) {
	ctx, sp := tb.begin(ctx, "complete backend upload")
	o, err := tb.b.CompleteBackendUpload(ctx, id, obj, cond)
	tb.finish(sp, err)
	return o, err
}

func (tb tracedBackend) Stage(ctx context.Context, s meta.Staging, minBytes int64) (meta.Staging, bool, error) {
	ctx, sp := tb.begin(ctx, "stage")
	out, ok, err := tb.b.Stage(ctx, s, minBytes)
	tb.finish(sp, err)
	return out, ok, err
}

func (tb tracedBackend) RotateRefreshToken(ctx context.Context, oldHash string, next meta.RefreshToken, now time.Time) (meta.RefreshToken, error) {
	ctx, sp := tb.begin(ctx, "rotate refresh token")
	out, err := tb.b.RotateRefreshToken(ctx, oldHash, next, now)
	tb.finish(sp, err)
	return out, err
}

func (tb tracedBackend) UpdateUser(ctx context.Context, id, set string, args []any, revoke bool) (meta.User, error) {
	ctx, sp := tb.begin(ctx, "update user")
	u, err := tb.b.UpdateUser(ctx, id, set, args, revoke)
	tb.finish(sp, err)
	return u, err
}

package metasql

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Runner runs one statement of a backend, with the backend's row
// collector, and returns the backend's errors classified as what.
type Runner interface {
	// Query runs the read-only query outside any transaction (SQLite: on
	// the reader pool; PostgreSQL: on a pool connection) and calls row with
	// every row, in order. If it runs the query again (its connection
	// turned out to be broken), it calls begin before each run, so the
	// caller starts over; begin is called before the first run too.
	Query(ctx context.Context, what, query string, args []any, begin func(), row func(Row) error) error
	// Exec runs the write statement in a transaction of its own (SQLite:
	// on the writer; PostgreSQL: announcing the changes of ctx,
	// meta.WithAnnounce) and returns how many rows it changed. A write
	// that also returns rows (RETURNING) calls row with each, in order,
	// when row is not nil.
	Exec(ctx context.Context, what, query string, args []any, row func(Row) error) (int64, error)
	// Write runs fn in a write transaction, as Exec runs its statement,
	// and commits it unless fn fails. fn must be rerunnable (PostgreSQL
	// runs it again after a serialization failure): it resets whatever it
	// fills in.
	Write(ctx context.Context, what string, fn func(w Writer) error) error
	// Ready fails once the store is closed.
	Ready() error
}

// Driver is what a backend runs in transactions of its own, with the
// locks, quota checks and round trips of its own, once Ops made the checks
// of the role method (package meta) of the same name: Ops calls each only with
// arguments that passed them (go-cloud's driver under a portable type).
type Driver interface {
	// GetVersion reads version ("": the latest) of bucket/key, with its
	// parts or inline bytes, as meta.Objects' GetObject and
	// GetObjectVersion say.
	GetVersion(ctx context.Context, bucket, key, version string) (meta.Object, error)
	// DeleteVersion is meta.Objects' (a version named): in its
	// transaction, it decides with CheckRemoval.
	DeleteVersion(ctx context.Context, bucket, key, versionID string, cond meta.Cond) (meta.Object, error)
	// PutObjects writes puts (meta.CheckPuts); staged are the blob keys
	// whose stagings the write releases.
	PutObjects(ctx context.Context, puts []meta.Put, staged []string) ([]meta.PutResult, error)
	// MoveObject moves an object to another key (meta.PrecheckMove).
	MoveObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, dstCond meta.Cond) (meta.Object, error)
	// CreateUpload inserts u (meta.CheckUpload) with the arguments args
	// (uploadArgs) and reserves its declared size.
	CreateUpload(ctx context.Context, u meta.Upload, args []any) error
	// PutPart records p (meta.CheckPart); staged holds its blob key when
	// its staging is to be released.
	PutPart(ctx context.Context, p meta.Part, staged []string) (meta.Part, error)
	// CompleteBackendUpload completes upload id into obj
	// (meta.CheckBackendCompletion).
	CompleteBackendUpload(ctx context.Context, id string, obj meta.Object, cond meta.Cond) (meta.Object, error)
	// Stage records s (meta.CheckStaging).
	Stage(ctx context.Context, s meta.Staging, minBytes int64) (meta.Staging, bool, error)
	// RotateRefreshToken rotates the token of oldHash into next
	// (meta.CheckNextRefreshToken).
	RotateRefreshToken(ctx context.Context, oldHash string, next meta.RefreshToken, now time.Time) (meta.RefreshToken, error)
	// UpdateUser updates user id with the SET list set and its arguments
	// (userUpdateSet of an update meta.CheckUserUpdate passed), revoking
	// the user's refresh tokens when revoke is set.
	UpdateUser(ctx context.Context, id, set string, args []any, revoke bool) (meta.User, error)
}

// Backend is a backend's Runner and Driver.
type Backend interface {
	Runner
	Driver
}

// Writer is a write transaction in progress (Runner.Write).
type Writer interface {
	// Exec runs a statement now and returns how many rows it changed.
	Exec(query string, args ...any) (int64, error)
	// Query runs a statement now and calls row with each row it returns,
	// in order.
	Query(query string, args []any, row func(Row) error) error
	// Queue runs a statement whose outcome nothing in the transaction
	// waits for: SQLite runs it now, PostgreSQL sends it with the next
	// statement or the COMMIT. done, if not nil, has been called with how
	// many rows it changed by the time Write returns.
	Queue(done func(n int64), query string, args ...any) error
}

// Dialect is how the SQL of a backend differs.
type Dialect struct {
	// PH writes placeholders.
	PH PH
	// Key binds an object or upload key (SQLite: TEXT, PostgreSQL: bytea).
	Key func(string) any
	// In is the condition "col is one of the values of the list bound at
	// placeholder n", and List binds such a list (a slice): SQLite's
	// json_each of a JSON array, PostgreSQL's = ANY of an array.
	In   func(col string, n int) string
	List func(v any) (any, error)
	// InlineTable says inline bytes live in a table of their own (SQLite's
	// inline_data) rather than in the objects row.
	InlineTable bool
	// IndexedBy says a scan names the partial index it must use (SQLite's
	// INDEXED BY): without statistics SQLite's planner prefers the
	// primary key, and reads every row of the range instead.
	IndexedBy bool
	// ForUpdate ends a SELECT whose rows the transaction must lock
	// (PostgreSQL's " FOR UPDATE"; "" in SQLite, whose single writer
	// serialises every write).
	ForUpdate string
}

// List runs query on r and returns every row, as scan reads it.
func List[T any](ctx context.Context, r Runner, what string, scan func(Row) (T, error), query string, args ...any) ([]T, error) {
	var out []T
	err := r.Query(ctx, what, query, args, func() { out = nil }, func(row Row) error {
		v, err := scan(row)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Get runs a query of at most one row on r and returns it, as scan reads
// it, or notFound's error if there is none (made only then).
func Get[T any](ctx context.Context, r Runner, what string, scan func(Row) (T, error), notFound func() error, query string, args ...any) (T, error) {
	var v, zero T
	found := false
	err := r.Query(ctx, what, query, args, func() { v, found = zero, false }, func(row Row) (err error) {
		v, err = scan(row)
		found = err == nil
		return err
	})
	switch {
	case err != nil:
		return zero, err
	case !found && notFound != nil:
		return zero, notFound()
	case !found:
		return zero, errcode.New(errcode.Internal, "%s: no row", what)
	}
	return v, nil
}

// Ops are the metadata operations (of meta's roles) that are one statement (or a check
// and one statement, or a short transaction of statements whose outcome
// decides the next), written once for both backends: a backend embeds the
// Ops NewOps makes with its Backend and Dialect. For the operations whose
// transaction is the backend's own (the Driver's), Ops makes the checks and
// calls the driver. What is left to the backends is listed in their
// package documentation. Ops are by role, like meta's, one embedded type
// each, whose methods are in the file of the role.
type Ops struct {
	accountOps
	sessionOps
	inviteOps
	accessKeyOps
	limitOps
	bucketOps
	objectOps
	uploadOps
	stagingOps
	reclamationOps
	shareOps
	tusOps
	jobOps
	keyGrantOps
	clusterOps
	lifecycleOps
	aclOps
	policyOps
	scrubOps
}

// The roles of Ops.
type (
	accountOps     struct{ *core }
	sessionOps     struct{ *core }
	inviteOps      struct{ *core }
	accessKeyOps   struct{ *core }
	limitOps       struct{ *core }
	bucketOps      struct{ *core }
	objectOps      struct{ *core }
	uploadOps      struct{ *core }
	stagingOps     struct{ *core }
	reclamationOps struct{ *core }
	shareOps       struct{ *core }
	tusOps         struct{ *core }
	jobOps         struct{ *core }
	keyGrantOps    struct{ *core }
	clusterOps     struct{ *core }
	lifecycleOps   struct{ *core }
	aclOps         struct{ *core }
	policyOps      struct{ *core }
	scrubOps       struct{ *core }
)

// core is what every role of Ops works with.
type core struct {
	run Runner
	drv Driver
	key func(string) any
	d   Dialect
	sql opSQL
}

// opSQL are the statements of Ops in a dialect, by role, made once
// (SQLite prepares statements by their text).
type opSQL struct {
	ph        PH
	users     userSQL
	keys      accessKeySQL
	buckets   bucketSQL
	invites   inviteSQL
	shares    shareSQL
	uploads   uploadSQL
	tus       tusSQL
	limits    limitSQL
	jobs      jobSQL
	grants    grantSQL
	tags      tagSQL
	lifecycle lifecycleSQL
	scrub     scrubSQL
	lock      lockSQL
	acl       aclSQL
	policy    string
	// publicAccessBlock sets a bucket's Block Public Access bits.
	publicAccessBlock string

	listGarbage, claimGarbage, deleteGarbage, deleteExpiredStaging, renewStaging, unstage, claimKey string
}

// NewOps returns the Ops of backend b, whose dialect is d.
func NewOps(b Backend, d Dialect) Ops {
	ph := d.PH
	c := &core{run: b, drv: b, key: d.Key, d: d, sql: opSQL{
		ph:                   ph,
		users:                newUserSQL(ph),
		keys:                 newAccessKeySQL(ph),
		buckets:              newBucketSQL(ph),
		invites:              newInviteSQL(ph),
		shares:               newShareSQL(ph),
		uploads:              newUploadSQL(ph),
		tus:                  newTusSQL(ph),
		limits:               newLimitSQL(d),
		jobs:                 newJobSQL(ph),
		grants:               newGrantSQL(ph),
		tags:                 newTagSQL(ph),
		lifecycle:            newLifecycleSQL(ph),
		scrub:                newScrubSQL(ph),
		lock:                 newLockSQL(d),
		acl:                  newACLSQL(ph),
		policy:               setBucketColumnSQL(ph, "policy"),
		publicAccessBlock:    setBucketColumnSQL(ph, "public_access_block"),
		listGarbage:          "SELECT " + garbageCols + " FROM garbage WHERE created_at < " + ph(1) + " ORDER BY created_at, id LIMIT " + ph(2),
		claimGarbage:         claimGarbageQuery(ph(1), ph(3), ph(2)),
		deleteGarbage:        "DELETE FROM garbage WHERE " + d.In("id", 1),
		deleteExpiredStaging: "DELETE FROM staging WHERE expires_at < " + ph(1),
		renewStaging: "UPDATE staging SET expires_at = " + ph(2) + " WHERE " + d.In("blob_key", 1) +
			" AND NOT declared AND expires_at > " + ph(3) + " RETURNING blob_key",
		unstage:  "DELETE FROM staging WHERE " + d.In("blob_key", 1) + " AND NOT declared",
		claimKey: claimKeySQL(ph),
	}}
	return Ops{accountOps{c}, sessionOps{c}, inviteOps{c}, accessKeyOps{c}, limitOps{c}, bucketOps{c}, objectOps{c}, uploadOps{c},
		stagingOps{c}, reclamationOps{c}, shareOps{c}, tusOps{c}, jobOps{c}, keyGrantOps{c}, clusterOps{c}, lifecycleOps{c}, aclOps{c}, policyOps{c}, scrubOps{c}}
}

// exec runs a write statement.
func (o *core) exec(ctx context.Context, what, query string, args ...any) error {
	_, err := o.run.Exec(ctx, what, query, args, nil)
	return err
}

// mustChange runs a write statement and returns notFound if it changed no
// row.
func (o *core) mustChange(ctx context.Context, what string, notFound error, query string, args ...any) error {
	n, err := o.run.Exec(ctx, what, query, args, nil)
	if err == nil && n == 0 {
		return notFound
	}
	return err
}

// writeGet runs a write statement that returns at most one row
// (RETURNING) and returns it as scan reads it; found is false if there was
// none.
func writeGet[T any](ctx context.Context, o *core, what string, scan func(Row) (T, error), query string, args ...any) (v T, found bool, err error) {
	_, err = o.run.Exec(ctx, what, query, args, func(r Row) error {
		v, err = scan(r)
		found = err == nil
		return err
	})
	if err != nil {
		var zero T
		return zero, false, err
	}
	return v, found, nil
}

// Result is v, or the zero value with err: the outcome of a write whose
// result was filled in before it failed to commit.
func Result[T any](v T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

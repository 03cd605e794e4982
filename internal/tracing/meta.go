package tracing

import (
	"context"

	"github.com/coffer-storage/coffer/internal/meta"
)

// MetaRoles returns st with a span around the metadata operations each
// backend runs itself rather than through metasql.Ops (which
// metasql.Traced covers): listings, deletes of objects, buckets, keys and
// users, multipart completion, abort and listing, staging growth and the
// janitor's reference check. The other roles and methods are st's own.
func MetaRoles(st meta.Stores, system string) meta.Stores {
	t := MetaHook(system)
	st.AccessKeys = accessKeys{st.AccessKeys, t}
	st.Accounts = accounts{st.Accounts, t}
	st.Buckets = buckets{st.Buckets, t}
	st.Objects = objects{st.Objects, t}
	st.Reclamation = reclamation{st.Reclamation, t}
	st.Stagings = stagings{st.Stagings, t}
	st.Uploads = uploads{st.Uploads, t}
	return st
}

type hook = func(ctx context.Context, op string) (context.Context, func(error))

type accessKeys struct {
	meta.AccessKeys
	t hook
}

func (r accessKeys) DeleteAccessKey(ctx context.Context, userID, id string) error {
	ctx, end := r.t(ctx, "delete access key")
	err := r.AccessKeys.DeleteAccessKey(ctx, userID, id)
	end(err)
	return err
}

type accounts struct {
	meta.Accounts
	t hook
}

func (r accounts) DeleteUser(ctx context.Context, userID string, purge bool) (meta.DeleteUserResult, error) {
	ctx, end := r.t(ctx, "delete user")
	out, err := r.Accounts.DeleteUser(ctx, userID, purge)
	end(err)
	return out, err
}

type buckets struct {
	meta.Buckets
	t hook
}

func (r buckets) DeleteBucket(ctx context.Context, name string) error {
	ctx, end := r.t(ctx, "delete bucket")
	err := r.Buckets.DeleteBucket(ctx, name)
	end(err)
	return err
}

type objects struct {
	meta.Objects
	t hook
}

func (r objects) ListObjects(ctx context.Context, bucket string, opts meta.ListOptions) (meta.ListPage, error) {
	ctx, end := r.t(ctx, "list objects")
	out, err := r.Objects.ListObjects(ctx, bucket, opts)
	end(err)
	return out, err
}

func (r objects) ListObjectVersions(ctx context.Context, bucket string, opts meta.VersionListOptions) (meta.VersionPage, error) {
	ctx, end := r.t(ctx, "list object versions")
	out, err := r.Objects.ListObjectVersions(ctx, bucket, opts)
	end(err)
	return out, err
}

func (r objects) DeleteObject(ctx context.Context, bucket, key string, cond meta.Cond) (meta.Object, error) {
	ctx, end := r.t(ctx, "delete object")
	out, err := r.Objects.DeleteObject(ctx, bucket, key, cond)
	end(err)
	return out, err
}

type reclamation struct {
	meta.Reclamation
	t hook
}

func (r reclamation) ReferencedBlobs(ctx context.Context, keys []string) (map[string]bool, error) {
	ctx, end := r.t(ctx, "referenced blobs")
	out, err := r.Reclamation.ReferencedBlobs(ctx, keys)
	end(err)
	return out, err
}

type stagings struct {
	meta.Stagings
	t hook
}

func (r stagings) GrowStaging(ctx context.Context, key string, minBytes, maxBytes int64) (int64, error) {
	ctx, end := r.t(ctx, "grow staging")
	n, err := r.Stagings.GrowStaging(ctx, key, minBytes, maxBytes)
	end(err)
	return n, err
}

type uploads struct {
	meta.Uploads
	t hook
}

func (r uploads) ListUploads(ctx context.Context, bucket string, opts meta.ListUploadsOptions) ([]meta.Upload, bool, error) {
	ctx, end := r.t(ctx, "list uploads")
	out, more, err := r.Uploads.ListUploads(ctx, bucket, opts)
	end(err)
	return out, more, err
}

func (r uploads) AbortUpload(ctx context.Context, id string) error {
	ctx, end := r.t(ctx, "abort upload")
	err := r.Uploads.AbortUpload(ctx, id)
	end(err)
	return err
}

func (r uploads) CompleteUpload(ctx context.Context, id string, obj meta.Object, parts []meta.CompletePart, minPartSize int64, cond meta.Cond) (meta.Object, error) {
	ctx, end := r.t(ctx, "complete upload")
	out, err := r.Uploads.CompleteUpload(ctx, id, obj, parts, minPartSize, cond)
	end(err)
	return out, err
}

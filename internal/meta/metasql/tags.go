package metasql

import (
	"context"
	"encoding/json"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Tags are stored in a text column of the row they belong to (objects,
// uploads, buckets): a JSON array of {"Key","Value"} in the order given,
// NULL when there are none, so a row without tags costs a NULL.

// TagsArg is a tag set as an argument: its JSON, or nil (NULL) when
// empty.
func TagsArg(tags []meta.Tag) (any, error) { return jsonArg(tags, len(tags) == 0, "tags") }

// DecodeTags is the inverse of TagsArg (nil or "": none).
func DecodeTags(s *string) (tags []meta.Tag, err error) {
	return tags, decodeJSON(s, &tags, "tags")
}

// jsonArg is v as a JSON text argument, or nil (NULL) when null.
func jsonArg(v any, null bool, what string) (any, error) {
	if null {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidArgument, err, "invalid %s", what)
	}
	return string(b), nil
}

// decodeJSON reads a JSON text column into v (NULL or "": v unchanged).
func decodeJSON(s *string, v any, what string) error {
	if s == nil || *s == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(*s), v); err != nil {
		return errcode.Wrap(errcode.Internal, err, "corrupt %s", what)
	}
	return nil
}

// tagSQL are the statements of the tag operations.
type tagSQL struct {
	// set: the version's tags (versionSQL).
	set versionSQL
	// getBucket: the tags of bucket ph(1); setBucket: args tags, name
	// (native buckets only).
	getBucket, setBucket string
}

func newTagSQL(ph PH) tagSQL {
	return tagSQL{
		set:       newVersionSQL(ph, "tags"),
		getBucket: "SELECT tags FROM buckets WHERE name = " + ph(1),
		setBucket: "UPDATE buckets SET tags = " + ph(1) + " WHERE name = " + ph(2) + " AND gateway = ''",
	}
}

// versionSQL are the statements that replace one column of a version's
// row in place (its tags, its ACL).
type versionSQL struct {
	// setLatest, setVersion: args value, bucket, key (, version ID);
	// RETURNING version_id, is_latest. Delete markers are never changed.
	setLatest, setVersion string
	// whyLatest, whyVersion: what a write that changed no row found
	// (scanVersionMiss): args bucket, key (, version ID).
	whyLatest, whyVersion string
}

func newVersionSQL(ph PH, col string) versionSQL {
	set := func(cond string) string {
		return "UPDATE objects SET " + col + " = " + ph(1) + " WHERE bucket = " + ph(2) + " AND key = " + ph(3) + " AND " + cond +
			" AND NOT delete_marker RETURNING version_id, is_latest"
	}
	why := func(cond string) string {
		return "SELECT b.name, o.delete_marker, o.version_id FROM buckets b LEFT JOIN objects o ON o.bucket = b.name AND o.key = " + ph(2) +
			" AND " + cond + " WHERE b.name = " + ph(1)
	}
	return versionSQL{
		setLatest:  set("is_latest"),
		setVersion: set(VersionIs("", ph(4))),
		whyLatest:  why("o.is_latest"),
		whyVersion: why(VersionIs("o.", ph(3))),
	}
}

// SetObjectTags implements meta.Objects (setVersion).
func (o objectOps) SetObjectTags(ctx context.Context, bucket, key, versionID string, tags []meta.Tag) (meta.Object, error) {
	if err := meta.CheckTags(tags, meta.MaxObjectTags); err != nil {
		return meta.Object{}, err
	}
	arg, err := TagsArg(tags)
	if err != nil {
		return meta.Object{}, err
	}
	return o.setVersion(ctx, "set object tags", o.sql.tags.set, arg, meta.Object{Bucket: bucket, Key: key, Tags: tags}, versionID)
}

// setVersion replaces a column of version versionID ("": the latest) of
// out's key with arg, in place: one UPDATE of the version's row; if it
// changed none, a read says why (missing bucket, key or version, or a
// delete marker). A version that appeared between the two (a new latest)
// is tried again. It returns out with the version's ID and IsLatest.
func (o objectOps) setVersion(ctx context.Context, what string, q versionSQL, arg any, out meta.Object, versionID string) (meta.Object, error) {
	bucket, key := out.Bucket, out.Key
	set, why := q.setLatest, q.whyLatest
	args, whyArgs := []any{arg, bucket, o.key(key)}, []any{bucket, o.key(key)}
	if versionID != "" {
		set, why = q.setVersion, q.whyVersion
		args, whyArgs = append(args, versionID), append(whyArgs, versionID)
	}
	for range 3 {
		_, found, err := writeGet(ctx, o.core, what, func(r Row) (struct{}, error) {
			return struct{}{}, r.Scan(&out.VersionID, &out.IsLatest)
		}, set, args...)
		if err != nil || found {
			return Result(out, err)
		}
		miss, err := Get(ctx, o.run, what, scanVersionMiss, func() error { return meta.ErrNoBucket(bucket) }, why, whyArgs...)
		if err != nil {
			return meta.Object{}, err
		}
		switch {
		case miss.marker == nil && versionID != "":
			return meta.Object{}, meta.ErrNoVersion(bucket, key, versionID)
		case miss.marker == nil:
			return meta.Object{}, meta.ErrNoObject(bucket, key)
		case *miss.marker && versionID != "":
			return meta.Object{}, meta.ErrMarkerHasNoTags(versionID)
		case *miss.marker:
			return meta.Object{}, meta.ErrDeleteMarker(bucket, key, Deref(miss.version))
		}
		// A version came between the UPDATE and the read: again.
	}
	return meta.Object{}, errcode.New(errcode.Unavailable, "%s of %q failed: its versions keep changing", what, key)
}

// versionMiss is what whyLatest/whyVersion read.
type versionMiss struct {
	marker  *bool
	version *string
}

func scanVersionMiss(r Row) (versionMiss, error) {
	var (
		name string
		m    versionMiss
	)
	err := r.Scan(&name, &m.marker, &m.version)
	return m, err
}

// GetBucketTags implements meta.Buckets.
func (o bucketOps) GetBucketTags(ctx context.Context, name string) ([]meta.Tag, error) {
	s, err := Get(ctx, o.run, "get bucket tags", func(r Row) (*string, error) {
		var s *string
		return s, r.Scan(&s)
	}, func() error { return meta.ErrNoBucket(name) }, o.sql.tags.getBucket, name)
	if err != nil {
		return nil, err
	}
	tags, err := DecodeTags(s)
	if err == nil && len(tags) == 0 {
		return nil, meta.ErrNoTagSet(name)
	}
	return tags, err
}

// SetBucketTags implements meta.Buckets: one statement; when it changes
// nothing, the bucket is missing (NotFound) or a gateway bucket
// (Conflict).
func (o bucketOps) SetBucketTags(ctx context.Context, name string, tags []meta.Tag) error {
	if err := meta.CheckTags(tags, meta.MaxBucketTags); err != nil {
		return err
	}
	arg, err := TagsArg(tags)
	if err != nil {
		return err
	}
	n, err := o.run.Exec(ctx, "set bucket tags", o.sql.tags.setBucket, []any{arg, name}, nil)
	if err != nil || n > 0 {
		return err
	}
	if _, err := o.GetBucket(ctx, name); err != nil {
		return err
	}
	return errcode.New(errcode.Conflict, "bucket %q is a gateway bucket: its tags are its backend's", name)
}

package metasql

import (
	"context"
	"encoding/json"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// CORS configurations are JSON (meta.CORS) in buckets.cors, NULL when a
// bucket has none (migration 0025); scanBucket reads them with the
// record.

// decodeCORS reads a stored configuration.
func decodeCORS(s string) (*meta.CORS, error) {
	var c meta.CORS
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "corrupt CORS configuration")
	}
	return &c, nil
}

// SetBucketCORS implements meta.CORSConfigs (setDocument).
func (o bucketOps) SetBucketCORS(ctx context.Context, bucket string, c *meta.CORS) error {
	var doc any
	if c != nil {
		if err := meta.CheckCORS(c); err != nil {
			return err
		}
		doc = c
	}
	ph := o.sql.ph
	return o.setDocument(ctx, "CORS configuration", "UPDATE buckets SET cors = "+ph(1)+" WHERE name = "+ph(2)+" AND gateway = ''", bucket, doc)
}

// setDocument stores a bucket document, doc (checked; nil: none), as JSON
// with stmt (arguments the JSON or NULL, the bucket's name; native
// buckets only), in one statement; when it changes nothing, the bucket is
// missing (NotFound) or a gateway bucket (Conflict). what names the
// document in errors.
func (o bucketOps) setDocument(ctx context.Context, what, stmt, bucket string, doc any) error {
	var arg any
	if doc != nil {
		b, err := json.Marshal(doc)
		if err != nil {
			return errcode.Wrap(errcode.InvalidArgument, err, "invalid %s", what)
		}
		arg = string(b)
	}
	n, err := o.run.Exec(ctx, "set bucket "+what, stmt, []any{arg, bucket}, nil)
	if err != nil || n > 0 {
		return err
	}
	if _, err := o.GetBucket(ctx, bucket); err != nil {
		return err
	}
	return errcode.New(errcode.Conflict, "bucket %q is a gateway bucket: its %s is its backend's", bucket, what)
}

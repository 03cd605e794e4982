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

// SetBucketCORS implements meta.CORSConfigs: one statement; when it
// changes nothing, the bucket is missing (NotFound) or a gateway bucket
// (Conflict).
func (o bucketOps) SetBucketCORS(ctx context.Context, bucket string, c *meta.CORS) error {
	var arg any
	if c != nil {
		if err := meta.CheckCORS(c); err != nil {
			return err
		}
		b, err := json.Marshal(c)
		if err != nil {
			return errcode.Wrap(errcode.InvalidArgument, err, "invalid CORS configuration")
		}
		arg = string(b)
	}
	ph := o.sql.ph
	n, err := o.run.Exec(ctx, "set bucket cors", "UPDATE buckets SET cors = "+ph(1)+" WHERE name = "+ph(2)+" AND gateway = ''", []any{arg, bucket}, nil)
	if err != nil || n > 0 {
		return err
	}
	if _, err := o.GetBucket(ctx, bucket); err != nil {
		return err
	}
	return errcode.New(errcode.Conflict, "bucket %q is a gateway bucket: its CORS configuration is its backend's", bucket)
}

package sqlite

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var claimKeySQL = metasql.ClaimKeySQL(ph)

// ClaimKeyFingerprint records fp unless a fingerprint is recorded, and
// returns the recorded one. The writer runs it inside BEGIN IMMEDIATE, so
// processes sharing the file are serialised too.
func (s *Store) ClaimKeyFingerprint(ctx context.Context, fp string) (string, error) {
	if err := meta.CheckKeyFingerprint(fp); err != nil {
		return "", err
	}
	var recorded string
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		if _, err := c.ExecContext(ctx, claimKeySQL, fp, time.Now().UnixNano()); err != nil {
			return classify(err, "record the server key fingerprint")
		}
		var err error
		recorded, err = queryRow(ctx, c, metasql.ScanString, nil, metasql.KeyFingerprintSQL)
		return classify(err, "read the server key fingerprint")
	})
	if err != nil {
		return "", err
	}
	return recorded, nil
}

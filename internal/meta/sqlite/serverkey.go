package sqlite

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// ClaimKeyFingerprint records fp unless a fingerprint is recorded, and
// returns the recorded one. The writer runs it inside BEGIN IMMEDIATE, so
// processes sharing the file are serialised too.
func (s *Store) ClaimKeyFingerprint(ctx context.Context, fp string) (string, error) {
	if err := meta.CheckKeyFingerprint(fp); err != nil {
		return "", err
	}
	var recorded string
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		if _, err := c.ExecContext(ctx, "INSERT INTO server_key (id, fingerprint, recorded_at) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING",
			fp, time.Now().UnixNano()); err != nil {
			return classify(err, "record the server key fingerprint")
		}
		if err := c.QueryRowContext(ctx, "SELECT fingerprint FROM server_key WHERE id = 1").Scan(&recorded); err != nil {
			return classify(err, "read the server key fingerprint")
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return recorded, nil
}

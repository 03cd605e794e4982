package postgres

import (
	"context"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/jackc/pgx/v5"
)

// ClaimKeyFingerprint records fp unless a fingerprint is recorded, and
// returns the recorded one. In READ COMMITTED the INSERT waits for a
// concurrent transaction inserting the row and then does nothing, and the
// SELECT, a statement of its own, sees whichever row was committed first.
func (s *Store) ClaimKeyFingerprint(ctx context.Context, fp string) (string, error) {
	if err := meta.CheckKeyFingerprint(fp); err != nil {
		return "", err
	}
	var recorded string
	err := s.write(ctx, "record the server key fingerprint", func(t *txn) error {
		recorded = ""
		t.exec("INSERT INTO server_key (id, fingerprint, recorded_at) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING",
			fp, t.now.UnixNano())
		t.queryRow(func(r pgx.Row) error { return r.Scan(&recorded) },
			"SELECT fingerprint FROM server_key WHERE id = 1")
		return t.flush()
	})
	if err != nil {
		return "", err
	}
	return recorded, nil
}

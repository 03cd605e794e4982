package postgres

import (
	"context"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var claimKeySQL = metasql.ClaimKeySQL(ph)

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
		t.exec(claimKeySQL, fp, t.now.UnixNano())
		queueGet(t, &recorded, metasql.ScanString, nil, metasql.KeyFingerprintSQL)
		return t.flush()
	})
	if err != nil {
		return "", err
	}
	return recorded, nil
}

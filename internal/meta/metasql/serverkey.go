package metasql

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// claimKeySQL records the server key's fingerprint ph(1) at ph(2) (unix
// nanoseconds) unless one is recorded.
func claimKeySQL(ph PH) string {
	return "INSERT INTO server_key (id, fingerprint, recorded_at) VALUES (1, " + ph(1) + ", " + ph(2) + ") ON CONFLICT (id) DO NOTHING"
}

// keyFingerprintSQL reads the recorded fingerprint.
const keyFingerprintSQL = "SELECT fingerprint FROM server_key WHERE id = 1"

// ClaimKeyFingerprint implements meta.Cluster in one transaction: the
// INSERT records fp unless a fingerprint is recorded (in PostgreSQL's
// READ COMMITTED it waits for a concurrent transaction inserting the row,
// then does nothing; SQLite runs one writer), and the SELECT, a statement
// of its own, reads the one recorded first.
func (o clusterOps) ClaimKeyFingerprint(ctx context.Context, fp string) (string, error) {
	if err := meta.CheckKeyFingerprint(fp); err != nil {
		return "", err
	}
	var recorded string
	err := o.run.Write(ctx, "record the server key fingerprint", func(w Writer) error {
		recorded = ""
		if err := w.Queue(nil, o.sql.claimKey, fp, time.Now().UnixNano()); err != nil {
			return err
		}
		return w.Query(keyFingerprintSQL, nil, func(r Row) (err error) {
			recorded, err = ScanString(r)
			return err
		})
	})
	if err != nil {
		return "", err
	}
	return recorded, nil
}

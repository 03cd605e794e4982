package metasql

// ClaimKeySQL records the server key's fingerprint ph(1) at ph(2) (unix
// nanoseconds) unless one is recorded.
func ClaimKeySQL(ph PH) string {
	return "INSERT INTO server_key (id, fingerprint, recorded_at) VALUES (1, " + ph(1) + ", " + ph(2) + ") ON CONFLICT (id) DO NOTHING"
}

// KeyFingerprintSQL reads the recorded fingerprint.
const KeyFingerprintSQL = "SELECT fingerprint FROM server_key WHERE id = 1"

package sqlite

import "github.com/coffer-storage/coffer/internal/meta"

// Stores returns s by role: every role of meta.Stores is s.
func (s *Store) Stores() meta.Stores {
	return meta.Stores{
		Accounts:       s,
		Sessions:       s,
		Invites:        s,
		AccessKeys:     s,
		Limits:         s,
		Buckets:        s,
		Objects:        s,
		Uploads:        s,
		Stagings:       s,
		Reclamation:    s,
		Shares:         s,
		Tus:            s,
		EncryptionJobs: s,
		KeyGrants:      s,
		Cluster:        s,
		Lifecycles:     s,
		CORSConfigs:    s,
		ACLs:           s,
		Policies:       s,
		Scrubs:         s,
	}
}

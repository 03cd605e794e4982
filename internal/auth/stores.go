package auth

import "github.com/coffer-storage/coffer/internal/meta"

// Stores are the roles of the metadata store the account service uses.
type Stores struct {
	meta.Accounts
	meta.Sessions
	meta.Invites
	meta.AccessKeys
	meta.Limits  // the administrators' per-user rate limit overrides
	meta.Buckets // ListBuckets: what an account owns
	// Changes announces the account changes to the other nodes sharing
	// the store; nil when none does (SQLite).
	Changes meta.ChangeListener
}

// StoresOf picks the roles the account service uses from m.
func StoresOf(m meta.Stores) Stores {
	return Stores{Accounts: m.Accounts, Sessions: m.Sessions, Invites: m.Invites, AccessKeys: m.AccessKeys,
		Limits: m.Limits, Buckets: m.Buckets, Changes: m.Changes}
}

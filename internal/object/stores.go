package object

import "github.com/coffer-storage/coffer/internal/meta"

// Stores are the roles of the metadata store the object service uses.
type Stores struct {
	meta.Accounts // GetUser: the owner's quota and usage
	meta.Buckets
	meta.Objects
	meta.Uploads
	meta.Stagings
	meta.Reclamation
	meta.Shares
	meta.EncryptionJobs
	meta.KeyGrants
	meta.Lifecycles
	meta.CORSConfigs
	meta.ACLs
	meta.Policies
	meta.AccessKeys // GetAccessKey: a bucket policy's principals
	meta.Scrubs     // the scrub's run and findings (nil: none recorded)
}

// StoresOf picks the roles the object service uses from m.
func StoresOf(m meta.Stores) Stores {
	return Stores{
		Accounts: m.Accounts, Buckets: m.Buckets, Objects: m.Objects, Uploads: m.Uploads, Stagings: m.Stagings,
		Reclamation: m.Reclamation, Shares: m.Shares, EncryptionJobs: m.EncryptionJobs, KeyGrants: m.KeyGrants, Lifecycles: m.Lifecycles,
		CORSConfigs: m.CORSConfigs,
		ACLs:        m.ACLs,
		Policies:    m.Policies, AccessKeys: m.AccessKeys, Scrubs: m.Scrubs,
	}
}

package meta

// Stores are the roles of one metadata store, each a small interface of
// its own (one file each in this package). A backend returns its Stores
// with every role set to itself ((*sqlite.Store).Stores,
// (*postgres.Store).Stores); a decorator replaces the roles it wraps and
// passes the others on (metacache.Store.Stores); each consumer takes only the
// roles it uses. Every method of every role follows the package's
// contract.
//
// Stores do not close the store: whoever opened it does.
type Stores struct {
	Accounts       Accounts
	Sessions       Sessions
	Invites        Invites
	AccessKeys     AccessKeys
	Limits         Limits
	Buckets        Buckets
	Objects        Objects
	Uploads        Uploads
	Stagings       Stagings
	Reclamation    Reclamation
	Shares         Shares
	Tus            Tus
	EncryptionJobs EncryptionJobs
	KeyGrants      KeyGrants
	Cluster        Cluster
	Lifecycles     Lifecycles
	CORSConfigs    CORSConfigs
	ACLs           ACLs
	Policies       Policies
	Scrubs         Scrubs
	// Changes is the store's ChangeListener when several processes share
	// it (PostgreSQL); nil when it has none (SQLite).
	Changes ChangeListener
}

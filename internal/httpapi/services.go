package httpapi

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/tus"
)

// The services the file API calls, declared here by what each group of
// routes needs, so that the handlers run in tests with fakes
// (handler_test.go); server hands in auth's areas (*auth.Sessions,
// *auth.Users and *auth.Signups joined for Accounts and UserAdmin,
// *auth.Keys, *auth.Shares) and *object.Service.
// The contracts are those of the methods of the same names there.

// Accounts is what the session and account routes call (auth): tokens,
// signup, login, the signed-in user.
type Accounts interface {
	Authenticate(ctx context.Context, token string) (auth.Principal, error)
	RequireAdmin(ctx context.Context, p auth.Principal) error
	UserActive(ctx context.Context, id string) (bool, error)
	SelfSignup(ctx context.Context, req auth.SignupRequest) (meta.User, meta.Bucket, error)
	Login(ctx context.Context, email, password, clientIP string) (auth.Session, error)
	Refresh(ctx context.Context, refreshToken string) (auth.Session, error)
	Logout(ctx context.Context, refreshToken string) error
	User(ctx context.Context, id string) (meta.User, error)
	UserBuckets(ctx context.Context, id string) ([]meta.Bucket, error)
	ChangePassword(ctx context.Context, id, oldPassword, newPassword, clientIP string) (auth.Session, error)
	DeleteAccount(ctx context.Context, id, password string, purge bool, clientIP string) (meta.DeleteUserResult, error)
}

// AccessKeys is what the S3 key and app token routes call, and the
// authentication of app tokens (auth).
type AccessKeys interface {
	CreateAccessKey(ctx context.Context, userID string, o auth.KeyOptions) (auth.AccessKey, error)
	ListAccessKeys(ctx context.Context, userID string) ([]auth.AccessKey, error)
	DeleteAccessKey(ctx context.Context, userID, id string) error
	CreateAppToken(ctx context.Context, userID string, o auth.KeyOptions) (auth.AccessKey, error)
	ListAppTokens(ctx context.Context, userID string) ([]auth.AccessKey, error)
	DeleteAppToken(ctx context.Context, userID, id string) error
	AuthenticateToken(ctx context.Context, token string) (auth.Principal, error)
}

// UserAdmin is what the administrators' user and invite routes call
// (auth).
type UserAdmin interface {
	CreateUser(ctx context.Context, nu auth.NewUser) (meta.User, meta.Bucket, error)
	ListUsers(ctx context.Context, opts meta.ListUsersOptions) ([]meta.User, bool, error)
	DeleteUser(ctx context.Context, id string, purge bool) (meta.DeleteUserResult, error)
	Disable(ctx context.Context, id string) (meta.User, error)
	Enable(ctx context.Context, id string) (meta.User, error)
	SetQuota(ctx context.Context, id string, bytes int64) (meta.User, error)
	SetPassword(ctx context.Context, id, password string) (meta.User, error)
	SetLimits(ctx context.Context, l meta.UserLimits) error
	Limits(ctx context.Context, id string) (meta.UserLimits, bool, error)
	CreateInvite(ctx context.Context, req auth.InviteRequest) (meta.Invite, string, error)
	ListInvites(ctx context.Context) ([]meta.Invite, error)
	RevokeInvite(ctx context.Context, id string) error
}

// ShareAuth is what share links ask of auth: link passwords and the
// grants that unlock a link.
type ShareAuth interface {
	HashPassword(ctx context.Context, password string) (string, error)
	CheckSharePassword(ctx context.Context, shareID, password, encoded, clientIP string) error
	ShareGrant(shareID string, expires time.Time) string
	CheckShareGrant(shareID, grant string, now time.Time) bool
}

// Buckets is what the bucket routes call (object).
type Buckets interface {
	ListBuckets(ctx context.Context, a object.Actor) ([]meta.Bucket, error)
	CreateBucket(ctx context.Context, a object.Actor, name string, v meta.Visibility) (meta.Bucket, error)
	GetBucket(ctx context.Context, a object.Actor, name string) (meta.Bucket, error)
	SetBucketVisibility(ctx context.Context, a object.Actor, name string, v meta.Visibility) (meta.Bucket, error)
	SetBucketEncryption(ctx context.Context, a object.Actor, name, enc, kmsKey string) (meta.Bucket, error)
	SetBucketVersioning(ctx context.Context, a object.Actor, name string, v meta.Versioning) (meta.Bucket, error)
	DeleteBucket(ctx context.Context, a object.Actor, name string) error
}

// Files is what the file routes, zips and share links call to read and
// write objects (object).
type Files interface {
	Get(ctx context.Context, a object.Actor, bucket, key string) (*object.Reader, error)
	GetVersion(ctx context.Context, a object.Actor, bucket, key, versionID string) (*object.Reader, error)
	Put(ctx context.Context, a object.Actor, in object.PutInput) (meta.Object, error)
	NewBatch(a object.Actor) *object.Batch
	Delete(ctx context.Context, a object.Actor, bucket, key string, cond meta.Cond) (meta.Object, error)
	List(ctx context.Context, a object.Actor, bucket string, opts meta.ListOptions) (meta.ListPage, error)
	Move(ctx context.Context, a object.Actor, srcBucket, srcKey, dstBucket, dstKey string, cond meta.Cond) (meta.Object, error)
	Copy(ctx context.Context, a object.Actor, in object.CopyInput) (meta.Object, error)
	// Versions (versions.go).
	CopyFrom(ctx context.Context, a object.Actor, src *object.Reader, in object.CopyInput) (meta.Object, error)
	DeleteVersion(ctx context.Context, a object.Actor, bucket, key, versionID string, cond meta.Cond) (meta.Object, error)
	ListVersions(ctx context.Context, a object.Actor, bucket string, opts meta.VersionListOptions) (meta.VersionPage, error)
}

// Uploads is what the direct-upload routes call (object).
type Uploads interface {
	CreateUpload(ctx context.Context, a object.Actor, in object.CreateUploadInput) (meta.Upload, error)
	ListParts(ctx context.Context, a object.Actor, bucket, key, id string, after, limit int) (meta.Upload, []meta.Part, bool, error)
	CompleteUpload(ctx context.Context, a object.Actor, bucket, key, id string, parts []meta.CompletePart, cond meta.Cond) (meta.Object, error)
	AbortUpload(ctx context.Context, a object.Actor, bucket, key, id string) error
	BackendDirect() bool
	PresignBackendPart(ctx context.Context, a object.Actor, u meta.Upload, n int, ttl time.Duration) (string, error)
	AbortBackendUploads(ctx context.Context, uploads []meta.Upload)
}

// Shares is what the share-link routes call (object).
type Shares interface {
	CreateShare(ctx context.Context, a object.Actor, ns object.NewShare) (meta.Share, string, error)
	GetShare(ctx context.Context, a object.Actor, id string) (meta.Share, error)
	ListShares(ctx context.Context, a object.Actor, grants bool) ([]meta.Share, error)
	SetShareExpiry(ctx context.Context, a object.Actor, id string, expires time.Time) (meta.Share, error)
	DeleteShare(ctx context.Context, a object.Actor, id string, now time.Time) (removed bool, err error)
	ShareByToken(ctx context.Context, token string, now time.Time) (meta.Share, error)
	ReadShare(ctx context.Context, sh meta.Share, rd object.ShareRead, now time.Time) error
	UseShare(ctx context.Context, sh meta.Share, download bool, now time.Time) error
}

// Encryption is what the administrators' encryption routes call
// (object): the jobs that encrypt and re-wrap, the key-encryption keys in
// use, and the SSE-KMS key grants.
type Encryption interface {
	Job(ctx context.Context, name string) (meta.EncryptionJob, error)
	Jobs(ctx context.Context) ([]meta.EncryptionJob, error)
	StartEncrypt(ctx context.Context, bucket string) (meta.EncryptionJob, error)
	StartRewrap(ctx context.Context) (meta.EncryptionJob, error)
	CurrentKEK(ctx context.Context) (string, error)
	KEKUsage(ctx context.Context) (map[string]int64, error)
	AllowKMSKey(ctx context.Context, key, userID string) (meta.KMSKeyGrant, error)
	DisallowKMSKey(ctx context.Context, key, userID string) error
	ListKMSKeyGrants(ctx context.Context) ([]meta.KMSKeyGrant, error)
}

// Services are the services the API calls, one field per group. A nil
// field fails only the routes that call it.
type Services struct {
	Accounts   Accounts
	AccessKeys AccessKeys
	UserAdmin  UserAdmin
	ShareAuth  ShareAuth
	Buckets    Buckets
	Files      Files
	Uploads    Uploads
	Shares     Shares
	Encryption Encryption
	// Tus is the object service of the tus endpoint (with Config.Tus).
	Tus tus.Objects
}

package meta

import (
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// The checks of a write's arguments, made before its transaction, once for
// every backend. Each is InvalidArgument and nothing is written; a check
// that also completes its argument (defaults, the values a new row starts
// with) returns it as it is to be stored.

// MaxPartNumber is the highest part number (S3's).
const MaxPartNumber = 10000

// CheckUser checks CreateUser's (and CreateInvitedUser's) user and default
// bucket, and returns the bucket as stored: owned by u, private unless
// said otherwise.
func CheckUser(u User, b Bucket) (Bucket, error) {
	switch {
	case u.ID == "" || u.Email == "":
		return b, errcode.New(errcode.InvalidArgument, "user id and email are required")
	case u.QuotaBytes < 0:
		return b, errcode.New(errcode.InvalidArgument, "quota must not be negative")
	case b.OwnerID != "" && b.OwnerID != u.ID:
		return b, errcode.New(errcode.InvalidArgument, "the default bucket must be owned by the new user")
	}
	b.OwnerID = u.ID
	return CheckBucket(b)
}

// CheckQuota checks a quota (SetQuota).
func CheckQuota(quotaBytes int64) error {
	if quotaBytes < 0 {
		return errcode.New(errcode.InvalidArgument, "quota must not be negative")
	}
	return nil
}

// CheckUserUpdate checks UpdateUser's update: at least one field, a
// password hash that is not empty, a quota that is not negative.
func CheckUserUpdate(upd UserUpdate) error {
	switch {
	case upd.PasswordHash != nil && *upd.PasswordHash == "":
		return errcode.New(errcode.InvalidArgument, "password hash must not be empty")
	case upd.QuotaBytes != nil && *upd.QuotaBytes < 0:
		return errcode.New(errcode.InvalidArgument, "quota must not be negative")
	case upd.Admin == nil && upd.Disabled == nil && upd.PasswordHash == nil && upd.QuotaBytes == nil && upd.SessionsAfter == nil:
		return errcode.New(errcode.InvalidArgument, "nothing to update")
	}
	return nil
}

// UsersLimit is the page size of ListUsers: 100 for 0, at most 1000;
// InvalidArgument for a negative limit.
func UsersLimit(limit int) (int, error) {
	if limit < 0 {
		return 0, errcode.New(errcode.InvalidArgument, "limit must not be negative")
	}
	return PageLimit(limit, 100, 1000), nil
}

// PageLimit is a page size: def for a limit <= 0, at most most (0: no
// bound).
func PageLimit(limit, def, most int) int {
	if limit <= 0 {
		return def
	}
	if most > 0 && limit > most {
		return most
	}
	return limit
}

// CheckRefreshToken checks CreateRefreshToken's token and returns it as
// stored: CreatedAt now if zero.
func CheckRefreshToken(t RefreshToken, now time.Time) (RefreshToken, error) {
	if t.Hash == "" || t.UserID == "" || t.Family == "" {
		return t, errcode.New(errcode.InvalidArgument, "refresh token hash, user and family are required")
	}
	t.CreatedAt = OrNow(t.CreatedAt, now)
	return t, nil
}

// CheckBucket checks a native bucket to be created, and returns it with an
// empty visibility defaulted to private, and its versioning as it starts:
// Enabled with object lock, else Unversioned.
func CheckBucket(b Bucket) (Bucket, error) {
	if b.Visibility == "" {
		b.Visibility = Private
	}
	b.Versioning = Unversioned
	if b.ObjectLock.Enabled {
		b.Versioning = VersioningEnabled
	}
	switch {
	case !b.ObjectLock.Enabled && b.ObjectLock.Default != (DefaultRetention{}):
		return b, ErrLockNotEnabled(b.Name)
	case CheckDefaultRetention(b.ObjectLock.Default) != nil:
		return b, CheckDefaultRetention(b.ObjectLock.Default)
	case b.Name == "":
		return b, errcode.New(errcode.InvalidArgument, "bucket name is required")
	case b.OwnerID == "":
		return b, errcode.New(errcode.InvalidArgument, "bucket owner is required")
	case !b.Visibility.Valid():
		return b, CheckVisibility(b.Visibility)
	case b.ACL != nil && !b.ACL.Ownership.Valid():
		return b, aclError("invalid_ownership", "unknown object ownership %q", b.ACL.Ownership)
	case b.ACL != nil:
		return b, CheckGrants(b.ACL.Grants)
	}
	return b, nil
}

// CheckGatewayBucket checks PutGatewayBucket's bucket: CheckBucket, and a
// gateway URL.
func CheckGatewayBucket(b Bucket) (Bucket, error) {
	if b.Name != "" && b.OwnerID != "" && b.Gateway == "" {
		return b, errcode.New(errcode.InvalidArgument, "a gateway bucket needs its gateway URL")
	}
	return CheckBucket(b)
}

// CheckVisibility checks a bucket visibility (SetBucketVisibility).
func CheckVisibility(v Visibility) error {
	if !v.Valid() {
		return errcode.New(errcode.InvalidArgument, "invalid bucket visibility %q", v)
	}
	return nil
}

// CheckObject checks an object to be written. An object with Parts has no
// BlobKey and its Size is the sum of theirs; an inline one (neither) holds
// Size bytes, unless they are encrypted.
func CheckObject(o Object) error {
	switch {
	case o.Bucket == "":
		return errcode.New(errcode.InvalidArgument, "bucket name is required")
	case o.Key == "":
		return errcode.New(errcode.InvalidArgument, "object key is required")
	case o.Size < 0:
		return errcode.New(errcode.InvalidArgument, "object size must not be negative")
	case len(o.Parts) > 0 && o.BlobKey != "":
		return errcode.New(errcode.InvalidArgument, "a multipart object has no blob key of its own")
	case o.CRC32C != nil && len(o.CRC32C) != 4:
		return errcode.New(errcode.InvalidArgument, "a CRC-32C is 4 bytes, not %d", len(o.CRC32C))
	case o.IsInline() && o.Encryption == nil && int64(len(o.Inline)) != o.Size:
		// (Encrypted inline bytes are ciphertext, a little longer than
		// Size: the object service checks them when it decrypts.)
		return errcode.New(errcode.InvalidArgument, "an inline object's size %d is not its %d inline bytes", o.Size, len(o.Inline))
	case !o.IsInline() && o.Inline != nil:
		return errcode.New(errcode.InvalidArgument, "an object with a blob key or parts has no inline bytes")
	}
	if err := CheckTags(o.Tags, MaxObjectTags); err != nil {
		return err
	}
	if err := CheckGrants(o.ACL); err != nil {
		return err
	}
	if len(o.Parts) == 0 {
		return nil
	}
	var sum int64
	for i, p := range o.Parts {
		if p.BlobKey == "" || p.Size < 0 {
			return errcode.New(errcode.InvalidArgument, "part %d of the object needs a blob key and a size", i+1)
		}
		sum += p.Size
	}
	if sum != o.Size {
		return errcode.New(errcode.InvalidArgument, "the object's size %d is not the sum %d of its parts", o.Size, sum)
	}
	return nil
}

// CheckPuts checks PutObjects' puts (CheckObject each) and returns the
// blob keys of the staged ones, whose stagings the write releases.
func CheckPuts(puts []Put) (staged []string, err error) {
	for _, p := range puts {
		if err := CheckObject(p.Object); err != nil {
			return nil, err
		}
		if p.InPlace && !ValidVersionID(p.Object.VersionID) {
			return nil, errcode.New(errcode.InvalidArgument, "an in-place put names a valid version, not %q", p.Object.VersionID)
		}
	}
	for _, p := range puts {
		if !p.Staged {
			continue
		}
		if p.Object.BlobKey == "" {
			return nil, errcode.New(errcode.InvalidArgument, "a staged put needs a blob key")
		}
		staged = append(staged, p.Object.BlobKey)
	}
	return staged, nil
}

// CheckAccessKey checks CreateAccessKey's key and returns it as stored:
// CreatedAt now if zero, a non-nil secret.
func CheckAccessKey(k AccessKey, now time.Time) (AccessKey, error) {
	if k.ID == "" || k.UserID == "" {
		return k, errcode.New(errcode.InvalidArgument, "access key id and user are required")
	}
	if err := CheckKeyScope(k.Scope); err != nil {
		return k, err
	}
	if k.SecretEnc == nil {
		k.SecretEnc = []byte{}
	}
	k.CreatedAt = OrNow(k.CreatedAt, now)
	return k, nil
}

// CheckUpload checks CreateUpload's upload and returns it as stored:
// CreatedAt now if zero.
func CheckUpload(u Upload, now time.Time) (Upload, error) {
	switch {
	case u.ID == "" || u.Bucket == "" || u.Key == "":
		return u, errcode.New(errcode.InvalidArgument, "upload id, bucket and key are required")
	case u.Size < 0 || u.PartSize < 0:
		return u, errcode.New(errcode.InvalidArgument, "upload sizes must not be negative")
	}
	if err := CheckTags(u.Tags, MaxObjectTags); err != nil {
		return u, err
	}
	if err := CheckGrants(u.ACL); err != nil {
		return u, err
	}
	if err := CheckRetention(u.Retention); err != nil {
		return u, err
	}
	u.Retention.Until = StoredTime(u.Retention.Until)
	u.CreatedAt = OrNow(u.CreatedAt, now)
	return u, nil
}

// CheckPart checks PutPart's part (1 <= Number <= MaxPartNumber, Size >=
// 0, a blob key) and returns it as stored: ModTime now if zero.
func CheckPart(p Part, now time.Time) (Part, error) {
	switch {
	case p.UploadID == "":
		return p, errcode.New(errcode.InvalidArgument, "upload id is required")
	case p.Number < 1 || p.Number > MaxPartNumber:
		return p, errcode.New(errcode.InvalidArgument, "part number must be 1 to %d", MaxPartNumber)
	case p.Size < 0:
		return p, errcode.New(errcode.InvalidArgument, "part size must not be negative")
	case p.BlobKey == "":
		return p, errcode.New(errcode.InvalidArgument, "part blob key is required")
	}
	p.ModTime = OrNow(p.ModTime, now)
	return p, nil
}

// CheckBackendCompletion checks CompleteBackendUpload's object before its
// transaction (AssembleBackendUpload checks it against the upload).
func CheckBackendCompletion(obj Object) error {
	if obj.Size < 0 {
		return errcode.New(errcode.InvalidArgument, "object size must not be negative")
	}
	return nil
}

// CheckInvite checks CreateInvite's invite and returns it as stored: every
// use left, not revoked, CreatedAt now if zero.
func CheckInvite(inv Invite, now time.Time) (Invite, error) {
	switch {
	case inv.ID == "" || inv.Hash == "":
		return Invite{}, errcode.New(errcode.InvalidArgument, "invite id and hash are required")
	case inv.Uses < 1:
		return Invite{}, errcode.New(errcode.InvalidArgument, "an invite allows at least one signup, not %d", inv.Uses)
	case inv.ExpiresAt.IsZero():
		return Invite{}, errcode.New(errcode.InvalidArgument, "an invite needs an expiry")
	}
	inv.UsesLeft, inv.Revoked = inv.Uses, false
	inv.CreatedAt = OrNow(inv.CreatedAt, now)
	return inv, nil
}

// CheckShare checks CreateShare's share and returns it as stored: no
// downloads, never accessed, not revoked, CreatedAt now if zero.
func CheckShare(sh Share, now time.Time) (Share, error) {
	switch {
	case sh.ID == "" || sh.Hash == "" || sh.OwnerID == "" || sh.Bucket == "":
		return Share{}, errcode.New(errcode.InvalidArgument, "share id, hash, owner and bucket are required")
	case sh.MaxDownloads < 0:
		return Share{}, errcode.New(errcode.InvalidArgument, "max_downloads must not be negative")
	}
	if err := CheckShareExpiry(sh.ExpiresAt); err != nil {
		return Share{}, err
	}
	sh.Downloads, sh.Revoked, sh.LastAccess = 0, false, time.Time{}
	sh.CreatedAt = OrNow(sh.CreatedAt, now)
	return sh, nil
}

// CheckShareExpiry checks a share's expiry (CreateShare, SetShareExpiry).
func CheckShareExpiry(expires time.Time) error {
	if expires.IsZero() {
		return errcode.New(errcode.InvalidArgument, "a share needs an expiry")
	}
	return nil
}

// CheckShareDownload checks StartShareDownload's download.
func CheckShareDownload(d ShareDownload) error {
	if d.ShareID == "" || d.Client == "" || d.Key == "" || d.Until.IsZero() {
		return errcode.New(errcode.InvalidArgument, "a share download needs a share, a client, a key and an end")
	}
	return nil
}

// CheckStaging checks Stage's staging and returns it as stored: no credit
// yet (Stage computes it), its expiry as stored (StoredTime).
func CheckStaging(s Staging, minBytes int64) (Staging, error) {
	switch {
	case s.BlobKey == "" || s.OwnerID == "":
		return s, errcode.New(errcode.InvalidArgument, "a staging needs a blob key and an owner")
	case s.Declared:
		return s, errcode.New(errcode.InvalidArgument, "declared sizes are staged by CreateUpload")
	case s.Bytes < 0 || minBytes < 0 || minBytes > s.Bytes:
		return s, errcode.New(errcode.InvalidArgument, "staging sizes must satisfy 0 <= min %d <= bytes %d", minBytes, s.Bytes)
	case s.UploadID != "" && (s.Bucket != "" || s.Key != ""):
		return s, errcode.New(errcode.InvalidArgument, "a part's staging replaces no object")
	}
	s.Credit = 0
	s.ExpiresAt = StoredTime(s.ExpiresAt)
	return s, nil
}

// CheckUserLimits checks SetUserLimits' override, unless it removes one
// (Requests and Bytes both 0).
func CheckUserLimits(l UserLimits) error {
	if l.Requests < 0 || l.Bytes < 0 {
		return errcode.New(errcode.InvalidArgument, "limits must be >= 0 (0 = the server's default)")
	}
	if l.Window < time.Second {
		return errcode.New(errcode.InvalidArgument, "the limits' window must be at least a second")
	}
	return nil
}

// CheckKMSKeyGrant checks AllowKMSKey's grant and returns it as stored:
// CreatedAt now if zero.
func CheckKMSKeyGrant(g KMSKeyGrant, now time.Time) (KMSKeyGrant, error) {
	if !ValidKMSKeyName(g.Key) {
		return g, errcode.New(errcode.InvalidArgument, "a KMS key name is 1 to %d bytes of printable UTF-8 without spaces", MaxKMSKeyName)
	}
	if g.UserID == "" {
		return g, errcode.New(errcode.InvalidArgument, "a KMS key grant needs a user")
	}
	g.CreatedAt = OrNow(g.CreatedAt, now)
	return g, nil
}

// CheckEnvelopeTable fails for an unknown table.
func CheckEnvelopeTable(t EnvelopeTable) error {
	if t < EnvelopeObjects || t > EnvelopeUploadParts {
		return errcode.New(errcode.InvalidArgument, "unknown envelope table %d", t)
	}
	return nil
}

// CheckJobSave checks what SaveJob is given.
func CheckJobSave(j EncryptionJob) error {
	if j.State != JobRunning && j.State != JobDone {
		return errcode.New(errcode.InvalidArgument, "job state %q", j.State)
	}
	if j.Phase < EnvelopeObjects || j.Phase > EnvelopeUploadParts {
		return errcode.New(errcode.InvalidArgument, "job phase %d", j.Phase)
	}
	if _, err := ParseCursor(j.Phase, j.Cursor); err != nil {
		return err
	}
	return nil
}

// CheckKeyFingerprint checks ClaimKeyFingerprint's fingerprint.
func CheckKeyFingerprint(fp string) error {
	if fp == "" || len(fp) > 128 {
		return errcode.New(errcode.InvalidArgument, "a server key fingerprint must be 1 to 128 bytes, not %d", len(fp))
	}
	return nil
}

// Page cuts items, read with one more than limit to tell whether more
// exist, to a page of limit, and reports whether more exist.
func Page[T any](items []T, limit int) ([]T, bool) {
	if len(items) > limit {
		return items[:limit], true
	}
	return items, false
}

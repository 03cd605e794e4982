package object

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"github.com/coffer-storage/coffer/internal/audit"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Share links. A share gives whoever holds its token access to one object
// or to every object under a prefix of its owner's bucket, acting as the
// owner but confined to what is shared: ShareKey is the one place a path
// through a link becomes a key, and it can only ever produce keys under
// the shared prefix (keys are flat strings: the shared prefix is prepended
// to a relative path that ValidKey has checked, so no "..", however
// encoded, can leave it). Only the owner creates, lists, inspects, changes
// and revokes a share; anyone else is told it does not exist.

// Shares are the share links of the service.
type Shares struct{ *core }

// NewShare describes a share link to create.
type NewShare struct {
	Bucket string
	// Key is the object to share, or, with Folder, the prefix ("" for the
	// whole bucket; a missing trailing "/" is added).
	Key          string
	Folder       bool
	PasswordHash string // "" or an argon2id PHC string
	Note         string
	AllowUpload  bool // folders only
	MaxDownloads int64
	ExpiresAt    time.Time
	// Grant makes a download grant (meta.Share.Grant): a link for the
	// creator's own short-lived use, at most MaxGrantLife, without a
	// password or uploads; left out of ListShares unless asked for.
	Grant bool
}

// MaxShareNote bounds a share's note, in bytes.
const MaxShareNote = 1024

// MaxGrantLife bounds the life of a download grant: a grant is for a
// download or a preview about to start, not a link to keep.
const MaxGrantLife = time.Hour

// ShareTokenHash is the stored form of a share token: hex SHA-256.
func ShareTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CreateShare creates a share link of a's and returns it with its token,
// which is not stored and cannot be shown again. The shared object must
// exist (a folder need not hold anything yet).
func (s *Shares) CreateShare(ctx context.Context, a Actor, ns NewShare) (sh meta.Share, _ string, err error) {
	defer func() {
		s.audit(ctx, a, audit.ShareCreate, audit.Target{Bucket: ns.Bucket, Key: ns.Key, Share: sh.ID}, err)
	}()
	if a.UserID == "" {
		return meta.Share{}, "", errcode.New(errcode.Unauthenticated, "authentication required")
	}
	b, err := s.authorize(ctx, a, ns.Bucket, actionCreateShare, "")
	if err != nil {
		return meta.Share{}, "", err
	}
	switch {
	case len(ns.Note) > MaxShareNote:
		return meta.Share{}, "", errcode.New(errcode.InvalidArgument, "note is longer than %d bytes", MaxShareNote)
	case ns.MaxDownloads < 0:
		return meta.Share{}, "", errcode.New(errcode.InvalidArgument, "max_downloads must not be negative")
	case ns.AllowUpload && !ns.Folder:
		return meta.Share{}, "", errcode.New(errcode.InvalidArgument, "allow_upload needs a folder share (prefix)")
	case ns.Grant && (ns.AllowUpload || ns.PasswordHash != ""):
		return meta.Share{}, "", errcode.New(errcode.InvalidArgument, "a download grant has no password and takes no uploads")
	case ns.Grant && ns.ExpiresAt.After(time.Now().Add(MaxGrantLife)):
		return meta.Share{}, "", errcode.New(errcode.InvalidArgument, "a download grant expires within %d seconds at most (expires_in)", int(MaxGrantLife/time.Second))
	}
	if ns.Folder {
		if ns.Key != "" && !strings.HasSuffix(ns.Key, "/") {
			ns.Key += "/"
		}
		if ns.Key != "" {
			if err := ValidKey(ns.Key); err != nil {
				return meta.Share{}, "", err
			}
		}
	} else {
		if err := ValidKey(ns.Key); err != nil {
			return meta.Share{}, "", err
		}
		if _, err := b.lookup(ctx, ns.Key); err != nil {
			if errcode.Is(err, errcode.NotFound) {
				return meta.Share{}, "", ErrNoObject(ns.Key)
			}
			return meta.Share{}, "", err
		}
	}
	if ns.Grant {
		// Spent grants serve nothing more and are listed nowhere: each new
		// one clears the owner's spent ones, so they never pile up.
		if _, err := s.meta.DeleteSpentGrants(ctx, a.UserID, time.Now()); err != nil {
			return meta.Share{}, "", err
		}
	}
	var raw [32]byte
	rand.Read(raw[:])
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	var id [12]byte
	rand.Read(id[:])
	sh = meta.Share{
		ID: "sh_" + hex.EncodeToString(id[:]), Hash: ShareTokenHash(token), OwnerID: a.UserID,
		Bucket: ns.Bucket, Key: ns.Key, Folder: ns.Folder, Password: ns.PasswordHash, Note: ns.Note,
		AllowUpload: ns.AllowUpload, MaxDownloads: ns.MaxDownloads, CreatedAt: time.Now(), ExpiresAt: ns.ExpiresAt,
		Grant: ns.Grant,
	}
	if err := s.meta.CreateShare(ctx, sh); err != nil {
		return meta.Share{}, "", err
	}
	sh, err = s.meta.GetShare(ctx, sh.ID)
	return sh, token, err
}

// ListShares returns a's share links, newest first; its download grants
// too when grants is true.
func (s *Shares) ListShares(ctx context.Context, a Actor, grants bool) ([]meta.Share, error) {
	if a.UserID == "" {
		return nil, errcode.New(errcode.Unauthenticated, "authentication required")
	}
	shs, err := s.meta.ListShares(ctx, a.UserID)
	if err != nil || grants {
		return shs, err
	}
	return slices.DeleteFunc(shs, func(sh meta.Share) bool { return sh.Grant }), nil
}

// GetShare returns a's share link id; NotFound if there is none or it is
// someone else's.
func (s *Shares) GetShare(ctx context.Context, a Actor, id string) (meta.Share, error) {
	sh, err := s.meta.GetShare(ctx, id)
	if err != nil || a.UserID == "" || sh.OwnerID != a.UserID {
		if err == nil || errcode.Is(err, errcode.NotFound) {
			return meta.Share{}, errcode.New(errcode.NotFound, "no such share")
		}
		return meta.Share{}, err
	}
	return sh, nil
}

// SetShareExpiry changes the expiry of a's share link id.
func (s *Shares) SetShareExpiry(ctx context.Context, a Actor, id string, expires time.Time) (_ meta.Share, err error) {
	defer func() { s.audit(ctx, a, audit.ShareUpdate, audit.Target{Share: id}, err) }()
	if _, err := s.GetShare(ctx, a, id); err != nil {
		return meta.Share{}, err
	}
	return s.meta.SetShareExpiry(ctx, id, expires)
}

// DeleteShare ends a's share link id: an active link is revoked (it stays
// listed, revoked, so its owner sees it ended); a link that no longer
// works (revoked, expired, used up) and any download grant is removed.
// It reports whether the link was removed.
func (s *Shares) DeleteShare(ctx context.Context, a Actor, id string, now time.Time) (removed bool, err error) {
	defer func() { s.audit(ctx, a, audit.ShareRevoke, audit.Target{Share: id}, err) }()
	sh, err := s.GetShare(ctx, a, id)
	if err != nil {
		return false, err
	}
	if !sh.Grant && sh.State(now) == "active" {
		return false, s.meta.RevokeShare(ctx, id)
	}
	return true, s.meta.DeleteShare(ctx, id)
}

// ShareByToken returns the share link of token if it is active at now:
// NotFound if the token is unknown, meta.ErrShareUnavailable if the share
// is revoked, expired or used up (returned with the share then, so that a
// used-up link can still resume a download it counted: see ReadShare).
// Whether its owner is still enabled is the caller's to check (the
// account state lives in auth).
func (s *Shares) ShareByToken(ctx context.Context, token string, now time.Time) (meta.Share, error) {
	if token == "" || len(token) > 128 {
		return meta.Share{}, errcode.New(errcode.NotFound, "no such share link")
	}
	sh, err := s.meta.GetShareByHash(ctx, ShareTokenHash(token))
	if errcode.Is(err, errcode.NotFound) {
		return meta.Share{}, errcode.New(errcode.NotFound, "no such share link")
	}
	if err != nil {
		return meta.Share{}, err
	}
	if st := sh.State(now); st != "active" {
		return sh, meta.ErrShareUnavailable(st)
	}
	return sh, nil
}

// UseShare records an access through share sh (a download when download
// is true, refused past its limit); see meta.Shares.UseShare.
func (s *Shares) UseShare(ctx context.Context, sh meta.Share, download bool, now time.Time) error {
	err := s.meta.UseShare(ctx, sh.ID, download, now)
	s.auditExhausted(ctx, sh, err)
	return err
}

// auditExhausted records a request refused because share sh's downloads
// are used up.
func (s *Shares) auditExhausted(ctx context.Context, sh meta.Share, err error) {
	if e := errcode.As(err); s.cfg.Audit != nil && e != nil && e.Detail["state"] == "used_up" {
		s.cfg.Audit.Log(ctx, audit.Event{Action: audit.ShareExhausted, Actor: audit.Actor{Type: audit.ActorAnonymous, User: sh.OwnerID},
			Target: audit.Target{Share: sh.ID, Bucket: sh.Bucket}, Outcome: audit.Failure, Reason: audit.ReasonLimit})
	}
}

// Resuming a download through a link with a download limit (see
// ReadShare).
const (
	// ShareResumeWindow is how long after its last request a counted
	// download may be resumed (within the link's own expiry).
	ShareResumeWindow = time.Hour
	// ShareMaxResumes bounds the resumes of one counted download.
	ShareMaxResumes = 16
)

// ShareRead is a GET of a file through a share link.
type ShareRead struct {
	Client string // the client's address, as ShareClient gives it
	Key    string
	ETag   string
	Offset int64 // the first byte the answer sends
}

// ShareClient is the form of a client's address that share downloads are
// resumed by: an IPv4 address, or an IPv6 address's /64 (one
// subscriber's allocation, whose privacy addresses change).
func ShareClient(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.String()
		}
	}
	return a.String()
}

// ReadShare records a GET of a file through share sh and refuses it past
// the link's download limit (meta.ErrShareUnavailable "used_up"):
//
//   - without a limit, a GET from the first byte is a download, and a
//     ranged GET further on (a video seeking, a resume) is not counted;
//   - with a limit, every GET is a download of its own, from the first
//     byte or not, except the resume of the same client's counted
//     download of the same file and ETag: a ranged GET that begins after
//     the download's previous request began, within ShareResumeWindow of
//     it, at most ShareMaxResumes times. A resume passes a used-up link
//     (its download was counted); ten "Range: bytes=1-" requests are one
//     download and nine refusals.
func (s *Shares) ReadShare(ctx context.Context, sh meta.Share, rd ShareRead, now time.Time) (err error) {
	defer func() { s.auditExhausted(ctx, sh, err) }()
	if sh.MaxDownloads == 0 {
		return s.meta.UseShare(ctx, sh.ID, rd.Offset == 0, now)
	}
	d := meta.ShareDownload{ShareID: sh.ID, Client: rd.Client, Key: rd.Key, ETag: rd.ETag, Offset: rd.Offset, Until: now.Add(ShareResumeWindow)}
	if rd.Offset > 0 {
		resumed, err := s.meta.ResumeShareDownload(ctx, d, ShareMaxResumes, now)
		if err != nil || resumed {
			return err
		}
	}
	return s.meta.StartShareDownload(ctx, d, now)
}

// ShareActor is who acts through share sh: its owner.
func ShareActor(sh meta.Share) Actor { return Actor{UserID: sh.OwnerID, Share: true} }

// ShareKey is the key that the path rel names through share sh: the
// shared object itself for rel "" of a file share, prefix+rel in a folder
// share. NotFound for a path a file share does not have, InvalidArgument
// for a rel that is not a valid key on its own (a "." or ".." segment,
// control bytes, ...). The result always lies inside the share.
func ShareKey(sh meta.Share, rel string) (string, error) {
	if !sh.Folder {
		if rel != "" {
			return "", errcode.New(errcode.NotFound, "no such file in this share")
		}
		return sh.Key, nil
	}
	if rel == "" {
		return "", errcode.New(errcode.NotFound, "a folder share has no file at its root")
	}
	if err := ValidKey(rel); err != nil {
		return "", err
	}
	if strings.HasPrefix(rel, "/") || strings.Contains(rel, "//") {
		return "", errcode.New(errcode.InvalidArgument, "a path through a share link has no empty segment")
	}
	key := sh.Key + rel
	if err := ValidKey(key); err != nil {
		return "", err
	}
	return key, nil
}

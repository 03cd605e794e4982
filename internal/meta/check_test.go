package meta

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// wantChecked fails unless err is nil (ok) or InvalidArgument (not ok).
func wantChecked(t *testing.T, what string, err error, ok bool) {
	t.Helper()
	switch {
	case ok && err != nil:
		t.Errorf("%s: %v, want accepted", what, err)
	case !ok && !errcode.Is(err, errcode.InvalidArgument):
		t.Errorf("%s: %v, want invalid_argument", what, err)
	}
}

func TestCheckUserAndBucket(t *testing.T) {
	u := User{ID: "u", Email: "u@example.com"}
	for _, c := range []struct {
		name string
		u    User
		b    Bucket
		ok   bool
	}{
		{"ok", u, Bucket{Name: "u"}, true},
		{"owner given", u, Bucket{Name: "u", OwnerID: "u", Visibility: PublicRead}, true},
		{"no id", User{Email: "e"}, Bucket{Name: "u"}, false},
		{"no email", User{ID: "u"}, Bucket{Name: "u"}, false},
		{"negative quota", User{ID: "u", Email: "e", QuotaBytes: -1}, Bucket{Name: "u"}, false},
		{"bucket of another", u, Bucket{Name: "u", OwnerID: "v"}, false},
		{"no bucket name", u, Bucket{}, false},
		{"bad visibility", u, Bucket{Name: "u", Visibility: "everyone"}, false},
	} {
		b, err := CheckUser(c.u, c.b)
		wantChecked(t, c.name, err, c.ok)
		if err == nil && (b.OwnerID != "u" || !b.Visibility.Valid() || c.b.Visibility == "" && b.Visibility != Private) {
			t.Errorf("%s: bucket as stored %+v", c.name, b)
		}
	}
	for _, c := range []struct {
		b  Bucket
		ok bool
	}{
		{Bucket{Name: "b", OwnerID: "u"}, true},
		{Bucket{OwnerID: "u"}, false},
		{Bucket{Name: "b"}, false},
		{Bucket{Name: "b", OwnerID: "u", Visibility: "x"}, false},
	} {
		_, err := CheckBucket(c.b)
		wantChecked(t, "CheckBucket", err, c.ok)
	}
	wantChecked(t, "CheckVisibility public-read", CheckVisibility(PublicRead), true)
	wantChecked(t, "CheckVisibility empty", CheckVisibility(""), false)
}

func TestCheckGatewayBucket(t *testing.T) {
	for _, c := range []struct {
		b    Bucket
		want string // "" = ok, else a word of the message
	}{
		{Bucket{Name: "g", OwnerID: "u", Gateway: "s3://x"}, ""},
		{Bucket{OwnerID: "u", Gateway: "s3://x"}, "name"},
		{Bucket{Name: "g", Gateway: "s3://x"}, "owner"},
		{Bucket{Name: "g", OwnerID: "u"}, "gateway"},
		{Bucket{Name: "g", OwnerID: "u", Visibility: "x"}, "gateway"},
		{Bucket{Name: "g", OwnerID: "u", Gateway: "s3://x", Visibility: "x"}, "visibility"},
	} {
		b, err := CheckGatewayBucket(c.b)
		if c.want == "" {
			if err != nil || b.Visibility != Private {
				t.Errorf("CheckGatewayBucket(%+v) = %+v, %v", c.b, b, err)
			}
			continue
		}
		if !errcode.Is(err, errcode.InvalidArgument) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckGatewayBucket(%+v) = %v, want an error about the %s", c.b, err, c.want)
		}
	}
}

func TestCheckUserUpdate(t *testing.T) {
	yes, empty, hash, neg, quota, now := true, "", "$argon2id$x", int64(-1), int64(5), time.Now()
	for _, c := range []struct {
		name string
		upd  UserUpdate
		ok   bool
	}{
		{"nothing", UserUpdate{}, false},
		{"revoke only", UserUpdate{RevokeRefreshTokens: true}, false},
		{"admin", UserUpdate{Admin: &yes}, true},
		{"disabled", UserUpdate{Disabled: &yes}, true},
		{"password", UserUpdate{PasswordHash: &hash}, true},
		{"empty password", UserUpdate{PasswordHash: &empty}, false},
		{"quota", UserUpdate{QuotaBytes: &quota}, true},
		{"negative quota", UserUpdate{QuotaBytes: &neg, Admin: &yes}, false},
		{"sessions", UserUpdate{SessionsAfter: &now}, true},
	} {
		wantChecked(t, c.name, CheckUserUpdate(c.upd), c.ok)
	}
	wantChecked(t, "CheckQuota 0", CheckQuota(0), true)
	wantChecked(t, "CheckQuota -1", CheckQuota(-1), false)
}

func TestLimits(t *testing.T) {
	for _, c := range []struct{ limit, def, most, want int }{
		{0, 1000, 10000, 1000},
		{-5, 1000, 10000, 1000},
		{7, 1000, 10000, 7},
		{20000, 1000, 10000, 10000},
		{20000, 1000, 0, 20000},
	} {
		if got := PageLimit(c.limit, c.def, c.most); got != c.want {
			t.Errorf("PageLimit(%d, %d, %d) = %d, want %d", c.limit, c.def, c.most, got, c.want)
		}
	}
	for _, c := range []struct{ limit, want int }{{0, 100}, {5, 5}, {1000, 1000}, {1001, 1000}} {
		if got, err := UsersLimit(c.limit); err != nil || got != c.want {
			t.Errorf("UsersLimit(%d) = %d, %v; want %d", c.limit, got, err, c.want)
		}
	}
	_, err := UsersLimit(-1)
	wantChecked(t, "UsersLimit(-1)", err, false)
}

func TestCheckObject(t *testing.T) {
	blob := Object{Bucket: "b", Key: "k", Size: 3, BlobKey: "x"}
	multi := Object{Bucket: "b", Key: "k", Size: 5, Parts: []ObjectPart{{BlobKey: "p1", Size: 2}, {BlobKey: "p2", Size: 3}}}
	inline := Object{Bucket: "b", Key: "k", Size: 3, Inline: []byte("abc")}
	with := func(o Object, f func(*Object)) Object {
		o.Parts = slices.Clone(o.Parts)
		f(&o)
		return o
	}
	for _, c := range []struct {
		name string
		o    Object
		ok   bool
	}{
		{"single blob", blob, true},
		{"multipart", multi, true},
		{"inline", inline, true},
		{"empty inline", Object{Bucket: "b", Key: "k"}, true},
		{"encrypted inline longer than size", with(inline, func(o *Object) { o.Inline, o.Encryption = []byte("ciphertext"), []byte("env") }), true},
		{"no bucket", with(blob, func(o *Object) { o.Bucket = "" }), false},
		{"no key", with(blob, func(o *Object) { o.Key = "" }), false},
		{"negative size", with(blob, func(o *Object) { o.Size = -1 }), false},
		{"parts and a blob key", with(multi, func(o *Object) { o.BlobKey = "x" }), false},
		{"inline size mismatch", with(inline, func(o *Object) { o.Size = 4 }), false},
		{"inline bytes and a blob key", with(blob, func(o *Object) { o.Inline = []byte("abc") }), false},
		{"inline bytes and parts", with(multi, func(o *Object) { o.Inline = []byte{} }), false},
		{"part without a blob", with(multi, func(o *Object) { o.Parts[1].BlobKey = "" }), false},
		{"negative part", with(multi, func(o *Object) { o.Parts[0].Size, o.Parts[1].Size = -1, 6 }), false},
		{"size not the sum", with(multi, func(o *Object) { o.Size = 6 }), false},
	} {
		wantChecked(t, c.name, CheckObject(c.o), c.ok)
	}
}

func TestCheckPuts(t *testing.T) {
	o := Object{Bucket: "b", Key: "k", BlobKey: "x"}
	staged, err := CheckPuts([]Put{{Object: o}, {Object: Object{Bucket: "b", Key: "k2", BlobKey: "y"}, Staged: true}})
	if err != nil || !slices.Equal(staged, []string{"y"}) {
		t.Errorf("CheckPuts = %q, %v", staged, err)
	}
	_, err = CheckPuts([]Put{{Object: Object{Bucket: "b", Key: "k"}, Staged: true}})
	wantChecked(t, "a staged inline put", err, false)
	_, err = CheckPuts([]Put{{Object: o, Staged: true}, {Object: Object{Key: "k"}}})
	wantChecked(t, "an invalid object", err, false)
}

func TestCheckWritesDefaultTheirTimes(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	given := now.Add(-time.Hour)

	rt, err := CheckRefreshToken(RefreshToken{Hash: "h", UserID: "u", Family: "f"}, now)
	if err != nil || !rt.CreatedAt.Equal(now) {
		t.Errorf("CheckRefreshToken = %+v, %v", rt, err)
	}
	if rt, _ := CheckRefreshToken(RefreshToken{Hash: "h", UserID: "u", Family: "f", CreatedAt: given}, now); !rt.CreatedAt.Equal(given) {
		t.Errorf("CheckRefreshToken kept CreatedAt %v, want %v", rt.CreatedAt, given)
	}
	for _, bad := range []RefreshToken{{UserID: "u", Family: "f"}, {Hash: "h", Family: "f"}, {Hash: "h", UserID: "u"}} {
		_, err := CheckRefreshToken(bad, now)
		wantChecked(t, "CheckRefreshToken", err, false)
	}

	k, err := CheckAccessKey(AccessKey{ID: "k", UserID: "u"}, now)
	if err != nil || k.SecretEnc == nil || !k.CreatedAt.Equal(now) {
		t.Errorf("CheckAccessKey = %+v, %v", k, err)
	}
	for _, bad := range []AccessKey{{UserID: "u"}, {ID: "k"}} {
		_, err := CheckAccessKey(bad, now)
		wantChecked(t, "CheckAccessKey", err, false)
	}

	u, err := CheckUpload(Upload{ID: "u", Bucket: "b", Key: "k", Size: 1, PartSize: 1}, now)
	if err != nil || !u.CreatedAt.Equal(now) {
		t.Errorf("CheckUpload = %+v, %v", u, err)
	}
	for _, bad := range []Upload{{Bucket: "b", Key: "k"}, {ID: "u", Key: "k"}, {ID: "u", Bucket: "b"},
		{ID: "u", Bucket: "b", Key: "k", Size: -1}, {ID: "u", Bucket: "b", Key: "k", PartSize: -1}} {
		_, err := CheckUpload(bad, now)
		wantChecked(t, "CheckUpload", err, false)
	}

	p, err := CheckPart(Part{UploadID: "u", Number: MaxPartNumber, BlobKey: "x"}, now)
	if err != nil || !p.ModTime.Equal(now) {
		t.Errorf("CheckPart = %+v, %v", p, err)
	}
	for _, bad := range []Part{{Number: 1, BlobKey: "x"}, {UploadID: "u", Number: 0, BlobKey: "x"},
		{UploadID: "u", Number: MaxPartNumber + 1, BlobKey: "x"}, {UploadID: "u", Number: 1, Size: -1, BlobKey: "x"}, {UploadID: "u", Number: 1}} {
		_, err := CheckPart(bad, now)
		wantChecked(t, "CheckPart", err, false)
	}
	wantChecked(t, "CheckBackendCompletion", CheckBackendCompletion(Object{Size: -1}), false)
	wantChecked(t, "CheckBackendCompletion", CheckBackendCompletion(Object{}), true)

	g, err := CheckKMSKeyGrant(KMSKeyGrant{Key: "alias/k", UserID: "u"}, now)
	if err != nil || !g.CreatedAt.Equal(now) {
		t.Errorf("CheckKMSKeyGrant = %+v, %v", g, err)
	}
	for _, bad := range []KMSKeyGrant{{Key: "a key", UserID: "u"}, {Key: "", UserID: "u"}, {Key: "k"}} {
		_, err := CheckKMSKeyGrant(bad, now)
		wantChecked(t, "CheckKMSKeyGrant", err, false)
	}
}

func TestCheckInviteAndShare(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	exp := now.Add(time.Hour)
	inv, err := CheckInvite(Invite{ID: "i", Hash: "h", Uses: 3, UsesLeft: 1, Revoked: true, ExpiresAt: exp}, now)
	if err != nil || inv.UsesLeft != 3 || inv.Revoked || !inv.CreatedAt.Equal(now) {
		t.Errorf("CheckInvite = %+v, %v", inv, err)
	}
	for _, bad := range []Invite{{Hash: "h", Uses: 1, ExpiresAt: exp}, {ID: "i", Uses: 1, ExpiresAt: exp},
		{ID: "i", Hash: "h", ExpiresAt: exp}, {ID: "i", Hash: "h", Uses: 1}} {
		_, err := CheckInvite(bad, now)
		wantChecked(t, "CheckInvite", err, false)
	}

	sh, err := CheckShare(Share{ID: "s", Hash: "h", OwnerID: "u", Bucket: "b", ExpiresAt: exp, Downloads: 4, Revoked: true, LastAccess: now}, now)
	if err != nil || sh.Downloads != 0 || sh.Revoked || !sh.LastAccess.IsZero() || !sh.CreatedAt.Equal(now) {
		t.Errorf("CheckShare = %+v, %v", sh, err)
	}
	ok := Share{ID: "s", Hash: "h", OwnerID: "u", Bucket: "b", ExpiresAt: exp}
	for _, f := range []func(*Share){
		func(s *Share) { s.ID = "" }, func(s *Share) { s.Hash = "" }, func(s *Share) { s.OwnerID = "" },
		func(s *Share) { s.Bucket = "" }, func(s *Share) { s.MaxDownloads = -1 }, func(s *Share) { s.ExpiresAt = time.Time{} },
	} {
		bad := ok
		f(&bad)
		_, err := CheckShare(bad, now)
		wantChecked(t, "CheckShare", err, false)
	}
	wantChecked(t, "CheckShareExpiry zero", CheckShareExpiry(time.Time{}), false)
	d := ShareDownload{ShareID: "s", Client: "c", Key: "k", Until: exp}
	wantChecked(t, "CheckShareDownload", CheckShareDownload(d), true)
	for _, f := range []func(*ShareDownload){
		func(d *ShareDownload) { d.ShareID = "" }, func(d *ShareDownload) { d.Client = "" },
		func(d *ShareDownload) { d.Key = "" }, func(d *ShareDownload) { d.Until = time.Time{} },
	} {
		bad := d
		f(&bad)
		wantChecked(t, "CheckShareDownload", CheckShareDownload(bad), false)
	}
}

func TestCheckStaging(t *testing.T) {
	ok := Staging{BlobKey: "x", OwnerID: "u", Bytes: 10, Credit: 4}
	for _, c := range []struct {
		name string
		s    Staging
		min  int64
		ok   bool
	}{
		{"ok", ok, 5, true},
		{"min is bytes", ok, 10, true},
		{"a part's", Staging{BlobKey: "x", OwnerID: "u", UploadID: "up", Bytes: 1}, 0, true},
		{"no blob", Staging{OwnerID: "u"}, 0, false},
		{"no owner", Staging{BlobKey: "x"}, 0, false},
		{"declared", Staging{BlobKey: "x", OwnerID: "u", Declared: true}, 0, false},
		{"negative bytes", Staging{BlobKey: "x", OwnerID: "u", Bytes: -1}, 0, false},
		{"negative min", ok, -1, false},
		{"min above bytes", ok, 11, false},
		{"a part replacing an object", Staging{BlobKey: "x", OwnerID: "u", UploadID: "up", Key: "k"}, 0, false},
	} {
		s, err := CheckStaging(c.s, c.min)
		wantChecked(t, c.name, err, c.ok)
		if err == nil && s.Credit != 0 {
			t.Errorf("%s: credit %d, want 0 (Stage computes it)", c.name, s.Credit)
		}
	}
}

func TestCheckOthers(t *testing.T) {
	for _, c := range []struct {
		l  UserLimits
		ok bool
	}{
		{UserLimits{Requests: 1, Window: time.Second}, true},
		{UserLimits{Requests: -1, Window: time.Second}, false},
		{UserLimits{Bytes: -1, Window: time.Second}, false},
		{UserLimits{Requests: 1, Window: time.Second - 1}, false},
	} {
		wantChecked(t, "CheckUserLimits", CheckUserLimits(c.l), c.ok)
	}
	for _, c := range []struct {
		fp string
		ok bool
	}{{"f", true}, {strings.Repeat("f", 128), true}, {"", false}, {strings.Repeat("f", 129), false}} {
		wantChecked(t, "CheckKeyFingerprint", CheckKeyFingerprint(c.fp), c.ok)
	}
	for tb, ok := range map[EnvelopeTable]bool{EnvelopeObjects: true, EnvelopeObjectParts: true, EnvelopeUploadParts: true, -1: false, 3: false} {
		wantChecked(t, "CheckEnvelopeTable", CheckEnvelopeTable(tb), ok)
	}
	cursor := EnvelopeRef{Table: EnvelopeObjectParts, PartsID: 3}.Encode()
	for _, c := range []struct {
		j  EncryptionJob
		ok bool
	}{
		{EncryptionJob{State: JobRunning, Phase: EnvelopeObjects}, true},
		{EncryptionJob{State: JobDone, Phase: EnvelopeObjectParts, Cursor: cursor}, true},
		{EncryptionJob{State: "paused", Phase: EnvelopeObjects}, false},
		{EncryptionJob{State: JobRunning, Phase: 3}, false},
		{EncryptionJob{State: JobRunning, Phase: EnvelopeObjects, Cursor: cursor}, false},
	} {
		wantChecked(t, "CheckJobSave", CheckJobSave(c.j), c.ok)
	}
}

func TestPage(t *testing.T) {
	for _, c := range []struct {
		n, limit, want int
		more           bool
	}{{0, 2, 0, false}, {2, 2, 2, false}, {3, 2, 2, true}} {
		got, more := Page(make([]int, c.n), c.limit)
		if len(got) != c.want || more != c.more {
			t.Errorf("Page(%d items, %d) = %d, %v", c.n, c.limit, len(got), more)
		}
	}
}

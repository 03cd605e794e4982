package meta

import (
	"slices"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func TestCannedACL(t *testing.T) {
	own := Grant{Type: GranteeUser, ID: "w", Permission: PermFullControl}
	grp := func(uri string, p Permission) Grant { return Grant{Type: GranteeGroup, URI: uri, Permission: p} }
	tests := []struct {
		name              string
		owner, bucketOwns string
		want              []Grant
	}{
		{CannedPrivate, "w", "b", []Grant{own}},
		{CannedPublicRead, "w", "b", []Grant{own, grp(AllUsers, PermRead)}},
		{CannedPublicReadWrite, "w", "b", []Grant{own, grp(AllUsers, PermRead), grp(AllUsers, PermWrite)}},
		{CannedAuthenticatedRead, "w", "b", []Grant{own, grp(AuthenticatedUsers, PermRead)}},
		{CannedLogDeliveryWrite, "w", "b", []Grant{own, grp(LogDelivery, PermWrite), grp(LogDelivery, PermReadACP)}},
		{CannedBucketOwnerRead, "w", "b", []Grant{own, {Type: GranteeUser, ID: "b", Permission: PermRead}}},
		{CannedBucketOwnerFullControl, "w", "b", []Grant{own, {Type: GranteeUser, ID: "b", Permission: PermFullControl}}},
		{CannedBucketOwnerFullControl, "w", "w", []Grant{own}}, // a bucket's own, or the owner writing
	}
	for _, tc := range tests {
		got, err := CannedACL(tc.name, tc.owner, tc.bucketOwns)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("CannedACL(%s, %s, %s) = %+v, %v; want %+v", tc.name, tc.owner, tc.bucketOwns, got, err, tc.want)
		}
		if err := CheckGrants(got); err != nil {
			t.Errorf("CannedACL(%s) fails CheckGrants: %v", tc.name, err)
		}
	}
	if _, err := CannedACL("aws-exec-read", "w", "b"); !errcode.Is(err, errcode.InvalidArgument) {
		t.Errorf("aws-exec-read: %v", err)
	}
}

func TestAllows(t *testing.T) {
	grants := []Grant{
		{Type: GranteeUser, ID: "bob", Permission: PermRead},
		{Type: GranteeUser, ID: "carol", Permission: PermFullControl},
		{Type: GranteeGroup, URI: AuthenticatedUsers, Permission: PermReadACP},
		{Type: GranteeGroup, URI: AllUsers, Permission: PermWrite},
		{Type: GranteeGroup, URI: LogDelivery, Permission: PermRead},
	}
	tests := []struct {
		who  string
		p    Permission
		want bool
	}{
		{"bob", PermRead, true}, {"bob", PermWriteACP, false},
		{"carol", PermWriteACP, true}, {"carol", PermRead, true},
		{"dave", PermReadACP, true}, {"", PermReadACP, false}, // AuthenticatedUsers: signed only
		{"", PermWrite, true}, {"dave", PermWrite, true}, // AllUsers: anyone
		{"", PermRead, false}, {"dave", PermRead, false}, // LogDelivery grants no one
	}
	for _, tc := range tests {
		if got := Allows(grants, Grantee{UserID: tc.who}, tc.p); got != tc.want {
			t.Errorf("Allows(%q, %s) = %v, want %v", tc.who, tc.p, got, tc.want)
		}
	}
}

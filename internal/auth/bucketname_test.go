package auth

import (
	"context"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/object"
)

// TestDefaultBucketNames: a new user's bucket is named after the email's
// local part, and every candidate is a valid S3 bucket name.
func TestDefaultBucketNames(t *testing.T) {
	const id = "1f0e980c1ba51831aabbccddeeff0011"
	for _, tc := range []struct {
		email, want string // want: the first candidate
	}{
		{"jane@example.com", "jane"},
		{"Jane.Doe+work@example.com", "jane.doe-work"},
		{"j_d@example.com", "j-d"},
		{"a..b@example.com", "a.b"},
		{".-x--y-.@example.com", "x-y"},
		{"jo@example.com", "u-1f0e980c1ba51831"},          // too short
		{"192.168.1.1@example.com", "u-1f0e980c1ba51831"}, // an IP address
		{"xn--abc@example.com", "xn-abc"},
		{"sthree-x@example.com", "u-sthree-x"},            // reserved prefix
		{"foo-s3alias@example.com", "u-1f0e980c1ba51831"}, // reserved suffix
		{"élodie@example.com", "lodie"},                   // non-ASCII dropped
		{"日本@example.com", "u-1f0e980c1ba51831"},          // nothing left
		{strings.Repeat("long.", 30) + "@x.com", "long.long.long.long.long.long.long.long.long.long"}, // cut at 50
	} {
		names := DefaultBucketNames(tc.email, id)
		if names[0] != tc.want {
			t.Errorf("%q: first name %q, want %q", tc.email, names[0], tc.want)
		}
		if last := names[len(names)-1]; last != "u-1f0e980c1ba51831" {
			t.Errorf("%q: last name %q, want the ID's", tc.email, last)
		}
		for _, n := range names {
			if err := object.ValidBucketName(n); err != nil {
				t.Errorf("%q: candidate %q: %v", tc.email, n, err)
			}
		}
	}
}

// TestSignupBucketNameTaken: a second "jane" gets the name with a piece of
// its ID; a bucket someone created under the first name is skipped too;
// a taken email is still "an account with this email exists".
func TestSignupBucketNameTaken(t *testing.T) {
	s, _ := newTestService(t, nil)
	ctx := context.Background()
	u1, b1, err := s.Signups.Signup(ctx, "jane@example.com", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if b1.Name != "jane" {
		t.Errorf("first jane's bucket %q, want jane", b1.Name)
	}
	u2, b2, err := s.Signups.Signup(ctx, "jane@other.example", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if want := "jane-" + u2.ID[:8]; b2.Name != want {
		t.Errorf("second jane's bucket %q, want %q", b2.Name, want)
	}
	if u1.ID == u2.ID {
		t.Fatal("same user twice")
	}
	_, _, err = s.Signups.Signup(ctx, "jane@example.com", "another password")
	wantRefusal(t, err, errcode.AlreadyExists, "", "signup with a taken email")
}

// FuzzDefaultBucketNames: whatever the email, every candidate is a valid
// bucket name, and the last is the ID's.
func FuzzDefaultBucketNames(f *testing.F) {
	for _, s := range []string{"jane@example.com", "Jane.Doe+x@example.com", "..@x", "192.168.0.1@x", "xn--a@x", "a-s3alias@x", "日本@x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, email string) {
		names := DefaultBucketNames(email, "0123456789abcdef0123456789abcdef")
		for _, n := range names {
			if err := object.ValidBucketName(n); err != nil {
				t.Fatalf("%q: candidate %q: %v", email, n, err)
			}
		}
		if names[len(names)-1] != "u-0123456789abcdef" {
			t.Fatalf("%q: last candidate %q", email, names[len(names)-1])
		}
	})
}

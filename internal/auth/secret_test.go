package auth

import "testing"

// A secret access key never starts with '-', which command lines take for
// an option (aws configure set aws_secret_access_key -…).
func TestSecretNotAnOption(t *testing.T) {
	for range 5000 {
		if s := newSecret(); len(s) != 40 || s[0] == '-' {
			t.Fatalf("secret %q", s)
		}
	}
}

package object

import "testing"

// An upload ID never starts with '-': aws s3api abort-multipart-upload
// --upload-id -1gu… takes it for an option and fails (CI saw it; 1 in 64
// IDs did).
func TestUploadIDNotAnOption(t *testing.T) {
	for range 5000 {
		if id := newUploadID(); id == "" || id[0] == '-' {
			t.Fatalf("upload ID %q", id)
		}
	}
}

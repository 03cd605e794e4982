package object

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// MaxKeyLen is the longest object key, in bytes (S3's limit).
const MaxKeyLen = 1024

// ValidKey checks an object key: 1..1024 bytes of valid UTF-8, no NUL or
// other C0 control bytes, and no "." or ".." segment (so keys map safely onto
// paths in every client).
func ValidKey(key string) error {
	switch {
	case key == "":
		return errcode.New(errcode.InvalidArgument, "key is empty")
	case len(key) > MaxKeyLen:
		return &errcode.Error{Code: errcode.InvalidArgument, Message: "key is longer than 1024 bytes",
			Detail: map[string]any{"reason": "key_too_long"}}
	case !utf8.ValidString(key):
		return errcode.New(errcode.InvalidArgument, "key is not valid UTF-8")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] == 0x7f {
			return errcode.New(errcode.InvalidArgument, "key contains a control character")
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "." || seg == ".." {
			return errcode.New(errcode.InvalidArgument, "key has a %q segment", seg)
		}
	}
	return nil
}

// ValidBucketName checks S3's bucket naming rules: 3-63 characters of
// lower-case letters, digits, '-' and '.', starting and ending with a letter
// or digit, no "..", not shaped like an IP address, no reserved prefixes or
// suffixes.
func ValidBucketName(name string) error {
	bad := func(why string) error {
		return errcode.New(errcode.InvalidArgument, "bucket name %q is invalid: %s", name, why)
	}
	if len(name) < 3 || len(name) > 63 {
		return bad("must be 3 to 63 characters")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return bad("only lower-case letters, digits, '-' and '.' are allowed")
		}
	}
	if !alnum(name[0]) || !alnum(name[len(name)-1]) {
		return bad("must start and end with a letter or digit")
	}
	if strings.Contains(name, "..") || strings.Contains(name, ".-") || strings.Contains(name, "-.") {
		return bad("no adjacent punctuation")
	}
	if looksLikeIPv4(name) {
		return bad("must not look like an IP address")
	}
	for _, p := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(name, p) {
			return bad("reserved prefix")
		}
	}
	for _, s := range []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3"} {
		if strings.HasSuffix(name, s) {
			return bad("reserved suffix")
		}
	}
	return nil
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

func looksLikeIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 {
			return false
		}
		for i := 0; i < len(p); i++ {
			if p[i] < '0' || p[i] > '9' {
				return false
			}
		}
	}
	return true
}

// MaxMetadataSize bounds user metadata (names + values), like S3's 2 KiB.
const MaxMetadataSize = 2048

// StandardMetadataPrefix names, in an object's Metadata, the standard
// HTTP headers S3 keeps with an object besides Content-Type
// (Cache-Control, Content-Disposition, Content-Encoding, Content-Language,
// Expires): StandardMetadataPrefix + the lower-case header name. They
// travel with the metadata (uploads, copies, versions) without a column of
// their own; the S3 API refuses user metadata under this prefix, answers
// the entries as their headers, and UserMetadata leaves them out.
const StandardMetadataPrefix = "coffer-std-"

// MaxStandardMetadataSize bounds the standard headers kept (values in
// all), apart from the user metadata's 2 KiB, as S3 counts them.
const MaxStandardMetadataSize = 8192

// UserMetadata is m without the standard headers kept in it (a new map,
// nil if none is left).
func UserMetadata(m map[string]string) map[string]string {
	var u map[string]string
	for k, v := range m {
		if !strings.HasPrefix(k, StandardMetadataPrefix) {
			if u == nil {
				u = make(map[string]string, len(m))
			}
			u[k] = v
		}
	}
	return u
}

// ValidMetadata checks user metadata: non-empty UTF-8 names, UTF-8
// values, MaxMetadataSize bytes in all (TooLarge with Detail["reason"]
// "metadata_too_large": S3's MetadataTooLarge); the standard headers in
// it, MaxStandardMetadataSize bytes of values.
func ValidMetadata(m map[string]string) error {
	n, std := 0, 0
	for k, v := range m {
		if k == "" || !utf8.ValidString(k) || !utf8.ValidString(v) {
			return errcode.New(errcode.InvalidArgument, "metadata names and values must be non-empty UTF-8")
		}
		if strings.HasPrefix(k, StandardMetadataPrefix) {
			std += len(v)
		} else {
			n += len(k) + len(v)
		}
	}
	if n > MaxMetadataSize {
		return &errcode.Error{Code: errcode.TooLarge, Message: fmt.Sprintf("user metadata exceeds %d bytes", MaxMetadataSize),
			Detail: map[string]any{"reason": "metadata_too_large"}}
	}
	if std > MaxStandardMetadataSize {
		return &errcode.Error{Code: errcode.TooLarge, Message: fmt.Sprintf("the standard headers kept with an object exceed %d bytes", MaxStandardMetadataSize),
			Detail: map[string]any{"reason": "metadata_too_large"}}
	}
	return nil
}

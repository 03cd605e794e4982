package meta

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Tags (S3 tagging, issue 20)
//
// An object version carries its tag set in its row (Object.Tags), so a
// GET that reads the row has its tags with no second read; a bucket's tag
// set is a column of its row that only GetBucketTags reads. A tag set is
// replaced as a whole; an empty one is no tag set.

// Tag is one tag of an object version or a bucket.
type Tag struct {
	Key, Value string
}

// The limits of a tag set (S3's).
const (
	MaxObjectTags  = 10  // tags of an object version
	MaxBucketTags  = 50  // tags of a bucket
	MaxTagKeyLen   = 128 // Unicode characters
	MaxTagValueLen = 256 // Unicode characters
)

// ErrInvalidTag is CheckTags' error: InvalidArgument with Detail["reason"]
// = "invalid_tag" (S3's InvalidTag).
func ErrInvalidTag(format string, args ...any) error {
	return &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf(format, args...),
		Detail: map[string]any{"reason": "invalid_tag"}}
}

// ErrNoTagSet is GetBucketTags' error for a bucket without tags: NotFound
// with Detail["resource"] = "tag_set" (S3's NoSuchTagSet).
func ErrNoTagSet(bucket string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: fmt.Sprintf("bucket %q has no tag set", bucket),
		Detail: map[string]any{"resource": "tag_set"}}
}

// ErrMarkerHasNoTags is SetObjectTags' error for a version that is a
// delete marker: MethodNotAllowed (S3's 405) with Detail["delete_marker"]
// and Detail["version_id"].
func ErrMarkerHasNoTags(versionID string) error {
	return &errcode.Error{Code: errcode.MethodNotAllowed, Message: "The specified method is not allowed against this resource.",
		Detail: map[string]any{"delete_marker": true, "version_id": versionID}}
}

// CheckTags checks a tag set as S3 does: at most max tags; each key 1 to
// MaxTagKeyLen Unicode characters, each value at most MaxTagValueLen;
// only letters, digits, white space and + - = . _ : / @ (valid UTF-8);
// keys unique, none starting with "aws:" (reserved). ErrTagCount for too
// many tags, ErrInvalidTag otherwise, with S3's own messages (the
// messages AWS answers, which clients and conformance suites compare).
func CheckTags(tags []Tag, max int) error {
	if len(tags) > max {
		return ErrTagCount(max)
	}
	seen := make(map[string]bool, len(tags))
	for _, t := range tags {
		if n := utf8.RuneCountInString(t.Key); n == 0 || n > MaxTagKeyLen || !tagText(t.Key) {
			return ErrInvalidTag("The TagKey you have provided is invalid")
		}
		if utf8.RuneCountInString(t.Value) > MaxTagValueLen || !tagText(t.Value) {
			return ErrInvalidTag("The TagValue you have provided is invalid")
		}
		if strings.HasPrefix(strings.ToLower(t.Key), "aws:") {
			return ErrInvalidTag("Your TagKey cannot be prefixed with aws:")
		}
		if seen[t.Key] {
			return ErrInvalidTag("Cannot provide multiple Tags with the same key")
		}
		seen[t.Key] = true
	}
	return nil
}

// ErrTagCount is CheckTags' error for a set of more than max tags:
// InvalidArgument with Detail["reason"] = "tag_count" (S3 answers
// BadRequest here, not InvalidTag), in S3's words for an object's or a
// bucket's set.
func ErrTagCount(max int) error {
	msg := fmt.Sprintf("Object tags cannot be greater than %d", max)
	if max == MaxBucketTags {
		msg = fmt.Sprintf("Bucket tag count cannot be greater than %d", max)
	}
	return &errcode.Error{Code: errcode.InvalidArgument, Message: msg, Detail: map[string]any{"reason": "tag_count"}}
}

// tagText reports whether s holds only what a tag key or value may.
func tagText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsNumber(r) && !unicode.IsSpace(r) && !strings.ContainsRune("+-=._:/@", r) {
			return false
		}
	}
	return true
}

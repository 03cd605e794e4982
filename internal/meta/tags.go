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
// keys unique, none starting with "aws:" (reserved). ErrInvalidTag
// otherwise.
func CheckTags(tags []Tag, max int) error {
	if len(tags) > max {
		return ErrInvalidTag("a tag set holds at most %d tags", max)
	}
	seen := make(map[string]bool, len(tags))
	for _, t := range tags {
		switch n := utf8.RuneCountInString(t.Key); {
		case n == 0:
			return ErrInvalidTag("a tag key must not be empty")
		case n > MaxTagKeyLen:
			return ErrInvalidTag("the tag key %q is longer than %d characters", t.Key, MaxTagKeyLen)
		}
		if utf8.RuneCountInString(t.Value) > MaxTagValueLen {
			return ErrInvalidTag("the value of tag %q is longer than %d characters", t.Key, MaxTagValueLen)
		}
		if !tagText(t.Key) || !tagText(t.Value) {
			return ErrInvalidTag("the tag %q holds a character a tag may not hold", t.Key)
		}
		if strings.HasPrefix(strings.ToLower(t.Key), "aws:") {
			return ErrInvalidTag("the tag key %q uses the reserved prefix aws:", t.Key)
		}
		if seen[t.Key] {
			return ErrInvalidTag("the tag key %q appears twice", t.Key)
		}
		seen[t.Key] = true
	}
	return nil
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

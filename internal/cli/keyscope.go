package cli

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// scopeFlags are the options that scope a new key: the simple form
// (--bucket, --prefix, --read-only | --write-only) or --policy FILE, and
// --expires.
type scopeFlags struct {
	bucket, prefix, expires, policy *string
	readOnly, writeOnly             *bool
}

func (f *scopeFlags) register(fs *flag.FlagSet) {
	f.bucket = fs.String("bucket", "", "create: limit the key to this bucket")
	f.prefix = fs.String("prefix", "", "create: limit the key to the keys under this prefix of --bucket")
	f.readOnly = fs.Bool("read-only", false, "create: the key may only read and list")
	f.writeOnly = fs.Bool("write-only", false, "create: the key may only write (no reads, no deletes)")
	f.expires = fs.String("expires", "", "create: the key stops working after this long (30d, 12h) or at this date (2026-12-31, RFC 3339)")
	f.policy = fs.String("policy", "", "create: a file holding the key's inline IAM policy (instead of --bucket/--prefix/--read-only/--write-only)")
}

// set reports whether any scope flag was given.
func (f *scopeFlags) set() bool {
	return *f.bucket != "" || *f.prefix != "" || *f.readOnly || *f.writeOnly || *f.expires != "" || *f.policy != ""
}

// options returns the key options the flags ask for. A key with a bucket
// (or none, with --read-only or --write-only) is scoped; --read-only and
// --write-only are exclusive, and read-write is the default of a scoped
// key.
func (f *scopeFlags) options(name string, now time.Time) (auth.KeyOptions, error) {
	o := auth.KeyOptions{Name: name}
	switch {
	case *f.readOnly && *f.writeOnly:
		return o, usageError{errorf("--read-only and --write-only exclude each other (neither: read-write)")}
	case *f.policy != "" && (*f.bucket != "" || *f.prefix != "" || *f.readOnly || *f.writeOnly):
		return o, usageError{errorf("--policy excludes --bucket, --prefix, --read-only and --write-only")}
	case *f.prefix != "" && *f.bucket == "":
		return o, usageError{errorf("--prefix needs --bucket")}
	case *f.policy != "":
		doc, err := os.ReadFile(*f.policy)
		if err != nil {
			return o, err
		}
		o.Scope.Policy = string(doc)
	case *f.bucket != "" || *f.readOnly || *f.writeOnly:
		if *f.bucket != "" {
			if err := object.ValidBucketName(*f.bucket); err != nil {
				return o, usageError{errorf("--bucket: %v", err)}
			}
		}
		o.Scope = meta.KeyScope{Bucket: *f.bucket, Prefix: *f.prefix, Access: meta.AccessReadWrite}
		if *f.readOnly {
			o.Scope.Access = meta.AccessRead
		} else if *f.writeOnly {
			o.Scope.Access = meta.AccessWrite
		}
	}
	if *f.expires != "" {
		t, err := parseExpiry(*f.expires, now)
		if err != nil {
			return o, usageError{err}
		}
		o.ExpiresAt = t
	}
	return o, nil
}

// parseExpiry reads --expires: a duration (30d, 12h, 90m, 45s) from now,
// or a date (2026-12-31, midnight UTC) or an RFC 3339 time.
func parseExpiry(s string, now time.Time) (time.Time, error) {
	if len(s) < 2 {
		return time.Time{}, errorf("--expires %q: give a duration (30d, 12h, 90m) or a date (2026-12-31 or RFC 3339)", s)
	}
	if n, unit := s[:len(s)-1], s[len(s)-1]; strings.IndexByte("dhms", unit) >= 0 {
		if v, err := strconv.ParseInt(n, 10, 64); err == nil {
			per := map[byte]time.Duration{'d': 24 * time.Hour, 'h': time.Hour, 'm': time.Minute, 's': time.Second}[unit]
			if v <= 0 || v > int64(100*365*24*time.Hour/per) {
				return time.Time{}, errorf("--expires %s: the duration must be positive and at most 100 years", s)
			}
			return now.Add(time.Duration(v) * per), nil
		}
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errorf("--expires %s: give a duration (30d, 12h, 90m) or a date (2026-12-31 or RFC 3339)", s)
}

// describeScope is a key's scope in one line.
func describeScope(s meta.KeyScope) string {
	switch {
	case !s.Scoped():
		return "all (as the user)"
	case s.Policy != "":
		return "inline policy"
	}
	where := "every bucket"
	if s.Bucket != "" {
		where = s.Bucket + "/" + s.Prefix + "*"
	}
	return fmt.Sprintf("%s %s", s.Access, where)
}

// describeExpiry is a key's expiry in one line.
func describeExpiry(t, now time.Time) string {
	switch {
	case t.IsZero():
		return "never"
	case !now.Before(t):
		return t.UTC().Format(time.RFC3339) + " (expired)"
	}
	return t.UTC().Format(time.RFC3339)
}

package meta

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/xml"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Lifecycle (S3 lifecycle rules, issue 20; docs/lifecycle.md)
//
// A bucket's lifecycle configuration is S3's LifecycleConfiguration: the
// type below is its XML schema (the S3 API decodes a body into it and
// encodes it back), kept as JSON in a column of the bucket's row.
// CheckLifecycle is the one check of a configuration, and the rule
// matcher (LifecycleRule.Matches, CurrentExpiry, NoncurrentExpiry,
// AbortAfter) is the one reading of it: the worker that applies the rules
// and the x-amz-expiration header both use it.

// The limits of a lifecycle configuration (S3's).
const (
	MaxLifecycleRules         = 1000
	MaxLifecycleRuleID        = 255
	MaxNewerNoncurrentVersion = 100
)

// Lifecycle is a bucket's lifecycle configuration.
type Lifecycle struct {
	XMLName xml.Name        `xml:"LifecycleConfiguration" json:"-"`
	Rules   []LifecycleRule `xml:"Rule"`
}

// LifecycleRule is one rule. A field that S3 makes optional is a pointer
// (nil: absent), so that what a client sent is told from a zero value.
type LifecycleRule struct {
	ID     string           `xml:"ID,omitempty"`
	Status string           `xml:"Status"` // "Enabled" or "Disabled"
	Filter *LifecycleFilter `xml:"Filter,omitempty"`
	// Prefix is the legacy filter (a rule's own Prefix, without Filter).
	Prefix                         *string                  `xml:"Prefix,omitempty"`
	Expiration                     *LifecycleExpiration     `xml:"Expiration,omitempty"`
	NoncurrentVersionExpiration    *NoncurrentExpiration    `xml:"NoncurrentVersionExpiration,omitempty"`
	AbortIncompleteMultipartUpload *AbortIncompleteUpload   `xml:"AbortIncompleteMultipartUpload,omitempty"`
	Transition                     *LifecycleNotImplemented `xml:"Transition,omitempty" json:",omitempty"`
	NoncurrentVersionTransition    *LifecycleNotImplemented `xml:"NoncurrentVersionTransition,omitempty" json:",omitempty"`
}

// LifecycleNotImplemented holds an element Coffer refuses as a whole
// (transitions: there are no storage classes), whatever it holds.
type LifecycleNotImplemented struct {
	Inner string `xml:",innerxml" json:"-"`
}

// LifecycleFilter selects the versions a rule applies to: at most one of
// its fields (an empty Filter: every object).
type LifecycleFilter struct {
	Prefix                *string       `xml:"Prefix,omitempty"`
	Tag                   *Tag          `xml:"Tag,omitempty"`
	ObjectSizeGreaterThan *int64        `xml:"ObjectSizeGreaterThan,omitempty"`
	ObjectSizeLessThan    *int64        `xml:"ObjectSizeLessThan,omitempty"`
	And                   *LifecycleAnd `xml:"And,omitempty"`
}

// LifecycleAnd is a conjunction of at least two predicates.
type LifecycleAnd struct {
	Prefix                *string `xml:"Prefix,omitempty"`
	Tags                  []Tag   `xml:"Tag"`
	ObjectSizeGreaterThan *int64  `xml:"ObjectSizeGreaterThan,omitempty"`
	ObjectSizeLessThan    *int64  `xml:"ObjectSizeLessThan,omitempty"`
}

// LifecycleExpiration expires current versions: exactly one of Days,
// Date (midnight UTC) or ExpiredObjectDeleteMarker.
type LifecycleExpiration struct {
	Days                      *int    `xml:"Days,omitempty"`
	Date                      *string `xml:"Date,omitempty"`
	ExpiredObjectDeleteMarker *bool   `xml:"ExpiredObjectDeleteMarker,omitempty"`
}

// NoncurrentExpiration removes noncurrent versions NoncurrentDays after
// they became noncurrent, beyond the NewerNoncurrentVersions newest.
type NoncurrentExpiration struct {
	NoncurrentDays          *int `xml:"NoncurrentDays,omitempty"`
	NewerNoncurrentVersions *int `xml:"NewerNoncurrentVersions,omitempty"`
}

// AbortIncompleteUpload aborts multipart uploads DaysAfterInitiation after
// they were created.
type AbortIncompleteUpload struct {
	DaysAfterInitiation *int `xml:"DaysAfterInitiation,omitempty"`
}

// Lifecycles keeps the buckets' lifecycle configurations and the state of
// the worker that applies them (one run at a time, under a lease, with a
// cursor it resumes from).
type Lifecycles interface {
	// GetBucketLifecycle returns a bucket's configuration: NotFound if the
	// bucket is missing, ErrNoLifecycle if it has none.
	GetBucketLifecycle(ctx context.Context, bucket string) (Lifecycle, error)
	// SetBucketLifecycle replaces a native bucket's configuration (nil:
	// none): CheckLifecycle's errors; NotFound if the bucket is missing;
	// Conflict for a gateway bucket.
	SetBucketLifecycle(ctx context.Context, bucket string, lc *Lifecycle) error
	// ListLifecycleBuckets returns up to limit buckets with a
	// configuration, by name, after the name after.
	ListLifecycleBuckets(ctx context.Context, after string, limit int) ([]BucketLifecycle, error)
	// AcquireLifecycleRun leases the worker's run to owner until until,
	// if its lease is free, expired at now, or owner's already, and
	// returns it; ok false if another holds it.
	AcquireLifecycleRun(ctx context.Context, owner string, until, now time.Time) (r LifecycleRun, ok bool, err error)
	// SaveLifecycleRun records r (Cursor, StartedAt, FinishedAt) and
	// extends the lease to until if owner still holds it at now; else
	// ErrJobLeaseLost("lifecycle") and nothing changes.
	SaveLifecycleRun(ctx context.Context, r LifecycleRun, owner string, until, now time.Time) error
}

// BucketLifecycle is a bucket with its lifecycle configuration.
type BucketLifecycle struct {
	Bucket     string
	Versioning Versioning
	Lifecycle  Lifecycle
}

// LifecycleRun is the state of the lifecycle worker (one per store).
type LifecycleRun struct {
	// Cursor is where the current run is (the worker's own encoding; ""
	// = no run in progress).
	Cursor string
	// StartedAt is when the current run began, FinishedAt when the last
	// one ended (zero: never).
	StartedAt, FinishedAt time.Time
	LeaseOwner            string
	LeaseUntil            time.Time
}

// LifecycleRunName names the lease of the lifecycle worker.
const LifecycleRunName = "lifecycle"

// ErrNoLifecycle is GetBucketLifecycle's error for a bucket without a
// configuration: NotFound with Detail["resource"] = "lifecycle" (S3's
// NoSuchLifecycleConfiguration).
func ErrNoLifecycle(bucket string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: fmt.Sprintf("bucket %q has no lifecycle configuration", bucket),
		Detail: map[string]any{"resource": "lifecycle"}}
}

// lifecycleErr is a refused configuration: code with Detail["reason"] =
// reason ("malformed_xml", "invalid_request" or "" for InvalidArgument).
func lifecycleErr(code errcode.Code, reason, format string, args ...any) error {
	e := &errcode.Error{Code: code, Message: fmt.Sprintf(format, args...)}
	if reason != "" {
		e.Detail = map[string]any{"reason": reason}
	}
	return e
}

func malformed(format string, args ...any) error {
	return lifecycleErr(errcode.InvalidArgument, "malformed_xml", format, args...)
}

func invalidRequest(format string, args ...any) error {
	return lifecycleErr(errcode.InvalidArgument, "invalid_request", format, args...)
}

func invalidArgument(format string, args ...any) error {
	return lifecycleErr(errcode.InvalidArgument, "", format, args...)
}

// CheckLifecycle checks a configuration as S3 does, and gives a rule
// without an ID one (as S3 does). Its errors are InvalidArgument with
// Detail["reason"] "malformed_xml" (S3's MalformedXML: the schema is
// broken), "invalid_request" (InvalidRequest) or none (InvalidArgument: a
// value out of range), or NotImplemented (transitions):
//   - 1 to MaxLifecycleRules rules (MalformedXML without any,
//     InvalidRequest above the limit);
//   - IDs unique and at most MaxLifecycleRuleID characters
//     (InvalidArgument);
//   - Status Enabled or Disabled (MalformedXML);
//   - a Filter or the legacy Prefix, exactly one (MalformedXML; AWS:
//     "Filter is required if the LifecycleRule does not contain a Prefix
//     element"); a Filter with
//     at most one of its predicates, an And with at least two
//     (MalformedXML); tags as CheckTags with unique keys; sizes not
//     negative, ObjectSizeLessThan above 0 and above
//     ObjectSizeGreaterThan (InvalidArgument);
//   - at least one action (InvalidRequest); Transition and
//     NoncurrentVersionTransition: NotImplemented;
//   - Expiration with exactly one of Days, Date, ExpiredObjectDeleteMarker
//     (MalformedXML); Days above 0, Date an ISO 8601 time at midnight UTC
//     (InvalidArgument); ExpiredObjectDeleteMarker not with a tag filter
//     (InvalidRequest);
//   - NoncurrentDays above 0 and NewerNoncurrentVersions 1 to
//     MaxNewerNoncurrentVersion (InvalidArgument);
//   - DaysAfterInitiation above 0 (InvalidArgument), not with a tag
//     filter (InvalidRequest, as AWS) nor a size filter (InvalidRequest:
//     an upload has no size yet, and a filter must not be ignored).
func CheckLifecycle(lc *Lifecycle) error {
	switch n := len(lc.Rules); {
	case n == 0:
		return malformed("a lifecycle configuration needs at least one rule")
	case n > MaxLifecycleRules:
		return invalidRequest("a lifecycle configuration holds at most %d rules", MaxLifecycleRules)
	}
	ids := make(map[string]bool, len(lc.Rules))
	for i := range lc.Rules {
		r := &lc.Rules[i]
		if r.ID == "" {
			r.ID = newRuleID()
		}
		if utf8.RuneCountInString(r.ID) > MaxLifecycleRuleID || !utf8.ValidString(r.ID) {
			return invalidArgument("ID length should not exceed allowed limit of %d", MaxLifecycleRuleID)
		}
		if ids[r.ID] {
			return invalidArgument("Rule ID must be unique. Found same ID for more than one rule")
		}
		ids[r.ID] = true
		if err := checkRule(r); err != nil {
			return err
		}
	}
	return nil
}

func newRuleID() string {
	var b [20]byte
	rand.Read(b[:])
	return strings.TrimRight(base32.StdEncoding.EncodeToString(b[:]), "=")
}

func checkRule(r *LifecycleRule) error {
	if r.Status != "Enabled" && r.Status != "Disabled" {
		return malformed("rule %q: Status must be Enabled or Disabled", r.ID)
	}
	if r.Transition != nil || r.NoncurrentVersionTransition != nil {
		return errcode.New(errcode.NotImplemented, "lifecycle transitions are not implemented by Coffer: it has no storage classes")
	}
	if r.Filter != nil && r.Prefix != nil {
		return malformed("rule %q: Filter and Prefix cannot both be given", r.ID)
	}
	if r.Filter == nil && r.Prefix == nil {
		return malformed("rule %q: a rule needs a Filter (or the legacy Prefix)", r.ID)
	}
	if err := r.Filter.check(r.ID); err != nil {
		return err
	}
	if r.Expiration == nil && r.NoncurrentVersionExpiration == nil && r.AbortIncompleteMultipartUpload == nil {
		return invalidRequest("At least one action needs to be specified in a rule")
	}
	if e := r.Expiration; e != nil {
		n := 0
		for _, set := range []bool{e.Days != nil, e.Date != nil, e.ExpiredObjectDeleteMarker != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return malformed("rule %q: Expiration takes exactly one of Days, Date and ExpiredObjectDeleteMarker", r.ID)
		}
		if e.Days != nil && *e.Days <= 0 {
			return invalidArgument("'Days' for Expiration action must be a positive integer")
		}
		if e.Date != nil {
			if _, err := ParseLifecycleDate(*e.Date); err != nil {
				return err
			}
		}
		if e.ExpiredObjectDeleteMarker != nil && r.Filter.hasTags() {
			return invalidRequest("ExpiredObjectDeleteMarker cannot be specified with object tag filters")
		}
	}
	if e := r.NoncurrentVersionExpiration; e != nil {
		if e.NoncurrentDays == nil || *e.NoncurrentDays <= 0 {
			return invalidArgument("'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer")
		}
		if v := e.NewerNoncurrentVersions; v != nil && (*v <= 0 || *v > MaxNewerNoncurrentVersion) {
			return invalidArgument("'NewerNoncurrentVersions' must be between 1 and %d", MaxNewerNoncurrentVersion)
		}
	}
	if a := r.AbortIncompleteMultipartUpload; a != nil {
		if a.DaysAfterInitiation == nil || *a.DaysAfterInitiation <= 0 {
			return invalidArgument("'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer")
		}
		if r.Filter.hasTags() || r.Filter.hasSize() {
			return invalidRequest("AbortIncompleteMultipartUpload cannot be specified with Tags or object size filters")
		}
	}
	return nil
}

// ParseLifecycleDate reads an Expiration Date: an ISO 8601 time at
// midnight UTC (InvalidArgument otherwise).
func ParseLifecycleDate(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t, err = time.Parse("2006-01-02", s)
	}
	if err != nil {
		return time.Time{}, invalidArgument("'Date' must be an ISO 8601 date")
	}
	if _, off := t.Zone(); off != 0 || t.UTC().Truncate(24*time.Hour) != t.UTC() {
		return time.Time{}, invalidArgument("'Date' must be at midnight GMT")
	}
	return t.UTC(), nil
}

func (f *LifecycleFilter) check(id string) error {
	if f == nil {
		return nil
	}
	n := 0
	for _, set := range []bool{f.Prefix != nil, f.Tag != nil, f.ObjectSizeGreaterThan != nil, f.ObjectSizeLessThan != nil, f.And != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		return malformed("rule %q: a Filter holds one of Prefix, Tag, ObjectSizeGreaterThan, ObjectSizeLessThan and And; combine them with And", id)
	}
	if f.Tag != nil {
		if err := CheckTags([]Tag{*f.Tag}, 1); err != nil {
			return err
		}
	}
	gt, lt := f.ObjectSizeGreaterThan, f.ObjectSizeLessThan
	if a := f.And; a != nil {
		n := len(a.Tags)
		for _, set := range []bool{a.Prefix != nil, a.ObjectSizeGreaterThan != nil, a.ObjectSizeLessThan != nil} {
			if set {
				n++
			}
		}
		if n < 2 {
			return malformed("rule %q: And needs at least two predicates", id)
		}
		if len(a.Tags) > MaxObjectTags {
			// InvalidTag here, not CheckTags' BadRequest (that is the
			// answer of the tagging operations).
			return ErrInvalidTag("rule %q: And holds at most %d tags", id, MaxObjectTags)
		}
		if err := CheckTags(a.Tags, MaxObjectTags); err != nil {
			return err
		}
		gt, lt = a.ObjectSizeGreaterThan, a.ObjectSizeLessThan
	}
	if gt != nil && *gt < 0 || lt != nil && *lt <= 0 {
		return invalidArgument("rule %q: ObjectSizeGreaterThan must not be negative and ObjectSizeLessThan must be above 0", id)
	}
	if gt != nil && lt != nil && *gt >= *lt {
		return invalidArgument("rule %q: ObjectSizeGreaterThan must be less than ObjectSizeLessThan", id)
	}
	return nil
}

func (f *LifecycleFilter) hasTags() bool {
	return f != nil && (f.Tag != nil || f.And != nil && len(f.And.Tags) > 0)
}

func (f *LifecycleFilter) hasSize() bool {
	return f != nil && (f.ObjectSizeGreaterThan != nil || f.ObjectSizeLessThan != nil ||
		f.And != nil && (f.And.ObjectSizeGreaterThan != nil || f.And.ObjectSizeLessThan != nil))
}

// Enabled reports whether the rule is applied.
func (r LifecycleRule) Enabled() bool { return r.Status == "Enabled" }

// prefix is the rule's key prefix ("" = every key).
func (r LifecycleRule) prefix() string {
	switch {
	case r.Prefix != nil:
		return *r.Prefix
	case r.Filter == nil:
		return ""
	case r.Filter.Prefix != nil:
		return *r.Filter.Prefix
	case r.Filter.And != nil && r.Filter.And.Prefix != nil:
		return *r.Filter.And.Prefix
	}
	return ""
}

// NeedsTags reports whether deciding the rule needs a version's tags.
func (r LifecycleRule) NeedsTags() bool { return r.Filter.hasTags() }

// Matches reports whether the rule's filter selects the key with that
// size and tags (every tag of the filter among tags, each key with its
// value). Versions only: uploads are matched by MatchesKey.
func (r LifecycleRule) Matches(key string, size int64, tags []Tag) bool {
	if !r.MatchesKey(key) {
		return false
	}
	f := r.Filter
	if f == nil {
		return true
	}
	want, gt, lt := []Tag(nil), f.ObjectSizeGreaterThan, f.ObjectSizeLessThan
	if f.Tag != nil {
		want = []Tag{*f.Tag}
	}
	if a := f.And; a != nil {
		want, gt, lt = a.Tags, a.ObjectSizeGreaterThan, a.ObjectSizeLessThan
	}
	if gt != nil && size <= *gt || lt != nil && size >= *lt {
		return false
	}
	for _, w := range want {
		found := false
		for _, t := range tags {
			if t == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// MatchesKey reports whether the rule's prefix selects key.
func (r LifecycleRule) MatchesKey(key string) bool { return strings.HasPrefix(key, r.prefix()) }

// Day is the length of a lifecycle day: 24 hours, except in tests (the
// test-only setting of docs/lifecycle.md). Day boundaries are the
// multiples of it since the zero time (midnight UTC for 24 hours).
type Day time.Duration

// Lifecycle24h is the real day.
const Lifecycle24h = Day(24 * time.Hour)

// after returns the first day boundary at or after t + n days (S3:
// "rounded to the next midnight UTC").
func (d Day) after(t time.Time, n int) time.Time {
	at := t.UTC().Add(time.Duration(n) * time.Duration(d))
	if b := at.Truncate(time.Duration(d)); !b.Equal(at) {
		return b.Add(time.Duration(d))
	}
	return at
}

// CurrentExpiry returns when the current version o (not a delete marker)
// expires by the rules of lc (the earliest enabled rule whose Expiration
// Days or Date applies), and that rule's ID; ok false if no rule expires
// it. It does not look at the clock: the caller compares.
func (lc Lifecycle) CurrentExpiry(o Object, d Day) (at time.Time, ruleID string, ok bool) {
	for _, r := range lc.Rules {
		e := r.Expiration
		if !r.Enabled() || e == nil || e.ExpiredObjectDeleteMarker != nil || !r.Matches(o.Key, o.Size, o.Tags) {
			continue
		}
		var t time.Time
		if e.Days != nil {
			t = d.after(o.ModTime, *e.Days)
		} else if e.Date != nil {
			var err error
			if t, err = ParseLifecycleDate(*e.Date); err != nil {
				continue
			}
		} else {
			continue
		}
		if !ok || t.Before(at) {
			at, ruleID, ok = t, r.ID, true
		}
	}
	return at, ruleID, ok
}

// NoncurrentExpiry returns when the noncurrent version o expires: it
// became noncurrent at since (its successor's creation) and newer
// noncurrent versions of its key are newer than it. ok false if no rule
// expires it (none applies, or it is among the NewerNoncurrentVersions
// newest).
func (lc Lifecycle) NoncurrentExpiry(o Object, since time.Time, newer int, d Day) (at time.Time, ruleID string, ok bool) {
	for _, r := range lc.Rules {
		e := r.NoncurrentVersionExpiration
		if !r.Enabled() || e == nil || e.NoncurrentDays == nil || !r.Matches(o.Key, o.Size, o.Tags) {
			continue
		}
		if e.NewerNoncurrentVersions != nil && newer < *e.NewerNoncurrentVersions {
			continue
		}
		if t := d.after(since, *e.NoncurrentDays); !ok || t.Before(at) {
			at, ruleID, ok = t, r.ID, true
		}
	}
	return at, ruleID, ok
}

// ExpiresMarker reports whether an enabled rule removes the delete marker
// at key when it is the key's only version (ExpiredObjectDeleteMarker),
// and that rule's ID.
func (lc Lifecycle) ExpiresMarker(key string) (string, bool) {
	for _, r := range lc.Rules {
		if e := r.Expiration; r.Enabled() && e != nil && e.ExpiredObjectDeleteMarker != nil && *e.ExpiredObjectDeleteMarker && r.MatchesKey(key) {
			return r.ID, true
		}
	}
	return "", false
}

// AbortAfter returns when an upload of key created at created is aborted
// by the rules (the earliest), and the rule's ID; ok false if none does.
func (lc Lifecycle) AbortAfter(key string, created time.Time, d Day) (at time.Time, ruleID string, ok bool) {
	for _, r := range lc.Rules {
		a := r.AbortIncompleteMultipartUpload
		if !r.Enabled() || a == nil || a.DaysAfterInitiation == nil || !r.MatchesKey(key) {
			continue
		}
		if t := d.after(created, *a.DaysAfterInitiation); !ok || t.Before(at) {
			at, ruleID, ok = t, r.ID, true
		}
	}
	return at, ruleID, ok
}

// NeedsTags reports whether some enabled rule filters by tags.
func (lc Lifecycle) NeedsTags() bool {
	for _, r := range lc.Rules {
		if r.Enabled() && r.NeedsTags() {
			return true
		}
	}
	return false
}

package s3api

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// Object lock (S3's WORM; docs/object-lock.md): CreateBucket with
// x-amz-bucket-object-lock-enabled, Put/GetObjectLockConfiguration
// (?object-lock), Put/GetObjectRetention (?retention),
// Put/GetObjectLegalHold (?legal-hold), the x-amz-object-lock-* headers
// of PutObject, CopyObject and CreateMultipartUpload (answered by GetObject
// and HeadObject), and x-amz-bypass-governance-retention on DeleteObject,
// DeleteObjects and PutObjectRetention. The decisions are meta's
// (meta/lock.go); bodies are parsed strictly (parseXML: MalformedXML).

// objectLockConfiguration is the body of Put/GetObjectLockConfiguration.
type objectLockConfiguration struct {
	XMLName           xml.Name  `xml:"ObjectLockConfiguration"`
	Xmlns             string    `xml:"xmlns,attr,omitempty"`
	ObjectLockEnabled string    `xml:"ObjectLockEnabled,omitempty"`
	Rule              *lockRule `xml:"Rule"`
}

type lockRule struct {
	DefaultRetention *defaultRetention `xml:"DefaultRetention"`
}

type defaultRetention struct {
	Mode  string `xml:"Mode,omitempty"`
	Days  *int   `xml:"Days"`
	Years *int   `xml:"Years"`
}

// retention is the body of Put/GetObjectRetention.
type retention struct {
	XMLName         xml.Name `xml:"Retention"`
	Xmlns           string   `xml:"xmlns,attr,omitempty"`
	Mode            string   `xml:"Mode,omitempty"`
	RetainUntilDate string   `xml:"RetainUntilDate,omitempty"`
}

// legalHold is the body of Put/GetObjectLegalHold.
type legalHold struct {
	XMLName xml.Name `xml:"LegalHold"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	Status  string   `xml:"Status"`
}

// parseLockXML is parseXML with S3's own message for a body that is not
// the one expected (AWS and the clients' suites compare it).
func parseLockXML(data []byte, v any) error {
	if err := parseXML(data, v); err != nil {
		return s3err.New(s3err.MalformedXML, "")
	}
	return nil
}

// parseLockConfiguration reads an ObjectLockConfiguration body: its
// default retention (none without a Rule). MalformedXML unless
// ObjectLockEnabled is absent or Enabled and a DefaultRetention has a
// mode and exactly one of Days and Years; a period out of range is
// meta.CheckDefaultRetention's InvalidArgument.
func parseLockConfiguration(data []byte) (meta.DefaultRetention, error) {
	var c objectLockConfiguration
	if err := parseLockXML(data, &c); err != nil {
		return meta.DefaultRetention{}, err
	}
	if c.ObjectLockEnabled != "" && c.ObjectLockEnabled != "Enabled" {
		return meta.DefaultRetention{}, s3err.New(s3err.MalformedXML, "")
	}
	if c.Rule == nil {
		return meta.DefaultRetention{}, nil
	}
	dr := c.Rule.DefaultRetention
	if dr == nil || !meta.RetentionMode(dr.Mode).Valid() || (dr.Days == nil) == (dr.Years == nil) {
		return meta.DefaultRetention{}, s3err.New(s3err.MalformedXML, "")
	}
	d := meta.DefaultRetention{Mode: meta.RetentionMode(dr.Mode)}
	if dr.Days != nil {
		d.Days = *dr.Days
	} else {
		d.Years = *dr.Years
	}
	return d, meta.CheckDefaultRetention(d)
}

// lockConfigurationOf is the ObjectLockConfiguration body of l.
func lockConfigurationOf(l meta.ObjectLock) objectLockConfiguration {
	c := objectLockConfiguration{Xmlns: s3NS, ObjectLockEnabled: "Enabled"}
	if d := l.Default; d.Mode != "" {
		dr := &defaultRetention{Mode: string(d.Mode)}
		if d.Years > 0 {
			dr.Years = &d.Years
		} else {
			dr.Days = &d.Days
		}
		c.Rule = &lockRule{DefaultRetention: dr}
	}
	return c
}

// parseRetentionDate reads a retain-until date (ISO 8601, as S3 writes
// it): InvalidArgument otherwise.
func parseRetentionDate(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(v))
	if err != nil {
		return time.Time{}, s3err.New(s3err.InvalidArgument, "The retain until date must be provided in ISO 8601 format")
	}
	return t, nil
}

// parseRetention reads a Retention body: MalformedXML unless its Mode is
// GOVERNANCE or COMPLIANCE and it has a RetainUntilDate, or it has
// neither (no retention: removing one, which needs the bypass).
func parseRetention(data []byte) (meta.Retention, error) {
	var r retention
	if err := parseLockXML(data, &r); err != nil {
		return meta.Retention{}, err
	}
	if r.Mode == "" && r.RetainUntilDate == "" {
		return meta.Retention{}, nil
	}
	if !meta.RetentionMode(r.Mode).Valid() || r.RetainUntilDate == "" {
		return meta.Retention{}, s3err.New(s3err.MalformedXML, "")
	}
	until, err := parseRetentionDate(r.RetainUntilDate)
	if err != nil {
		return meta.Retention{}, s3err.New(s3err.MalformedXML, "")
	}
	return meta.Retention{Mode: meta.RetentionMode(r.Mode), Until: until}, nil
}

// parseLegalHold reads a LegalHold body: MalformedXML unless its Status
// is ON or OFF.
func parseLegalHold(data []byte) (bool, error) {
	var l legalHold
	if err := parseLockXML(data, &l); err != nil {
		return false, err
	}
	switch l.Status {
	case "ON":
		return true, nil
	case "OFF":
		return false, nil
	}
	return false, s3err.New(s3err.MalformedXML, "")
}

// headerLock reads the x-amz-object-lock-* headers of a write (PutObject,
// CopyObject, CreateMultipartUpload): a mode and a retain-until date
// together or neither, a legal hold ON or OFF (InvalidArgument). A
// retention needs Content-MD5 or a checksum, as S3 says (requireChecksum);
// copies and multipart uploads carry no body to check.
func headerLock(q *request, body bool) (object.Lock, error) {
	var l object.Lock
	mode, date := q.Header.Get("X-Amz-Object-Lock-Mode"), q.Header.Get("X-Amz-Object-Lock-Retain-Until-Date")
	if (mode == "") != (date == "") {
		return l, s3err.New(s3err.InvalidArgument, "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied.")
	}
	if mode != "" {
		if !meta.RetentionMode(mode).Valid() {
			return l, s3err.New(s3err.InvalidArgument, "Unknown wormMode directive.")
		}
		until, err := parseRetentionDate(date)
		if err != nil {
			return l, err
		}
		l.Retention = meta.Retention{Mode: meta.RetentionMode(mode), Until: until}
		if body {
			if err := requireChecksum(q); err != nil {
				return l, err
			}
		}
	}
	switch h := q.Header.Get("X-Amz-Object-Lock-Legal-Hold"); h {
	case "", "OFF":
	case "ON":
		l.LegalHold = true
	default:
		return l, s3err.New(s3err.InvalidArgument, "Legal Hold must be either of 'ON' or 'OFF'")
	}
	return l, nil
}

// writeLockErr is err of a write that carried x-amz-object-lock-* headers,
// in S3's words for a bucket without object lock (its text for the
// writes differs from the lock operations').
func writeLockErr(err error) error {
	if meta.IsLockNotEnabled(err) {
		return s3err.New(s3err.InvalidRequest, "Bucket is missing ObjectLockConfiguration")
	}
	return err
}

// lockHeaders sets the x-amz-object-lock-* headers of GetObject and
// HeadObject for o, a version of bucket b: its retention, if any, and,
// in a bucket with object lock, its legal hold.
func lockHeaders(h http.Header, b meta.Bucket, o meta.Object) {
	if r := o.Retention; r.Mode != "" {
		h.Set("X-Amz-Object-Lock-Mode", string(r.Mode))
		h.Set("X-Amz-Object-Lock-Retain-Until-Date", r.Until.UTC().Format(time.RFC3339))
	}
	if b.ObjectLock.Enabled || o.LegalHold {
		h.Set("X-Amz-Object-Lock-Legal-Hold", onOff(o.LegalHold))
	}
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// requireChecksum answers InvalidRequest unless the request carries
// Content-MD5 or an x-amz-checksum-* header or trailer, as S3 requires
// of the lock operations, DeleteObjects and a PutObject with a retention
// (readBody, or the upload, then verifies it).
func requireChecksum(q *request) error {
	if len(q.Header.Values("Content-Md5")) > 0 || q.pay.trailerAlg != integrity.NoChecksum {
		return nil
	}
	for _, a := range integrity.Algorithms {
		if len(q.Header.Values(a.Header())) > 0 {
			return nil
		}
	}
	return s3err.New(s3err.InvalidRequest, "Missing required header for this request: Content-MD5 OR x-amz-checksum-*")
}

// lockVersionParam is versionParam of a retention or legal-hold
// operation, where an empty versionId= means the latest version, as
// versitygw's suite sends it (its cleanup of every lock test).
func lockVersionParam(q *request) (string, error) {
	if vs := q.query()["versionId"]; len(vs) > 0 && vs[0] == "" {
		return "", nil
	}
	return versionParam(q)
}

// bypassGovernance reads x-amz-bypass-governance-retention (true or
// false: the table, unsupported.go).
func bypassGovernance(q *request) bool {
	return strings.EqualFold(strings.TrimSpace(q.Header.Get("X-Amz-Bypass-Governance-Retention")), "true")
}

// readLockBody reads the body of a lock operation: Content-MD5 or a
// checksum required. An empty body is left to the parser (MalformedXML),
// but for PutObjectLockConfiguration, whose S3 answer is
// MissingRequestBodyError.
func (api *API) readLockBody(q *request) ([]byte, error) {
	if err := requireChecksum(q); err != nil {
		return nil, err
	}
	return api.readBody(q)
}

// lockedObjectBody reads the body of PutObjectRetention or
// PutObjectLegalHold once the bucket is known to be there (S3 answers
// NoSuchBucket before it looks at the body).
func (api *API) lockedObjectBody(q *request) ([]byte, error) {
	if _, err := api.buckets.GetBucket(ctxOf(q), q.actor, q.bucket); err != nil {
		return nil, err
	}
	return api.readLockBody(q)
}

func (api *API) putObjectLockConfiguration(q *request) (response, error) {
	data, err := api.readLockBody(q)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, s3err.New(s3err.MissingRequestBody, "")
	}
	d, err := parseLockConfiguration(data)
	if err != nil {
		return nil, err
	}
	if _, err := api.buckets.SetObjectLock(ctxOf(q), q.actor, q.bucket, d); err != nil {
		if meta.IsLockNotEnabled(err) {
			return nil, api.lockNotEnabled(q)
		}
		return nil, err
	}
	return empty{}, nil
}

// lockNotEnabled is PutObjectLockConfiguration's refusal on a bucket
// created without object lock (InvalidBucketState): S3 enables object
// lock on an existing bucket whose versioning is Enabled; Coffer only at
// creation.
func (api *API) lockNotEnabled(q *request) error {
	b, err := api.buckets.GetBucket(ctxOf(q), q.actor, q.bucket)
	if err != nil {
		return err
	}
	if b.Versioning != meta.VersioningEnabled {
		return s3err.New(s3err.InvalidBucketState, "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration")
	}
	return s3err.New(s3err.InvalidBucketState, "Coffer enables Object Lock on a bucket only when it is created (x-amz-bucket-object-lock-enabled)")
}

func (api *API) getObjectLockConfiguration(q *request) (response, error) {
	l, err := api.buckets.GetObjectLock(ctxOf(q), q.actor, q.bucket)
	if err != nil {
		return nil, err
	}
	if !l.Enabled {
		return nil, s3err.New(s3err.ObjectLockConfigurationNotFound, "")
	}
	return xmlResponse{body: lockConfigurationOf(l)}, nil
}

func (api *API) putObjectRetention(q *request) (response, error) {
	return api.putVersionLock(q, func(vid string, data []byte) (meta.Object, error) {
		r, err := parseRetention(data)
		if err != nil {
			return meta.Object{}, err
		}
		return api.objects.SetRetention(ctxOf(q), q.actor, q.bucket, q.key, vid, r, bypassGovernance(q))
	})
}

// putVersionLock reads the version and the body of PutObjectRetention or
// PutObjectLegalHold, lets set change the version's lock, and answers its
// x-amz-version-id.
func (api *API) putVersionLock(q *request, set func(vid string, data []byte) (meta.Object, error)) (response, error) {
	vid, err := lockVersionParam(q)
	if err != nil {
		return nil, err
	}
	data, err := api.lockedObjectBody(q)
	if err != nil {
		return nil, err
	}
	o, err := set(vid, data)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	versionHeader(h, o.VersionID)
	return empty{header: h}, nil
}

func (api *API) getObjectRetention(q *request) (response, error) {
	o, err := api.lockedVersion(q)
	if err != nil {
		return nil, err
	}
	if o.Retention.Mode == "" {
		return nil, s3err.New(s3err.NoSuchObjectLockConfiguration, "")
	}
	return xmlResponse{body: retention{Xmlns: s3NS, Mode: string(o.Retention.Mode), RetainUntilDate: o.Retention.Until.UTC().Format(time.RFC3339Nano)}}, nil
}

func (api *API) putObjectLegalHold(q *request) (response, error) {
	return api.putVersionLock(q, func(vid string, data []byte) (meta.Object, error) {
		on, err := parseLegalHold(data)
		if err != nil {
			return meta.Object{}, err
		}
		return api.objects.SetLegalHold(ctxOf(q), q.actor, q.bucket, q.key, vid, on)
	})
}

func (api *API) getObjectLegalHold(q *request) (response, error) {
	o, err := api.lockedVersion(q)
	if err != nil {
		return nil, err
	}
	return xmlResponse{body: legalHold{Xmlns: s3NS, Status: onOff(o.LegalHold)}}, nil
}

// lockedVersion reads the version q names with its lock.
func (api *API) lockedVersion(q *request) (meta.Object, error) {
	vid, err := lockVersionParam(q)
	if err != nil {
		return meta.Object{}, err
	}
	o, err := api.objects.GetLock(ctxOf(q), q.actor, q.bucket, q.key, vid)
	if e := errcode.As(err); e != nil && e.Code == errcode.MethodNotAllowed {
		return meta.Object{}, s3err.New(s3err.MethodNotAllowed, "")
	}
	return o, err
}

// lockSubresource dispatches the object lock sub-resources: the bucket's
// object-lock, an object's retention and legal-hold (Put and Get).
func (api *API) lockSubresource(m, sub string) (string, handlerFunc) {
	var name string
	var put, get handlerFunc
	switch sub {
	case "object-lock":
		name, put, get = "ObjectLockConfiguration", (*API).putObjectLockConfiguration, (*API).getObjectLockConfiguration
	case "retention":
		name, put, get = "ObjectRetention", (*API).putObjectRetention, (*API).getObjectRetention
	case "legal-hold":
		name, put, get = "ObjectLegalHold", (*API).putObjectLegalHold, (*API).getObjectLegalHold
	default:
		return "", nil
	}
	if m == http.MethodPut || m == http.MethodGet {
		return putGetDelete(m, name, put, get, nil)
	}
	return "", nil
}

// lockEnabledHeader reads CreateBucket's x-amz-bucket-object-lock-enabled
// (true or false: the table, unsupported.go).
func lockEnabledHeader(q *request) bool {
	v, _ := strconv.ParseBool(strings.TrimSpace(q.Header.Get("X-Amz-Bucket-Object-Lock-Enabled")))
	return v
}

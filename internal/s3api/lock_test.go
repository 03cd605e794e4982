package s3api

import (
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// withMD5 is a request body's Content-MD5 header, as S3 requires of the
// lock operations.
func withMD5(body []byte, hdr ...string) []string {
	return append([]string{"Content-MD5", md5B64(body)}, hdr...)
}

// TestObjectLockAPI: the object lock operations and headers, their
// refusals in S3's words, and the removals a lock refuses.
func TestObjectLockAPI(t *testing.T) {
	e := newS3Env(t)
	e.alice("PUT", "/vault", nil, "X-Amz-Bucket-Object-Lock-Enabled", "true").want(t, 200, "")
	if b := e.store.Buckets["vault"]; !b.ObjectLock.Enabled || b.Versioning != meta.VersioningEnabled {
		t.Fatalf("CreateBucket with object lock made %+v", b)
	}
	e.alice("PUT", "/vault?versioning", []byte(`<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>`)).want(t, 400, s3err.InvalidBucketState)
	r := e.alice("GET", "/vault?object-lock", nil)
	r.want(t, 200, "")
	if !strings.Contains(r.Body.String(), "<ObjectLockEnabled>Enabled</ObjectLockEnabled>") || strings.Contains(r.Body.String(), "<Rule>") {
		t.Errorf("GetObjectLockConfiguration without a default = %s", r.Body)
	}

	// PutObjectLockConfiguration.
	conf := func(inner string) []byte {
		return []byte(`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>` + inner + `</ObjectLockConfiguration>`)
	}
	gov := conf(`<Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days></DefaultRetention></Rule>`)
	e.alice("PUT", "/vault?object-lock", gov).want(t, 400, s3err.InvalidRequest) // no Content-MD5
	writes := len(e.store.Writes)
	for name, c := range map[string]struct {
		body []byte
		code string
	}{
		"mode":     {conf(`<Rule><DefaultRetention><Mode>FOREVER</Mode><Days>1</Days></DefaultRetention></Rule>`), s3err.MalformedXML},
		"both":     {conf(`<Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years></DefaultRetention></Rule>`), s3err.MalformedXML},
		"neither":  {conf(`<Rule><DefaultRetention><Mode>GOVERNANCE</Mode></DefaultRetention></Rule>`), s3err.MalformedXML},
		"status":   {[]byte(`<ObjectLockConfiguration><ObjectLockEnabled>Disabled</ObjectLockEnabled></ObjectLockConfiguration>`), s3err.MalformedXML},
		"negative": {conf(`<Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>-3</Days></DefaultRetention></Rule>`), s3err.InvalidArgument},
		"too long": {conf(`<Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Years>101</Years></DefaultRetention></Rule>`), s3err.InvalidArgument},
		"empty":    {nil, s3err.MissingRequestBody},
	} {
		r := e.alice("PUT", "/vault?object-lock", c.body, withMD5(c.body)...)
		if r.code != c.code {
			t.Errorf("PutObjectLockConfiguration %s: %d %q (%s), want %q", name, r.Code, r.code, r.message, c.code)
		}
	}
	if len(e.store.Writes) != writes {
		t.Errorf("refused configurations wrote %v", e.store.Writes[writes:])
	}
	e.alice("PUT", "/vault?object-lock", gov, withMD5(gov)...).want(t, 200, "")
	if !strings.Contains(e.alice("GET", "/vault?object-lock", nil).Body.String(), "<Mode>GOVERNANCE</Mode><Days>1</Days>") {
		t.Error("GetObjectLockConfiguration does not answer the default retention")
	}
	e.alice("PUT", "/b?object-lock", gov, withMD5(gov)...).want(t, 409, s3err.InvalidBucketState)
	e.alice("GET", "/b?object-lock", nil).want(t, 404, s3err.ObjectLockConfigurationNotFound)

	// Writes with lock headers; GET and HEAD answer them.
	until := testNow.Add(24 * time.Hour).UTC().Format(time.RFC3339)
	data := []byte("locked bytes")
	lock := []string{"X-Amz-Object-Lock-Mode", "COMPLIANCE", "X-Amz-Object-Lock-Retain-Until-Date", until}
	e.alice("PUT", "/vault/k", data, lock...).want(t, 400, s3err.InvalidRequest) // a retention needs Content-MD5 or a checksum
	put := e.alice("PUT", "/vault/k", data, withMD5(data, lock...)...)
	put.want(t, 200, "")
	vid := put.Header().Get("X-Amz-Version-Id")
	if got := e.store.LastPut.Lock.Retention; got.Mode != meta.Compliance || got.Until.Format(time.RFC3339) != until {
		t.Errorf("PutObject passed retention %+v", got)
	}
	for _, m := range []string{"GET", "HEAD"} {
		h := e.alice(m, "/vault/k", nil).Header()
		if h.Get("X-Amz-Object-Lock-Mode") != "COMPLIANCE" || h.Get("X-Amz-Object-Lock-Retain-Until-Date") != until || h.Get("X-Amz-Object-Lock-Legal-Hold") != "OFF" {
			t.Errorf("%s lock headers: %v", m, h)
		}
	}
	r = e.alice("PUT", "/vault/half", data, withMD5(data, "X-Amz-Object-Lock-Mode", "GOVERNANCE")...)
	if r.want(t, 400, s3err.InvalidArgument); r.message != "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied." {
		t.Errorf("a mode without a date: %q", r.message)
	}
	r = e.alice("PUT", "/b/k2", data, "X-Amz-Object-Lock-Legal-Hold", "ON")
	if r.want(t, 400, s3err.InvalidRequest); r.message != "Bucket is missing ObjectLockConfiguration" {
		t.Errorf("a lock in a bucket without object lock: %q", r.message)
	}

	// Retention: read, lengthened, never shortened when COMPLIANCE.
	r = e.alice("GET", "/vault/k?retention&versionId="+vid, nil)
	r.want(t, 200, "")
	if got, err := parseRetention(r.Body.Bytes()); err != nil || got.Mode != meta.Compliance || got.Until.Format(time.RFC3339) != until {
		t.Errorf("GetObjectRetention = %s (%v)", r.Body, err)
	}
	ret := func(mode string, at time.Time) []byte {
		return []byte(`<Retention><Mode>` + mode + `</Mode><RetainUntilDate>` + at.UTC().Format(time.RFC3339) + `</RetainUntilDate></Retention>`)
	}
	shorter := ret("COMPLIANCE", testNow.Add(time.Hour))
	r = e.alice("PUT", "/vault/k?retention", shorter, withMD5(shorter, "X-Amz-Bypass-Governance-Retention", "true")...)
	r.want(t, 403, s3err.AccessDenied)
	if r.message != "Access Denied because object protected by object lock." {
		t.Errorf("the refusal of a locked version says %q", r.message)
	}
	longer := ret("COMPLIANCE", testNow.Add(48*time.Hour))
	e.alice("PUT", "/vault/k?retention", longer, withMD5(longer)...).want(t, 200, "")
	bad := []byte(`<Retention><Mode>FOREVER</Mode><RetainUntilDate>2040-01-01T00:00:00Z</RetainUntilDate></Retention>`)
	e.alice("PUT", "/vault/k?retention", bad, withMD5(bad)...).want(t, 400, s3err.MalformedXML)
	past := ret("GOVERNANCE", testNow.Add(-time.Hour))
	e.alice("PUT", "/vault/k?retention", past, withMD5(past)...).want(t, 400, s3err.InvalidArgument)
	e.alice("PUT", "/vault/k?retention", longer).want(t, 400, s3err.InvalidRequest)
	e.alice("PUT", "/b/k?retention", longer, withMD5(longer)...).want(t, 400, s3err.InvalidRequest)
	e.alice("GET", "/b/k?retention", nil).want(t, 400, s3err.InvalidRequest)

	// A version without retention; legal holds.
	plain := e.alice("PUT", "/vault/plain", data)
	plain.want(t, 200, "")
	pv := plain.Header().Get("X-Amz-Version-Id")
	e.alice("GET", "/vault/plain?retention", nil).want(t, 400, s3err.NoSuchObjectLockConfiguration)
	on := []byte(`<LegalHold><Status>ON</Status></LegalHold>`)
	e.alice("PUT", "/vault/plain?legal-hold&versionId="+pv, on, withMD5(on)...).want(t, 200, "")
	if !strings.Contains(e.alice("GET", "/vault/plain?legal-hold", nil).Body.String(), "<Status>ON</Status>") {
		t.Error("GetObjectLegalHold does not answer ON")
	}
	maybe := []byte(`<LegalHold><Status>MAYBE</Status></LegalHold>`)
	e.alice("PUT", "/vault/plain?legal-hold", maybe, withMD5(maybe)...).want(t, 400, s3err.MalformedXML)

	// Removals: refused while locked, one by one and in DeleteObjects;
	// a delete marker is always allowed.
	e.alice("DELETE", "/vault/k?versionId="+vid, nil, "X-Amz-Bypass-Governance-Retention", "true").want(t, 403, s3err.AccessDenied)
	del := []byte(`<Delete><Object><Key>plain</Key><VersionId>` + pv + `</VersionId></Object><Object><Key>k</Key><VersionId>` + vid + `</VersionId></Object></Delete>`)
	e.alice("POST", "/vault?delete", del).want(t, 400, s3err.InvalidRequest)
	r = e.alice("POST", "/vault?delete", del, withMD5(del)...)
	r.want(t, 200, "")
	if n := strings.Count(r.Body.String(), "<Code>AccessDenied</Code>"); n != 2 {
		t.Errorf("DeleteObjects of two locked versions: %d refusals in %s", n, r.Body)
	}
	e.alice("DELETE", "/vault/k", nil).want(t, 204, "")
	e.alice("PUT", "/vault?versioning", []byte(`<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>`)).want(t, 200, "")
}

func FuzzObjectLockConfigurationXML(f *testing.F) {
	f.Add([]byte(`<ObjectLockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days></DefaultRetention></Rule></ObjectLockConfiguration>`))
	f.Add([]byte(`<ObjectLockConfiguration><Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Years>100</Years></DefaultRetention></Rule></ObjectLockConfiguration>`))
	f.Add([]byte(`<ObjectLockConfiguration><Rule><DefaultRetention><Days>x</Days></DefaultRetention></Rule></ObjectLockConfiguration>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		parsedStrictly[objectLockConfiguration](t, body)
		d, err := parseLockConfiguration(body)
		if err == nil && meta.CheckDefaultRetention(d) != nil {
			t.Fatalf("parseLockConfiguration(%q) = %+v: not a valid default", body, d)
		}
	})
}

func FuzzRetentionXML(f *testing.F) {
	f.Add([]byte(`<Retention xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Mode>GOVERNANCE</Mode><RetainUntilDate>2040-01-01T00:00:00.123Z</RetainUntilDate></Retention>`))
	f.Add([]byte(`<Retention/>`))
	f.Add([]byte(`<Retention><Mode>COMPLIANCE</Mode><RetainUntilDate>tomorrow</RetainUntilDate></Retention>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		parsedStrictly[retention](t, body)
		r, err := parseRetention(body)
		if err == nil && meta.CheckRetention(r) != nil {
			t.Fatalf("parseRetention(%q) = %+v: not a valid retention", body, r)
		}
	})
}

func FuzzLegalHoldXML(f *testing.F) {
	f.Add([]byte(`<LegalHold xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>ON</Status></LegalHold>`))
	f.Add([]byte(`<LegalHold><Status>OFF</Status><Status>ON</Status></LegalHold>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		parsedStrictly[legalHold](t, body)
		parseLegalHold(body)
	})
}

package s3api

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// lifecycleBody is a LifecycleConfiguration of rules.
func lifecycleBody(rules ...string) []byte {
	return []byte(`<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` + strings.Join(rules, "") + `</LifecycleConfiguration>`)
}

func TestBucketLifecycle(t *testing.T) {
	e := newS3Env(t)
	e.alice("GET", "/b?lifecycle", nil).want(t, 404, s3err.NoSuchLifecycleConfiguration)
	body := lifecycleBody(`<Rule><ID>logs</ID><Filter><And><Prefix>logs/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></And></Filter><Status>Enabled</Status><Expiration><Days>30</Days></Expiration></Rule>`,
		`<Rule><ID>all</ID><Filter/><Status>Enabled</Status><Expiration><Days>1</Days></Expiration><NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays><NewerNoncurrentVersions>3</NewerNoncurrentVersions></NoncurrentVersionExpiration><AbortIncompleteMultipartUpload><DaysAfterInitiation>7</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`)
	e.alice("PUT", "/b?lifecycle", body, "Content-MD5", md5B64(body)).want(t, 200, "")
	r := e.alice("GET", "/b?lifecycle", nil)
	r.want(t, 200, "")
	var got meta.Lifecycle
	if err := xml.Unmarshal(r.Body.Bytes(), &got); err != nil || len(got.Rules) != 2 || got.Rules[0].ID != "logs" ||
		*got.Rules[0].Filter.And.Prefix != "logs/" || *got.Rules[1].NoncurrentVersionExpiration.NewerNoncurrentVersions != 3 {
		t.Errorf("GetBucketLifecycleConfiguration = %s (%v)", r.Body, err)
	}
	// x-amz-expiration: the "all" rule expires every object a day after
	// its creation, rounded up to the next midnight UTC (the fake's clock
	// reads 11-27 10:00: 11-28 10:00, so 11-29 00:00).
	r = e.alice("PUT", "/b/k", []byte("data"))
	r.want(t, 200, "")
	const want = `expiry-date="Sun, 29 Nov 2026 00:00:00 GMT", rule-id="all"`
	if got := r.Header().Get("X-Amz-Expiration"); got != want {
		t.Errorf("PutObject x-amz-expiration = %q, want %q", got, want)
	}
	for _, m := range []string{"GET", "HEAD"} {
		if got := e.alice(m, "/b/k", nil).Header().Get("X-Amz-Expiration"); got != want {
			t.Errorf("%s x-amz-expiration = %q, want %q", m, got, want)
		}
	}
	// Refusals change nothing.
	e.store.Writes = nil
	exp := `<Expiration><Days>1</Days></Expiration>`
	for _, tc := range []struct {
		name string
		body []byte
		hdr  []string
		code string
	}{
		{"no digest", body, nil, s3err.InvalidRequest},
		{"no rules", lifecycleBody(), nil, s3err.MalformedXML},
		{"no filter", lifecycleBody(`<Rule><Status>Enabled</Status>` + exp + `</Rule>`), nil, s3err.MalformedXML},
		{"unknown element", lifecycleBody(`<Rule><Status>Enabled</Status><Filter/><X/>` + exp + `</Rule>`), nil, s3err.MalformedXML},
		{"no action", lifecycleBody(`<Rule><Status>Enabled</Status><Filter/></Rule>`), nil, s3err.InvalidRequest},
		{"zero days", lifecycleBody(`<Rule><Status>Enabled</Status><Filter/><Expiration><Days>0</Days></Expiration></Rule>`), nil, s3err.InvalidArgument},
		{"date not midnight", lifecycleBody(`<Rule><Status>Enabled</Status><Filter/><Expiration><Date>2030-01-01T10:00:00Z</Date></Expiration></Rule>`), nil, s3err.InvalidArgument},
		{"duplicate id", lifecycleBody(`<Rule><ID>a</ID><Status>Enabled</Status><Filter/>`+exp+`</Rule>`, `<Rule><ID>a</ID><Status>Enabled</Status><Filter/>`+exp+`</Rule>`), nil, s3err.InvalidArgument},
		{"bad tag", lifecycleBody(`<Rule><Status>Enabled</Status><Filter><Tag><Key>aws:k</Key><Value>v</Value></Tag></Filter>` + exp + `</Rule>`), nil, s3err.InvalidTag},
		{"transition", lifecycleBody(`<Rule><Status>Enabled</Status><Filter/>` + exp + `<Transition><Days>30</Days><StorageClass>GLACIER</StorageClass></Transition></Rule>`), nil, s3err.NotImplemented},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := tc.hdr
			if tc.name != "no digest" {
				hdr = append(hdr, "Content-MD5", md5B64(tc.body))
			}
			e.alice("PUT", "/b?lifecycle", tc.body, hdr...).want(t, 400+101*boolInt(tc.code == s3err.NotImplemented), tc.code)
			e.noWrites(t)
		})
	}
	e.do(req{method: "GET", target: "/b?lifecycle", as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.do(req{method: "DELETE", target: "/b?lifecycle", as: bobKey}).want(t, 403, s3err.AccessDenied)
	e.noWrites(t)
	e.alice("DELETE", "/b?lifecycle", nil).want(t, 204, "")
	e.alice("GET", "/b?lifecycle", nil).want(t, 404, s3err.NoSuchLifecycleConfiguration)
	if got := e.alice("HEAD", "/b/k", nil).Header().Get("X-Amz-Expiration"); got != "" {
		t.Errorf("x-amz-expiration without rules = %q", got)
	}
}

// FuzzLifecycle: parseLifecycle never panics; what it accepts encodes
// and parses back to the same configuration, accepted again.
func FuzzLifecycle(f *testing.F) {
	f.Add(lifecycleBody(`<Rule><ID>a</ID><Filter><And><Prefix>p/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag><ObjectSizeGreaterThan>1</ObjectSizeGreaterThan></And></Filter><Status>Enabled</Status><Expiration><Days>3</Days></Expiration></Rule>`))
	f.Add(lifecycleBody(`<Rule><Prefix>x</Prefix><Status>Disabled</Status><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule>`))
	f.Add(lifecycleBody(`<Rule><Status>Enabled</Status><Filter/><Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration><AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`))
	f.Add(lifecycleBody(`<Rule><Status>Enabled</Status><Filter><Prefix>m/</Prefix></Filter><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lc, err := parseLifecycle(data)
		if err != nil {
			if s3err.Translate(err).Status == 500 {
				t.Fatalf("parseLifecycle(%q): a server error %v", data, err)
			}
			return
		}
		out, err := xml.Marshal(lifecycleOut{Xmlns: s3NS, Rules: lc.Rules})
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := parseLifecycle(out)
		if err != nil {
			t.Fatalf("the encoding of an accepted configuration is refused: %v\n%s", err, out)
		}
		a, _ := xml.Marshal(lifecycleOut{Xmlns: s3NS, Rules: again.Rules})
		if string(a) != string(out) {
			t.Fatalf("round trip changed the configuration:\n%s\n%s", out, a)
		}
	})
}

package meta

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func lcOf(t *testing.T, body string) *Lifecycle {
	t.Helper()
	var lc Lifecycle
	if err := xml.Unmarshal([]byte("<LifecycleConfiguration>"+body+"</LifecycleConfiguration>"), &lc); err != nil {
		t.Fatalf("xml: %v", err)
	}
	return &lc
}

func TestCheckLifecycle(t *testing.T) {
	const exp = "<Expiration><Days>1</Days></Expiration>"
	rule := func(s string) string { return "<Rule><ID>r</ID><Status>Enabled</Status>" + s + "</Rule>" }
	ruleF := func(s string) string { return rule("<Filter/>" + s) }
	many := strings.Repeat("<Rule><Status>Enabled</Status><Filter></Filter>"+exp+"</Rule>", MaxLifecycleRules+1)
	for _, tc := range []struct {
		name, body string
		code       errcode.Code
		reason     string
	}{
		{"days", rule("<Filter><Prefix>a/</Prefix></Filter>" + exp), 0, ""},
		{"empty filter", rule("<Filter/>" + exp), 0, ""},
		{"no filter", rule(exp), errcode.InvalidArgument, "malformed_xml"},
		{"legacy prefix", rule("<Prefix>a/</Prefix>" + exp), 0, ""},
		{"date", rule("<Filter/><Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration>"), 0, ""},
		{"and", rule("<Filter><And><Prefix>p</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></And></Filter>" + exp), 0, ""},
		{"size range", rule("<Filter><And><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>20</ObjectSizeLessThan></And></Filter>" + exp), 0, ""},
		{"noncurrent", ruleF("<NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays><NewerNoncurrentVersions>3</NewerNoncurrentVersions></NoncurrentVersionExpiration>"), 0, ""},
		{"abort", ruleF("<AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload>"), 0, ""},
		{"marker", ruleF("<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>"), 0, ""},
		{"no rules", "", errcode.InvalidArgument, "malformed_xml"},
		{"too many rules", many, errcode.InvalidArgument, "invalid_request"},
		{"bad status", "<Rule><Status>On</Status><Filter/>" + exp + "</Rule>", errcode.InvalidArgument, "malformed_xml"},
		{"long id", "<Rule><ID>" + strings.Repeat("x", 256) + "</ID><Status>Enabled</Status><Filter/>" + exp + "</Rule>", errcode.InvalidArgument, ""},
		{"duplicate id", ruleF(exp) + ruleF(exp), errcode.InvalidArgument, ""},
		{"no action", rule("<Filter/>"), errcode.InvalidArgument, "invalid_request"},
		{"filter and prefix", rule("<Filter/><Prefix>a</Prefix>" + exp), errcode.InvalidArgument, "malformed_xml"},
		{"two predicates", rule("<Filter><Prefix>a</Prefix><ObjectSizeLessThan>5</ObjectSizeLessThan></Filter>" + exp), errcode.InvalidArgument, "malformed_xml"},
		{"and of one", rule("<Filter><And><Prefix>a</Prefix></And></Filter>" + exp), errcode.InvalidArgument, "malformed_xml"},
		{"zero days", ruleF("<Expiration><Days>0</Days></Expiration>"), errcode.InvalidArgument, ""},
		{"days and date", ruleF("<Expiration><Days>1</Days><Date>2030-01-01T00:00:00Z</Date></Expiration>"), errcode.InvalidArgument, "malformed_xml"},
		{"date not midnight", ruleF("<Expiration><Date>2030-01-01T01:00:00Z</Date></Expiration>"), errcode.InvalidArgument, ""},
		{"date not a date", ruleF("<Expiration><Date>soon</Date></Expiration>"), errcode.InvalidArgument, ""},
		{"marker with tags", rule("<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>"), errcode.InvalidArgument, "invalid_request"},
		{"noncurrent zero", ruleF("<NoncurrentVersionExpiration><NoncurrentDays>0</NoncurrentDays></NoncurrentVersionExpiration>"), errcode.InvalidArgument, ""},
		{"newer too many", ruleF("<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>101</NewerNoncurrentVersions></NoncurrentVersionExpiration>"), errcode.InvalidArgument, ""},
		{"abort zero", ruleF("<AbortIncompleteMultipartUpload><DaysAfterInitiation>0</DaysAfterInitiation></AbortIncompleteMultipartUpload>"), errcode.InvalidArgument, ""},
		{"abort with tags", rule("<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload>"), errcode.InvalidArgument, "invalid_request"},
		{"sizes crossed", rule("<Filter><And><ObjectSizeGreaterThan>20</ObjectSizeGreaterThan><ObjectSizeLessThan>10</ObjectSizeLessThan></And></Filter>" + exp), errcode.InvalidArgument, ""},
		{"bad tag", rule("<Filter><Tag><Key>aws:x</Key><Value>v</Value></Tag></Filter>" + exp), errcode.InvalidArgument, "invalid_tag"},
		{"eleven And tags", rule("<Filter><And>" + strings.Repeat("<Tag><Key>k</Key><Value>v</Value></Tag>", 11) + "</And></Filter>" + exp), errcode.InvalidArgument, "invalid_tag"},
		{"transition", ruleF(exp + "<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition>"), errcode.NotImplemented, ""},
		{"noncurrent transition", ruleF(exp + "<NoncurrentVersionTransition><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionTransition>"), errcode.NotImplemented, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckLifecycle(lcOf(t, tc.body))
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("CheckLifecycle: %v", err)
				}
				return
			}
			e := errcode.As(err)
			if e == nil || e.Code != tc.code {
				t.Fatalf("CheckLifecycle = %v, want %v", err, tc.code)
			}
			if reason, _ := e.Detail["reason"].(string); reason != tc.reason {
				t.Errorf("reason %q, want %q (%v)", reason, tc.reason, err)
			}
		})
	}
}

func TestCheckLifecycleGivesIDs(t *testing.T) {
	lc := lcOf(t, "<Rule><Status>Enabled</Status><Filter/><Expiration><Days>1</Days></Expiration></Rule><Rule><Status>Enabled</Status><Filter/><Expiration><Days>1</Days></Expiration></Rule>")
	if err := CheckLifecycle(lc); err != nil {
		t.Fatal(err)
	}
	if lc.Rules[0].ID == "" || lc.Rules[0].ID == lc.Rules[1].ID {
		t.Errorf("IDs %q and %q, want two distinct", lc.Rules[0].ID, lc.Rules[1].ID)
	}
}

func TestLifecycleMatch(t *testing.T) {
	lc := lcOf(t, `<Rule><ID>logs</ID><Status>Enabled</Status><Filter><And><Prefix>logs/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan></And></Filter><Expiration><Days>3</Days></Expiration></Rule>
<Rule><ID>off</ID><Status>Disabled</Status><Filter/><Expiration><Days>1</Days></Expiration></Rule>
<Rule><ID>date</ID><Status>Enabled</Status><Filter><Prefix>old/</Prefix></Filter><Expiration><Date>2026-03-01T00:00:00Z</Date></Expiration></Rule>
<Rule><ID>nc</ID><Status>Enabled</Status><Filter/><NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays><NewerNoncurrentVersions>1</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>
<Rule><ID>dm</ID><Status>Enabled</Status><Filter><Prefix>m/</Prefix></Filter><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>
<Rule><ID>mp</ID><Status>Enabled</Status><Filter><Prefix>u/</Prefix></Filter><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`)
	if err := CheckLifecycle(lc); err != nil {
		t.Fatal(err)
	}
	tagged := []Tag{{"a", "b"}, {"k", "v"}}
	created := time.Date(2026, 1, 15, 10, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		o    Object
		at   time.Time
		rule string
	}{
		// S3's example: created 1/15 10:30 UTC, 3 days: expires 1/19 00:00 UTC.
		{"days round up to midnight", Object{Key: "logs/a", Size: 11, Tags: tagged, ModTime: created}, time.Date(2026, 1, 19, 0, 0, 0, 0, time.UTC), "logs"},
		{"at midnight stays", Object{Key: "logs/a", Size: 11, Tags: tagged, ModTime: time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)}, time.Date(2026, 1, 18, 0, 0, 0, 0, time.UTC), "logs"},
		{"too small", Object{Key: "logs/a", Size: 10, Tags: tagged, ModTime: created}, time.Time{}, ""},
		{"tag missing", Object{Key: "logs/a", Size: 11, Tags: []Tag{{"k", "w"}}, ModTime: created}, time.Time{}, ""},
		{"other prefix", Object{Key: "log/a", Size: 11, Tags: tagged, ModTime: created}, time.Time{}, ""},
		{"date", Object{Key: "old/x", ModTime: created}, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), "date"},
	} {
		at, rule, ok := lc.CurrentExpiry(tc.o, Lifecycle24h)
		if ok != !tc.at.IsZero() || !at.Equal(tc.at) || rule != tc.rule {
			t.Errorf("%s: CurrentExpiry = %v %q %v, want %v %q", tc.name, at, rule, ok, tc.at, tc.rule)
		}
	}
	o := Object{Key: "x"}
	if _, _, ok := lc.NoncurrentExpiry(o, created, 0, Lifecycle24h); ok {
		t.Error("NoncurrentExpiry of the newest noncurrent version, with 1 newer kept: want none")
	}
	if at, rule, ok := lc.NoncurrentExpiry(o, created, 1, Lifecycle24h); !ok || rule != "nc" || !at.Equal(time.Date(2026, 1, 18, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("NoncurrentExpiry = %v %q %v, want 1/18 nc", at, rule, ok)
	}
	if rule, ok := lc.ExpiresMarker("m/k"); !ok || rule != "dm" {
		t.Errorf("ExpiresMarker(m/k) = %q %v", rule, ok)
	}
	if _, ok := lc.ExpiresMarker("n/k"); ok {
		t.Error("ExpiresMarker(n/k): want none")
	}
	if at, rule, ok := lc.AbortAfter("u/k", created, Lifecycle24h); !ok || rule != "mp" || !at.Equal(time.Date(2026, 1, 17, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("AbortAfter = %v %q %v", at, rule, ok)
	}
	// A short test day: boundaries are multiples of it.
	d := Day(2 * time.Second)
	base := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	if got := d.after(base, 3); !got.Equal(base.Add(7 * time.Second)) {
		t.Errorf("2s day: 3 days after 00:00:01 = %v, want 00:00:08", got)
	}
}

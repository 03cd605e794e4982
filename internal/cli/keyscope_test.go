package cli

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestKeyCreateScoped: key create takes the scope and expiry flags, key
// list shows them, contradictory flags are refused and make no key, and
// --app-token makes and lists app tokens apart from S3 keys.
func TestKeyCreateScoped(t *testing.T) {
	t.Chdir(t.TempDir())
	const email = "k@example.com"
	if code, _, stderr := runCLI(t, nil, "user", "create", "--data", "data", "--email", email, "--password", "correct horse battery"); code != 0 {
		t.Fatalf("user create: %d %s", code, stderr)
	}
	serveOneRequest(t, "--data", "data") // the server key
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bucket", "photos", "--prefix", "in/", "--read-only", "--expires", "30d"}, "read photos/in/*"},
		{[]string{"--write-only"}, "write every bucket"},
		{[]string{"--bucket", "photos", "--expires", "2099-01-02"}, "read-write photos/*"},
		{[]string{"--name", "plain"}, "all (as the user)"},
	} {
		code, stdout, stderr := runCLI(t, nil, append([]string{"key", "create", "--data", "data", "--email", email}, c.args...)...)
		if code != 0 || !strings.Contains(stdout, "secret_access_key") || !strings.Contains(stdout, c.want) {
			t.Errorf("key create %v: exit %d\n%s%s", c.args, code, stdout, stderr)
		}
	}
	if err := os.WriteFile("policy.json", []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("bad.json", []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:Fly","Resource":"*"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, nil, "key", "create", "--data", "data", "--email", email, "--policy", "policy.json"); code != 0 || !strings.Contains(stdout, "inline policy") {
		t.Errorf("key create --policy: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, bad := range [][]string{
		{"--policy", "bad.json"},
		{"--read-only", "--write-only"},
		{"--prefix", "in/"},
		{"--bucket", "Not_A_Bucket"},
		{"--bucket", "photos", "--policy", "policy.json"},
		{"--expires", "-3d"},
		{"--expires", "yesterday"},
		{"--expires", "2001-01-01"},
		{"--policy", "missing.json"},
	} {
		if code, stdout, _ := runCLI(t, nil, append([]string{"key", "create", "--data", "data", "--email", email}, bad...)...); code == 0 {
			t.Errorf("key create %v succeeded:\n%s", bad, stdout)
		}
	}
	code, stdout, stderr := runCLI(t, nil, "key", "list", "--data", "data", "--email", email)
	if code != 0 || strings.Count(stdout, "\n") != 5 || !strings.Contains(stdout, "scope read photos/in/*") || !strings.Contains(stdout, "expires 2099-01-02T00:00:00Z") {
		t.Errorf("key list: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI(t, nil, "key", "create", "--data", "data", "--email", email, "--app-token", "--bucket", "photos", "--read-only"); code != 0 || !strings.Contains(stdout, "token:   coffer_CT") {
		t.Errorf("key create --app-token: exit %d\n%s", code, stdout)
	}
	if code, stdout, _ := runCLI(t, nil, "key", "list", "--data", "data", "--email", email, "--app-token"); code != 0 || strings.Count(stdout, "\n") != 1 || !strings.HasPrefix(stdout, "CT") {
		t.Errorf("key list --app-token: exit %d\n%s", code, stdout)
	}
	if code, _, _ := runCLI(t, nil, "key", "list", "--data", "data", "--email", email, "--read-only"); code == 0 {
		t.Errorf("key list --read-only succeeded")
	}
}

func TestParseExpiry(t *testing.T) {
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"30d":                  now.Add(30 * 24 * time.Hour),
		"12h":                  now.Add(12 * time.Hour),
		"90m":                  now.Add(90 * time.Minute),
		"45s":                  now.Add(45 * time.Second),
		"2026-12-31":           time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC),
		"2026-12-31T10:00:00Z": time.Date(2026, 12, 31, 10, 0, 0, 0, time.UTC),
	} {
		if got, err := parseExpiry(in, now); err != nil || !got.Equal(want) {
			t.Errorf("parseExpiry(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "0d", "-1d", "1y", "1.5d", "99999999d", "31/12/2026"} {
		if _, err := parseExpiry(in, now); err == nil {
			t.Errorf("parseExpiry(%q) succeeded", in)
		}
	}
}

// FuzzParseExpiry: --expires never panics, and a duration it accepts is
// in the future.
func FuzzParseExpiry(f *testing.F) {
	for _, s := range []string{"30d", "12h", "2026-12-31", "2026-12-31T10:00:00Z", "d", "", "-1s", "9223372036854775807s"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseExpiry(s, now)
		if err == nil && len(s) > 1 && strings.IndexByte("dhms", s[len(s)-1]) >= 0 && !got.After(now) {
			t.Fatalf("parseExpiry(%q) = %v, not after now", s, got)
		}
	})
}

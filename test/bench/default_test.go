package bench_test

import (
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestBenchAgainstADefaultServer: coffer bench against a server started
// with the README's command (default flags, so at most 5 signups an hour
// from one address). Signing up its accounts fails at once with a hint;
// with an administrator's token (--admin-token, here from its variable)
// it creates them through the admin API, and does so run after run
// (issue 17: the setup signed up 5 accounts per run into the limit). The
// limit still holds for anyone else.
func TestBenchAgainstADefaultServer(t *testing.T) {
	srv := testenv.StartDefaults(t)
	args := []string{"upload-proxy", "--target", srv.URL, "--vus", "6", "--duration", "1s", "--size", "16KiB"}

	cmd := exec.Command(testenv.Binary(t), append([]string{"bench"}, args...)...)
	cmd.Env = append(os.Environ(), "COFFER_BENCH_ADMIN_TOKEN=")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--admin-token") {
		t.Fatalf("6 signups against the default limit of 5 an hour: err %v, want a failed setup naming --admin-token\n%s", err, out)
	}

	cmd = srv.Command("user", "create", "--data", srv.Data, "--email", "admin@example.com", "--password", "an admin password", "--admin")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("coffer user create --admin: %v\n%s", err, out)
	}
	admin := testenv.NewClient(srv.URL)
	admin.Email = "admin@example.com"
	admin.Login(t, "an admin password")
	for run := 1; run <= 3; run++ {
		r := benchEnv(t, []string{"COFFER_BENCH_ADMIN_TOKEN=" + admin.Token}, args...)
		checkReport(t, r, true)
		checkCleanup(t, r, true)
		if r.Setup.Users != 6 || r.Cleanup.Accounts != 6 {
			t.Errorf("run %d: %d users made, %d accounts deleted; want 6 and 6", run, r.Setup.Users, r.Cleanup.Accounts)
		}
	}

	anon := testenv.NewClient(srv.URL)
	var got int
	for i := range 6 {
		got = anon.JSON(t, "POST", "/api/v1/auth/signup", map[string]string{"email": "someone" + string(rune('a'+i)) + "@example.com",
			"password": "correct horse battery"}, nil)
		if got == http.StatusTooManyRequests {
			break
		}
	}
	if got != http.StatusTooManyRequests {
		t.Errorf("anonymous signups after the runs: last status %d, want the limit (429) to still hold", got)
	}
}

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// cheapHashing makes the many password checks of the throttle tests fast;
// the throttles do not depend on the cost.
var cheapHashing = []string{"--argon2-memory", "8192", "--argon2-time", "1"}

// signupAs posts a signup from client address ip (via X-Forwarded-For;
// the server must trust 127.0.0.1 as a proxy), with an invite code if
// code is not "". It returns the status, the problem and the Retry-After.
func signupAs(t *testing.T, srv *testenv.Server, ip, email, code string) (int, testenv.Problem, string) {
	t.Helper()
	body := map[string]string{"email": email, "password": "correct horse battery"}
	if code != "" {
		body["invite_code"] = code
	}
	return postAs(t, srv, ip, "/api/v1/auth/signup", body)
}

func loginAs(t *testing.T, srv *testenv.Server, ip, email, password string) (int, testenv.Problem, string) {
	t.Helper()
	return postAs(t, srv, ip, "/api/v1/auth/login", map[string]string{"email": email, "password": password})
}

func postAs(t *testing.T, srv *testenv.Server, ip, path string, body any) (int, testenv.Problem, string) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	hdr := []string{"Content-Type", "application/json"}
	if ip != "" {
		hdr = append(hdr, "X-Forwarded-For", ip)
	}
	resp := testenv.NewClient(srv.URL).Do(t, "POST", path, bytes.NewReader(b), hdr...)
	defer resp.Body.Close()
	var p testenv.Problem
	if resp.StatusCode >= 400 {
		mustJSONResp(t, resp, &p)
	}
	return resp.StatusCode, p, resp.Header.Get("Retry-After")
}

// wantProblem fails unless the answer is status with a problem of type
// typ and code code.
func wantProblem(t *testing.T, what string, st int, p testenv.Problem, status int, typ, code string) {
	t.Helper()
	if st != status || !strings.HasSuffix(p.Type, "#"+typ) || p.Code != code {
		t.Errorf("%s: %d type %q code %q, want %d type #%s code %s", what, st, p.Type, p.Code, status, typ, code)
	}
}

// signupAdmin makes an administrator with the CLI and logs it in.
func signupAdmin(t *testing.T, srv *testenv.Server) *testenv.Client {
	t.Helper()
	email := fmt.Sprintf("admin-%d@example.com", time.Now().UnixNano())
	run(t, srv.Command("user", "create", "--data", srv.Data, "--email", email, "--password", "correct horse battery", "--admin"))
	c := testenv.NewClient(srv.URL)
	c.Email = email
	c.Login(t, "correct horse battery")
	return c
}

func run(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	return string(out)
}

type inviteResp struct {
	ID        string    `json:"id"`
	Code      string    `json:"code"`
	Email     string    `json:"email"`
	Uses      int       `json:"uses"`
	UsesLeft  int       `json:"uses_left"`
	ExpiresAt time.Time `json:"expires_at"`
	Revoked   bool      `json:"revoked"`
	State     string    `json:"state"`
}

func createInvite(t *testing.T, admin *testenv.Client, body map[string]any) inviteResp {
	t.Helper()
	var inv inviteResp
	if st := admin.JSON(t, "POST", "/api/v1/admin/invites", body, &inv); st != 201 || inv.Code == "" || inv.ID == "" {
		t.Fatalf("create invite %v: %d %+v", body, st, inv)
	}
	return inv
}

func TestSignupClosed(t *testing.T) {
	srv := testenv.Start(t, "--signup", "closed")
	st, p, _ := signupAs(t, srv, "", "someone@example.com", "")
	wantProblem(t, "signup", st, p, 403, "signup_closed", "permission_denied")
	if !strings.Contains(p.Detail, "closed") {
		t.Errorf("detail %q does not name the policy", p.Detail)
	}
	// Administrators still create accounts (CLI), and those log in.
	run(t, srv.Command("user", "create", "--data", srv.Data, "--email", "made@example.com", "--password", "correct horse battery"))
	c := testenv.NewClient(srv.URL)
	c.Email = "made@example.com"
	c.Login(t, "correct horse battery")
}

func TestSignupOpen(t *testing.T) {
	srv := testenv.Start(t) // open is the default
	if st, _, _ := signupAs(t, srv, "", "anyone@example.com", ""); st != 201 {
		t.Fatalf("open signup: %d", st)
	}
	// A code is optional, but one that is given is checked and redeemed.
	admin := signupAdmin(t, srv)
	inv := createInvite(t, admin, map[string]any{})
	if st, _, _ := signupAs(t, srv, "", "coded@example.com", inv.Code); st != 201 {
		t.Fatalf("open signup with a code: %d", st)
	}
	st, p, _ := signupAs(t, srv, "", "coded2@example.com", inv.Code)
	wantProblem(t, "open signup with a used-up code", st, p, 403, "invite_invalid", "permission_denied")
	// The README's first command, as written.
	if st, _, _ := signupAs(t, srv, "", "me@example.com", ""); st != 201 {
		t.Errorf("README signup: %d", st)
	}
	if strings.Contains(srv.Stderr(), "anyone who reaches this port") {
		t.Errorf("open signup on loopback warned:\n%s", srv.Stderr())
	}
}

func TestSignupInvite(t *testing.T) {
	srv := testenv.Start(t, "--signup", "invite")
	st, p, _ := signupAs(t, srv, "", "nocode@example.com", "")
	wantProblem(t, "signup without a code", st, p, 403, "invite_required", "permission_denied")

	admin := signupAdmin(t, srv)
	invalid := func(what, email, code string) {
		t.Helper()
		st, p, _ := signupAs(t, srv, "", email, code)
		wantProblem(t, what, st, p, 403, "invite_invalid", "permission_denied")
	}
	t.Run("SingleUse", func(t *testing.T) {
		inv := createInvite(t, admin, map[string]any{})
		if inv.Uses != 1 || inv.UsesLeft != 1 || inv.State != "active" || time.Until(inv.ExpiresAt) < 6*24*time.Hour {
			t.Errorf("default invite: %+v, want 1 use, 7 days", inv)
		}
		if st, _, _ := signupAs(t, srv, "", "first@example.com", inv.Code); st != 201 {
			t.Fatalf("signup with the code: %d", st)
		}
		invalid("used up", "second@example.com", inv.Code)
		c := testenv.NewClient(srv.URL)
		c.Email = "first@example.com"
		c.Login(t, "correct horse battery")
	})
	t.Run("MultiUse", func(t *testing.T) {
		inv := createInvite(t, admin, map[string]any{"uses": 3})
		for i := range 3 {
			if st, _, _ := signupAs(t, srv, "", fmt.Sprintf("multi%d@example.com", i), inv.Code); st != 201 {
				t.Fatalf("signup %d: %d", i+1, st)
			}
		}
		invalid("fourth use", "multi3@example.com", inv.Code)
	})
	t.Run("BoundEmail", func(t *testing.T) {
		inv := createInvite(t, admin, map[string]any{"email": "Bound@Example.com"})
		invalid("another email", "intruder@example.com", inv.Code)
		if st, _, _ := signupAs(t, srv, "", "bound@example.com", inv.Code); st != 201 {
			t.Errorf("the bound email: %d", st)
		}
	})
	t.Run("Revoked", func(t *testing.T) {
		inv := createInvite(t, admin, map[string]any{"uses": 5})
		if st := admin.JSON(t, "DELETE", "/api/v1/admin/invites/"+inv.ID, nil, nil); st != 204 {
			t.Fatalf("revoke: %d", st)
		}
		invalid("revoked", "late@example.com", inv.Code)
		if st := admin.JSON(t, "DELETE", "/api/v1/admin/invites/no-such-id", nil, nil); st != 404 {
			t.Errorf("revoke unknown: %d, want 404", st)
		}
	})
	t.Run("Expired", func(t *testing.T) {
		inv := createInvite(t, admin, map[string]any{"expires_in": 1})
		time.Sleep(1100 * time.Millisecond)
		invalid("expired", "slow@example.com", inv.Code)
	})
	t.Run("Unknown", func(t *testing.T) {
		invalid("unknown code", "guess@example.com", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
		// Checked before the email: no oracle for taken emails.
		invalid("unknown code, taken email", admin.Email, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	})
	t.Run("ConcurrentSingleUse", func(t *testing.T) {
		inv := createInvite(t, admin, map[string]any{})
		const n = 8
		sts := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				// Eight password hashes at once: on a busy machine the
				// server may shed some (503 with Retry-After, before the
				// code is touched); a client tries those again.
				for try := 0; ; try++ {
					st, _, after := signupAs(t, srv, "", fmt.Sprintf("racer%d@example.com", i), inv.Code)
					sts[i] = st
					if st != 503 || try == 20 {
						return
					}
					if after == "" {
						t.Errorf("racing signup: 503 without Retry-After")
						return
					}
					time.Sleep(200 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		won := 0
		for _, st := range sts {
			switch st {
			case 201:
				won++
			case 403:
			default:
				t.Errorf("racing signup: %d", st)
			}
		}
		if won != 1 {
			t.Errorf("%d racing signups got in with a single-use code (%v), want 1", won, sts)
		}
	})
	t.Run("List", func(t *testing.T) {
		var l struct{ Invites []inviteResp }
		if st := admin.JSON(t, "GET", "/api/v1/admin/invites", nil, &l); st != 200 || len(l.Invites) < 6 {
			t.Fatalf("list: %d, %d invites", st, len(l.Invites))
		}
		states := map[string]int{}
		for _, inv := range l.Invites {
			if inv.Code != "" {
				t.Errorf("list shows the code of %s", inv.ID)
			}
			states[inv.State]++
		}
		for _, s := range []string{"used_up", "revoked", "expired"} {
			if states[s] == 0 {
				t.Errorf("list has no %s invite: %v", s, states)
			}
		}
	})
	t.Run("NotForUsers", func(t *testing.T) {
		inv := createInvite(t, admin, map[string]any{})
		if st, _, _ := signupAs(t, srv, "", "plain@example.com", inv.Code); st != 201 {
			t.Fatal("signup")
		}
		u := testenv.NewClient(srv.URL)
		u.Email = "plain@example.com"
		u.Login(t, "correct horse battery")
		if st := u.JSON(t, "POST", "/api/v1/admin/invites", map[string]any{}, nil); st != 403 {
			t.Errorf("a user creating an invite: %d, want 403", st)
		}
		if st := testenv.NewClient(srv.URL).JSON(t, "GET", "/api/v1/admin/invites", nil, nil); st != 401 {
			t.Errorf("anonymous listing invites: %d, want 401", st)
		}
	})
}

// TestInviteCLI drives coffer invite create|list|revoke on the real
// binary and redeems its codes over the API.
func TestInviteCLI(t *testing.T) {
	srv := testenv.Start(t, "--signup", "invite")
	cli := func(args ...string) string {
		t.Helper()
		return run(t, srv.Command(append(append([]string{"invite"}, args...), "--data", srv.Data)...))
	}
	codeRE := regexp.MustCompile(`(?m)^code:\s+(\S+)$`)
	idRE := regexp.MustCompile(`(?m)^invite:\s+(\S+)$`)
	out := cli("create", "--uses", "2", "--expires", "2d", "--email", "cli@example.com")
	m, id := codeRE.FindStringSubmatch(out), idRE.FindStringSubmatch(out)
	if m == nil || id == nil || !strings.Contains(out, "uses:    2") {
		t.Fatalf("invite create printed:\n%s", out)
	}
	if st, _, _ := signupAs(t, srv, "", "other@example.com", m[1]); st != 403 {
		t.Errorf("another email with a bound CLI code: %d", st)
	}
	if st, _, _ := signupAs(t, srv, "", "cli@example.com", m[1]); st != 201 {
		t.Errorf("signup with the CLI's code: %d", st)
	}
	out = cli("create")
	m2, id2 := codeRE.FindStringSubmatch(out), idRE.FindStringSubmatch(out)
	if m2 == nil || id2 == nil {
		t.Fatalf("invite create printed:\n%s", out)
	}
	list := cli("list")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(id[1] + `\s+active\s+1/2\s+cli@example.com`),
		regexp.MustCompile(id2[1] + `\s+active\s+1/1\s+-`),
	} {
		if !want.MatchString(list) {
			t.Errorf("invite list lacks %s:\n%s", want, list)
		}
	}
	if strings.Contains(list, m[1]) || strings.Contains(list, m2[1]) {
		t.Errorf("invite list shows a code:\n%s", list)
	}
	if out := cli("revoke", "--id", id2[1]); !strings.Contains(out, "revoked") {
		t.Errorf("revoke printed %q", out)
	}
	if st, _, _ := signupAs(t, srv, "", "revoked@example.com", m2[1]); st != 403 {
		t.Errorf("signup with a revoked CLI code: %d", st)
	}
	if !regexp.MustCompile(id2[1] + `\s+revoked`).MatchString(cli("list")) {
		t.Errorf("revoked invite not listed as revoked")
	}
	cmd := srv.Command("invite", "revoke", "--data", srv.Data, "--id", "nope")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("revoking an unknown invite succeeded: %s", out)
	}
	cmd = srv.Command("invite", "create", "--data", srv.Data, "--uses", "0")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("an invite of 0 uses was created: %s", out)
	}
}

// TestSignupThrottleDefault: with the shipped defaults, the sixth signup
// from one address within the hour is refused with 429 and a Retry-After;
// another address still signs up.
func TestSignupThrottleDefault(t *testing.T) {
	srv := testenv.StartDefaults(t, "--trusted-proxies", "127.0.0.1")
	for i := range 5 {
		if st, p, _ := signupAs(t, srv, "198.51.100.7", fmt.Sprintf("flood%d@example.com", i), ""); st != 201 {
			t.Fatalf("signup %d: %d %+v", i+1, st, p)
		}
	}
	st, p, retry := signupAs(t, srv, "198.51.100.7", "flood5@example.com", "")
	ra, err := strconv.Atoi(retry)
	if st != 429 || p.Code != "rate_limited" || err != nil || ra <= 0 || ra > 3600 {
		t.Errorf("6th signup: %d %q Retry-After %q, want 429 rate_limited within the hour", st, p.Code, retry)
	}
	if st, _, _ := signupAs(t, srv, "203.0.113.9", "elsewhere@example.com", ""); st != 201 {
		t.Errorf("signup from another address: %d", st)
	}
	// IPv6 addresses count by /64.
	for i := range 5 {
		if st, _, _ := signupAs(t, srv, fmt.Sprintf("2001:db8:5:6::%x", i+1), fmt.Sprintf("six%d@example.com", i), ""); st != 201 {
			t.Fatalf("IPv6 signup %d: %d", i+1, st)
		}
	}
	if st, _, _ := signupAs(t, srv, "2001:db8:5:6:ffff::9", "six5@example.com", ""); st != 429 {
		t.Errorf("6th signup from one /64: %d", st)
	}
	// The CLI is not throttled.
	for i := range 3 {
		run(t, srv.Command("user", "create", "--data", srv.Data, "--email", fmt.Sprintf("cli%d@example.com", i), "--password", "correct horse battery"))
	}
}

// TestLoginStrangerCannotLockOwner: ten wrong passwords from one address
// lock that address out of the account, not the owner on theirs.
func TestLoginStrangerCannotLockOwner(t *testing.T) {
	srv := testenv.Start(t, append([]string{"--trusted-proxies", "127.0.0.1"}, cheapHashing...)...)
	owner := srv.NewUser(t)
	for i := range 10 {
		if st, p, _ := loginAs(t, srv, "198.51.100.7", owner.Email, fmt.Sprintf("guess number %d", i)); st != 401 || p.Code != "unauthenticated" {
			t.Fatalf("wrong password %d: %d %q", i+1, st, p.Code)
		}
	}
	st, p, retry := loginAs(t, srv, "198.51.100.7", owner.Email, "correct horse battery")
	if ra, err := strconv.Atoi(retry); st != 429 || p.Code != "rate_limited" || err != nil || ra <= 0 || ra > 15*60 {
		t.Errorf("right password from the stranger's address: %d %q Retry-After %q, want 429 within 15 min", st, p.Code, retry)
	}
	if st, _, _ := loginAs(t, srv, "203.0.113.9", owner.Email, "correct horse battery"); st != 200 {
		t.Errorf("the owner from another address: %d, want 200", st)
	}
	// IPv6: the stranger's whole /64 is one address.
	for i := range 10 {
		loginAs(t, srv, fmt.Sprintf("2001:db8:7:7::%x", i+1), owner.Email, "wrong password")
	}
	if st, _, _ := loginAs(t, srv, "2001:db8:7:7:ffff::1", owner.Email, "correct horse battery"); st != 429 {
		t.Errorf("another address of the stranger's /64: %d, want 429", st)
	}
	if st, _, _ := loginAs(t, srv, "2001:db8:7:8::1", owner.Email, "correct horse battery"); st != 200 {
		t.Errorf("the next /64: %d, want 200", st)
	}
}

// TestLoginPerAddressLimit: one address may fail 100 logins in 15 min
// across all accounts (unknown ones too), then it is refused for every
// account, while other addresses are not.
func TestLoginPerAddressLimit(t *testing.T) {
	srv := testenv.Start(t, append([]string{"--trusted-proxies", "127.0.0.1"}, cheapHashing...)...)
	owner := srv.NewUser(t)
	for i := range 100 {
		email := fmt.Sprintf("sprayed%d@example.com", i)
		if i%10 == 0 {
			email = owner.Email
		}
		if st, _, _ := loginAs(t, srv, "198.51.100.8", email, "spray password"); st != 401 {
			t.Fatalf("failure %d: %d, want 401", i+1, st)
		}
	}
	if st, _, retry := loginAs(t, srv, "198.51.100.8", "fresh@example.com", "spray password"); st != 429 || retry == "" {
		t.Errorf("101st failure from the address: %d Retry-After %q, want 429", st, retry)
	}
	if st, _, _ := loginAs(t, srv, "203.0.113.10", owner.Email, "correct horse battery"); st != 200 {
		t.Errorf("the owner from another address: %d", st)
	}
}

// TestLoginNoEnumeration: an unknown account and a wrong password answer
// with the same status and body (but the request ID).
func TestLoginNoEnumeration(t *testing.T) {
	srv := testenv.Start(t)
	known := srv.NewUser(t)
	var got []testenv.Problem
	var sts []int
	for _, email := range []string{known.Email, "nobody-" + known.Email} {
		st, p, _ := loginAs(t, srv, "", email, "wrong password")
		p.RequestID = ""
		got, sts = append(got, p), append(sts, st)
	}
	if sts[0] != 401 || sts[1] != 401 || fmt.Sprint(got[0]) != fmt.Sprint(got[1]) {
		t.Errorf("wrong password: %d %+v; unknown account: %d %+v", sts[0], got[0], sts[1], got[1])
	}
}

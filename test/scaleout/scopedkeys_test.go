package scaleout

import (
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestScopedRevokeReachesEveryNode: a scoped S3 key and an app token
// revoked through node 1 are refused by node 2 on the very next request,
// although node 2 had just verified (and cached) them, round after round;
// an expired scoped key and app token are refused by node 2 (which cached
// them) as soon as their expiry passes.
func TestScopedRevokeReachesEveryNode(t *testing.T) {
	b := testenv.NewBackends(t)
	n1, n2 := testenv.StartNode(t, b), testenv.StartNode(t, b)
	u := n1.NewUser(t)
	obj := "/" + u.Bucket + "/in/obj"
	scope := map[string]any{"bucket": u.Bucket, "prefix": "in/", "access": "read-write"}
	create := func(t *testing.T, expiresIn int) (id, secret, tokenID, token string) {
		t.Helper()
		body := map[string]any{"scope": scope}
		if expiresIn > 0 {
			body["expires_in"] = expiresIn
		}
		var k struct {
			ID     string `json:"access_key_id"`
			Secret string `json:"secret_access_key"`
		}
		if st := u.JSON(t, "POST", "/api/v1/keys", body, &k); st != 201 {
			t.Fatalf("create key: %d", st)
		}
		var tk struct{ ID, Token string }
		if st := u.JSON(t, "POST", "/api/v1/tokens", body, &tk); st != 201 {
			t.Fatalf("create token: %d", st)
		}
		return k.ID, k.Secret, tk.ID, tk.Token
	}
	onNode2 := func(token string) *testenv.Client {
		c := testenv.NewClient(n2.URL)
		c.Token = token
		return c
	}
	fileGet := func(c *testenv.Client) int {
		resp := c.Do(t, "GET", testenv.FileURL(u.Bucket, "in/obj"), nil)
		resp.Body.Close()
		return resp.StatusCode
	}

	stale := 0
	for i := range 20 {
		id, secret, tokenID, token := create(t, 0)
		if st := s3Status(t, n2.S3URL, "PUT", obj, id, secret, []byte("hello")); st != 200 {
			t.Fatalf("round %d: S3 PUT on node 2 with a new scoped key: %d", i, st)
		}
		if st := s3Status(t, n2.S3URL, "PUT", "/"+u.Bucket+"/out", id, secret, []byte("hello")); st != 403 {
			t.Fatalf("round %d: S3 PUT outside the scope on node 2: %d", i, st)
		}
		tc := onNode2(token)
		if st := fileGet(tc); st != 200 {
			t.Fatalf("round %d: file GET on node 2 with a new app token: %d", i, st)
		}
		if st := u.JSON(t, "DELETE", "/api/v1/keys/"+id, nil, nil); st != 204 {
			t.Fatalf("round %d: revoke the key via node 1: %d", i, st)
		}
		if st := u.JSON(t, "DELETE", "/api/v1/tokens/"+tokenID, nil, nil); st != 204 {
			t.Fatalf("round %d: revoke the token via node 1: %d", i, st)
		}
		if st := s3Status(t, n2.S3URL, "GET", obj, id, secret, nil); st != 403 {
			stale++
			t.Logf("round %d: node 2 answered %d with a revoked scoped key", i, st)
		}
		if st := fileGet(tc); st != 401 {
			stale++
			t.Logf("round %d: node 2 answered %d with a revoked app token", i, st)
		}
	}
	if stale > 0 {
		t.Errorf("%d of 40 requests with a just-revoked scoped key or app token were accepted by node 2", stale)
	}

	// The expiry is between before+2s and after+2s.
	before := time.Now()
	id, secret, _, token := create(t, 2)
	after := time.Now()
	st1, st2 := s3Status(t, n2.S3URL, "GET", obj, id, secret, nil), fileGet(onNode2(token))
	if time.Now().Before(before.Add(2*time.Second)) && (st1 != 200 || st2 != 200) {
		t.Errorf("node 2 before the expiry: S3 %d, file API %d", st1, st2)
	}
	time.Sleep(time.Until(after.Add(2*time.Second)) + 100*time.Millisecond) // past the expiry (a clock, not a latency)
	if st := s3Status(t, n2.S3URL, "GET", obj, id, secret, nil); st != 400 {
		t.Errorf("node 2 with an expired scoped key: S3 %d, want 400 ExpiredToken", st)
	}
	if st := fileGet(onNode2(token)); st != 401 {
		t.Errorf("node 2 with an expired app token: %d, want 401", st)
	}
}

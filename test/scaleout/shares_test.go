package scaleout

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestShareLinksAcrossNodes: a share link made on node 1 works on node 2
// (the token's hash is in PostgreSQL), a password grant from node 1 is
// accepted by node 2 (signed with the shared server key), the download
// limit holds across both nodes, and disabling the owner through node 1
// stops the link on node 2 at once (the cached account state).
func TestShareLinksAcrossNodes(t *testing.T) {
	b := testenv.NewBackends(t)
	n1, n2 := testenv.StartNode(t, b), testenv.StartNode(t, b)
	admin := testenv.NewClient(n1.URL)
	admin.Email = "admin@example.com"
	if out, err := n1.Command("user", "create", "--email", admin.Email, "--password", "admin password", "--admin").CombinedOutput(); err != nil {
		t.Fatalf("coffer user create --admin: %v\n%s", err, out)
	}
	admin.Login(t, "admin password")
	u := n1.NewUser(t)
	var me struct{ ID string }
	if st := u.JSON(t, "GET", "/api/v1/me", nil, &me); st != 200 {
		t.Fatal("me")
	}
	body := []byte("shared across nodes")
	if resp := u.Do(t, "PUT", testenv.FileURL(u.Bucket, "f.txt"), bytes.NewReader(body)); resp.StatusCode != 201 {
		t.Fatalf("put: %d", resp.StatusCode)
	}
	var limited, locked struct {
		URL string `json:"url"`
	}
	if st := u.JSON(t, "POST", "/api/v1/shares", map[string]any{"bucket": u.Bucket, "key": "f.txt", "max_downloads": 3}, &limited); st != 201 {
		t.Fatalf("share: %d", st)
	}
	if st := u.JSON(t, "POST", "/api/v1/shares", map[string]any{"bucket": u.Bucket, "key": "f.txt", "password": "pw across nodes"}, &locked); st != 201 {
		t.Fatalf("locked share: %d", st)
	}
	get := func(base, path string, hdr ...string) (int, []byte) {
		t.Helper()
		resp := testenv.NewClient(base).Do(t, "GET", path, nil, hdr...)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	// Three downloads across both nodes, then the limit on either.
	for i, base := range []string{n2.URL, n1.URL, n2.URL} {
		if st, data := get(base, limited.URL); st != 200 || !bytes.Equal(data, body) {
			t.Fatalf("download %d: %d %q", i+1, st, data)
		}
	}
	for _, base := range []string{n1.URL, n2.URL} {
		if st, _ := get(base, limited.URL); st != 404 {
			t.Errorf("a fourth download: %d, want 404", st)
		}
	}
	// A grant from node 1 opens the link on node 2.
	var grant struct {
		Grant string `json:"grant"`
	}
	resp := testenv.NewClient(n1.URL).Do(t, "POST", locked.URL+"/unlock", bytes.NewReader([]byte(`{"password":"pw across nodes"}`)), "Content-Type", "application/json")
	if err := jsonDecode(resp, &grant); err != nil || resp.StatusCode != 200 {
		t.Fatalf("unlock on node 1: %d %v", resp.StatusCode, err)
	}
	if st, _ := get(n2.URL, locked.URL, "X-Share-Grant", grant.Grant); st != 200 {
		t.Errorf("node 1's grant on node 2: %d, want 200", st)
	}
	// Disabling the owner on node 1 stops the link on node 2 (which has
	// just served it, so its account cache holds the owner).
	if st := admin.JSON(t, "POST", "/api/v1/admin/users/"+me.ID+"/disable", nil, nil); st != 200 {
		t.Fatalf("disable: %d", st)
	}
	if st, data := get(n2.URL, locked.URL, "X-Share-Grant", grant.Grant); st != 404 || bytes.Contains(data, body) {
		t.Errorf("the disabled owner's link on node 2: %d %q, want 404", st, data)
	}
}

func jsonDecode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

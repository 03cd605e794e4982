package scaleout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/testbackend"
	"github.com/coffer-storage/coffer/test/testenv"
)

// withoutKey is env without COFFER_SERVER_KEY_FILE.
func withoutKey(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "COFFER_SERVER_KEY_FILE=") {
			out = append(out, e)
		}
	}
	return out
}

// coffer runs a coffer command in dir with env added to the environment.
func coffer(t *testing.T, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestAdminCommandsScaleOut: on the scale-out shape, with only COFFER_META
// and COFFER_BLOB (as operations.md's "first administrator" says), every
// admin command that seals no S3 secret works and neither reads nor
// records a server key: the first administrator before any node ran,
// quotas, roles, invites, gc, kms status, key list. key create needs the
// cluster's key file and refuses without it (or with another key). No
// command makes a data folder (./coffer-data was left behind, issue 17),
// and a node with the cluster's key starts afterwards.
func TestAdminCommandsScaleOut(t *testing.T) {
	b := testenv.NewBackends(t)
	noKey := withoutKey(b.Env)
	dir := t.TempDir()
	const admin = "first-admin@example.com"
	for _, args := range [][]string{
		{"user", "create", "--email", admin, "--password", "admin password", "--admin"},
		{"user", "create", "--email", "second@example.com", "--password", "second password"},
		{"user", "quota", "--email", "second@example.com", "--bytes", "10GiB"},
		{"user", "admin", "--email", "second@example.com", "--on"},
		{"user", "disable", "--email", "second@example.com"},
		{"user", "enable", "--email", "second@example.com"},
		{"user", "password", "--email", "second@example.com", "--password", "another password"},
		{"invite", "create", "--uses", "2"},
		{"invite", "list"},
		{"key", "list", "--email", admin},
		{"gc"},
		{"kms", "status"},
		{"encrypt", "--all"},
		{"user", "delete", "--email", "second@example.com", "--purge"},
	} {
		if out, err := coffer(t, dir, noKey, args...); err != nil {
			t.Errorf("coffer %s without a server key: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out, err := coffer(t, dir, noKey, "key", "create", "--email", admin)
	if err == nil || !strings.Contains(out, "--server-key-file") {
		t.Errorf("key create without the cluster's key: %v, want a refusal naming --server-key-file\n%s", err, out)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("the admin commands left %v in their working folder", es)
	}

	// The commands bound the store to no key of their own: a node with
	// the cluster's key starts, and the administrator made by the CLI
	// logs in.
	n := testenv.StartNode(t, b)
	c := testenv.NewClient(n.URL)
	c.Email = admin
	c.Login(t, "admin password")
	if st := c.JSON(t, "GET", "/api/v1/admin/users", nil, nil); st != 200 {
		t.Errorf("the CLI's first administrator: GET /admin/users %d, want 200", st)
	}
	// key create with the cluster's key: the secret works on the node.
	out, err = coffer(t, dir, b.Env, "key", "create", "--email", admin, "--name", "cli")
	if err != nil {
		t.Fatalf("key create with the cluster's key: %v\n%s", err, out)
	}
	id := regexp.MustCompile(`access_key_id:\s+(\S+)`).FindStringSubmatch(out)
	secret := regexp.MustCompile(`secret_access_key:\s+(\S+)`).FindStringSubmatch(out)
	if id == nil || secret == nil {
		t.Fatalf("key create printed no key:\n%s", out)
	}
	if st := s3Status(t, n.S3URL, "GET", "/", id[1], secret[1], nil); st != 200 {
		t.Errorf("S3 ListBuckets with the CLI's key: %d, want 200", st)
	}
	// With another key file it is refused, as a node would be.
	other := writeKey(t)
	if out, err := coffer(t, dir, append(noKey, "COFFER_SERVER_KEY_FILE="+other), "key", "create", "--email", admin); err == nil ||
		!strings.Contains(out, "initialised with a different server key") {
		t.Errorf("key create with another key: %v\n%s", err, out)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("the admin commands left %v in their working folder", es)
	}
}

// TestFailedStartScaleOut: a node that cannot reach its S3 store fails
// before it makes its data folder and before the metadata store records
// its server key, so a node with another key may still be the first.
func TestFailedStartScaleOut(t *testing.T) {
	b := testenv.NewBackends(t)
	data := filepath.Join(t.TempDir(), "node-data")
	n := launch(t, b.Env, "--data", data, "--blob", "s3://coffer-missing?endpoint=http://127.0.0.1:1")
	if serving, _ := n.outcome(t); serving {
		t.Fatal("a node without its S3 store serves")
	}
	if !strings.Contains(n.Stderr(), "opening blob store") {
		t.Errorf("stderr does not name the blob store:\n%s", n.Stderr())
	}
	if _, err := os.Stat(data); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the failed start made its data folder: %v", err)
	}
	other := writeKey(t)
	n2 := launch(t, b.Env, "--server-key-file", other)
	if serving, err := n2.outcome(t); !serving {
		t.Errorf("after a failed start, a node with another key: %v\n%s", err, n2.Stderr())
	}
}

// TestOperationsDatabaseRecipe: the role and database operations.md tells
// the operator to create (CREATE USER …; CREATE DATABASE … OWNER …)
// suffice: a node connecting as that role, no superuser, runs the
// migrations and serves.
func TestOperationsDatabaseRecipe(t *testing.T) {
	b := testenv.NewBackends(t)
	name := "coffer_" + strings.ToLower(testbackend.RandomHex(4))
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, b.PG.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, sql := range []string{
		"CREATE USER " + name + " WITH PASSWORD 'role password'",
		"CREATE DATABASE " + name + " OWNER " + name,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, b.PG.URL("postgres"))
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		conn.Exec(ctx, "DROP USER IF EXISTS "+name)
	})
	meta := url.URL{Scheme: "postgres", User: url.UserPassword(name, "role password"), Host: fmt.Sprintf("127.0.0.1:%d", b.PG.Port),
		Path: "/" + name, RawQuery: "sslmode=disable"}
	env := []string{"COFFER_META=" + meta.String()}
	for _, e := range b.Env {
		if !strings.HasPrefix(e, "COFFER_META=") {
			env = append(env, e)
		}
	}
	b.Env = env
	n := testenv.StartNode(t, b)
	c := n.NewUser(t)
	if st := put(t, c, "k", []byte("owned by the role")); st != 201 {
		t.Fatalf("PUT: %d", st)
	}
	if st, got := get(t, c, "k"); st != 200 || string(got) != "owned by the role" {
		t.Errorf("GET: %d %q", st, got)
	}
}

package scaleout

import (
	"fmt"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestThrottlesAcrossNodes: failed logins and signups spread over two
// nodes on one PostgreSQL are counted together, so the limits trip as on
// one node: 5 signups per address per hour (--signup-rate 5/h), then 429
// on either node; 10 failed logins per (account, address) (the default),
// then 429 on either node, even with the right password. Before, each
// node counted only its own attempts: a client alternating between two
// nodes got twice as many.
func TestThrottlesAcrossNodes(t *testing.T) {
	b := testenv.NewBackends(t)
	nodes := []*testenv.Server{testenv.StartNode(t, b, "--signup-rate", "5/h"), testenv.StartNode(t, b, "--signup-rate", "5/h")}
	const password = "correct horse battery"
	signup := func(n *testenv.Server, email string) int {
		return testenv.NewClient(n.URL).JSON(t, "POST", "/api/v1/auth/signup", map[string]string{"email": email, "password": password}, nil)
	}
	login := func(n *testenv.Server, email, password string) int {
		return testenv.NewClient(n.URL).JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": email, "password": password}, nil)
	}
	for i := range 5 {
		if st := signup(nodes[i%2], fmt.Sprintf("u%d@example.com", i)); st != 201 {
			t.Fatalf("signup %d via node %d: %d, want 201", i+1, i%2+1, st)
		}
	}
	for i, n := range nodes {
		if st := signup(n, fmt.Sprintf("late%d@example.com", i)); st != 429 {
			t.Errorf("6th signup from one address, via node %d: %d, want 429", i+1, st)
		}
	}
	for i := range 10 {
		if st := login(nodes[i%2], "u0@example.com", "wrong password"); st != 401 {
			t.Fatalf("failed login %d via node %d: %d, want 401", i+1, i%2+1, st)
		}
	}
	for i, n := range nodes {
		if st := login(n, "u0@example.com", password); st != 429 {
			t.Errorf("login after 10 failures over two nodes, via node %d: %d, want 429", i+1, st)
		}
	}
	// Another account from the same address is not locked by u0's
	// failures (the per-address limit is 100).
	if st := login(nodes[1], "u1@example.com", password); st != 200 {
		t.Errorf("another account's login: %d, want 200", st)
	}
}

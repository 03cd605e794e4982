package faults

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// netns puts every node in its own network namespace, joined by a veth
// pair to a bridge of the test's own in the root namespace, where the
// clients and the backends' proxies are (on the bridge's address). A
// node's link can be cut (`ip link set DEV down`): a silent partition of
// the node from everything, clients included. PostgreSQL and MinIO stay in
// the root namespace, behind the per-node proxies (their faults). Names
// carry a random id, so parallel runs never collide; everything is
// removed at cleanup, also after a failure (and by the next run, if the
// test process was killed before its cleanup).
type netns struct {
	id     string
	bridge string
	hostIP string   // the bridge's address: the proxies listen there
	ns     []string // a namespace per node
	ip     []string // the node's address in its namespace
	link   []string // the root end of the node's veth pair (on the bridge)
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// setupNetns makes the namespaces, or says why it cannot.
func setupNetns(t *testing.T, nodes int) (*netns, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("not root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, err
	}
	sweepNetns()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	n := &netns{id: id, bridge: "cf" + id + "b"}
	// A /24 in 10.128.0.0/9 from the id: parallel runs differ.
	subnet := fmt.Sprintf("10.%d.%d", 128+int(b[0])%100, b[1])
	n.hostIP = subnet + ".1"
	t.Cleanup(n.remove)
	steps := [][]string{
		{"link", "add", "name", n.bridge, "type", "bridge"},
		{"addr", "add", n.hostIP + "/24", "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	}
	for i := range nodes {
		ns := fmt.Sprintf("coffer-faults-%d-%s-n%d", os.Getpid(), id, i)
		root, peer := fmt.Sprintf("cf%sn%dr", id, i), fmt.Sprintf("cf%sn%dp", id, i)
		ip := fmt.Sprintf("%s.%d", subnet, 10+i)
		n.ns, n.ip, n.link = append(n.ns, ns), append(n.ip, ip), append(n.link, root)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"link", "add", root, "type", "veth", "peer", "name", peer},
			[]string{"link", "set", peer, "netns", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"-n", ns, "addr", "add", ip + "/24", "dev", peer},
			[]string{"-n", ns, "link", "set", peer, "up"},
			[]string{"link", "set", root, "master", n.bridge},
			[]string{"link", "set", root, "up"},
		)
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// nsRE matches the namespaces of this harness: the test process's ID,
// the run's id, the node.
var nsRE = regexp.MustCompile(`^coffer-faults-(\d+)-([0-9a-f]{6})-n\d+$`)

// sweepNetns removes what runs killed before their cleanup (a test
// timeout) left: the namespaces of processes that no longer exist, and
// their bridges.
func sweepNetns() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		m := nsRE.FindStringSubmatch(f[0])
		if m == nil {
			continue
		}
		if pid, _ := strconv.Atoi(m[1]); syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = ipCmd("netns", "del", m[0])
			_ = ipCmd("link", "del", "cf"+m[2]+"b")
		}
	}
}

// remove deletes the namespaces (their veth pairs go with them) and the
// bridge. Processes in a namespace are killed before (cleanups run last
// registered first, and the nodes start after the namespaces).
func (n *netns) remove() {
	for _, ns := range n.ns {
		_ = ipCmd("netns", "del", ns)
	}
	for _, l := range n.link {
		_ = ipCmd("link", "del", l) // gone with its namespace, normally
	}
	_ = ipCmd("link", "del", n.bridge)
}

// wrap is the command running a node in namespace i.
func (n *netns) wrap(i int) []string { return []string{"ip", "netns", "exec", n.ns[i]} }

// setLink takes node i's link down (a partition from everything) or up.
func (n *netns) setLink(i int, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return ipCmd("link", "set", n.link[i], state)
}

package jepsen

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The network the nodes live on: a bridge in the root namespace with the
// test's address, and one namespace per node joined to it by a veth pair.
// The subnet is private and collides with neither docker's defaults nor the
// compose file's 172.29.147.0/24.
const (
	bridgeName = "pjbr0"
	bridgeCIDR = "10.213.7.1/24"
	subnetBits = "/24"
	ruleTag    = "pastenode-jepsen"
	lockPath   = "/run/pastenode-jepsen.lock"
)

func nsName(i int) string   { return fmt.Sprintf("pjns%d", i) }
func hostVeth(i int) string { return fmt.Sprintf("pjv%dh", i) }
func nodeVeth(i int) string { return fmt.Sprintf("pjv%dn", i) }
func nodeIP(i int) string   { return fmt.Sprintf("10.213.7.%d", 10+i) }

// run runs a command and returns its combined output on failure.
func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNS runs a command inside node i's namespace.
func inNS(i int, args ...string) error {
	return run(append([]string{"ip", "netns", "exec", nsName(i)}, args...)...)
}

// forwardRule lets frames cross the bridge although docker sets FORWARD to
// DROP and bridged traffic goes through iptables (br_netfilter).
var forwardRule = []string{"FORWARD", "-i", bridgeName, "-o", bridgeName, "-m", "comment", "--comment", ruleTag, "-j", "ACCEPT"}

// lockNetwork serializes runs on this machine: the names are fixed, and the
// sweep of one run would tear down another's network.
func lockNetwork(t *testing.T) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("lock %s: %v", lockPath, err)
	}
	t.Cleanup(func() { f.Close() }) // closing releases the lock
}

// setupNetwork sweeps leftovers of earlier runs, then creates the bridge,
// the namespaces and the veth pairs for n nodes. Everything is removed in
// t.Cleanup, which also runs when the test fails or panics.
func setupNetwork(t *testing.T, n int) {
	lockNetwork(t)
	sweepNetwork(n)
	t.Cleanup(func() { sweepNetwork(n) })
	steps := [][]string{
		{"ip", "link", "add", bridgeName, "type", "bridge"},
		{"ip", "addr", "add", bridgeCIDR, "dev", bridgeName},
		{"ip", "link", "set", bridgeName, "up"},
		append([]string{"iptables", "-I"}, forwardRule...),
	}
	for i := 1; i <= n; i++ {
		steps = append(steps,
			[]string{"ip", "netns", "add", nsName(i)},
			[]string{"ip", "link", "add", hostVeth(i), "type", "veth", "peer", "name", nodeVeth(i)},
			[]string{"ip", "link", "set", nodeVeth(i), "netns", nsName(i)},
			[]string{"ip", "link", "set", hostVeth(i), "master", bridgeName},
			[]string{"ip", "link", "set", hostVeth(i), "up"},
			[]string{"ip", "-n", nsName(i), "addr", "add", nodeIP(i) + subnetBits, "dev", nodeVeth(i)},
			[]string{"ip", "-n", nsName(i), "link", "set", nodeVeth(i), "up"},
			[]string{"ip", "-n", nsName(i), "link", "set", "lo", "up"},
		)
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			t.Fatalf("network setup: %v", err)
		}
	}
}

// sweepNetwork removes whatever this test may have left: processes in its
// namespaces, the namespaces (and with them their iptables rules and veth
// ends), the bridge and the FORWARD rules. Errors mean "not there".
func sweepNetwork(n int) {
	for i := 1; i <= n+2; i++ {
		if out, err := exec.Command("ip", "netns", "pids", nsName(i)).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		_ = run("ip", "netns", "del", nsName(i))
		_ = run("ip", "link", "del", hostVeth(i))
	}
	_ = run("ip", "link", "del", bridgeName)
	for k := 0; k < 10 && run(append([]string{"iptables", "-D"}, forwardRule...)...) == nil; k++ {
	}
}

// isolate cuts node i off from its peers inside its own namespace, in both
// directions, while the test's clients (on the bridge address) still reach
// it: a partitioned node keeps answering, which is what G3 is about.
func isolate(i, n int) error {
	for j := 1; j <= n; j++ {
		if j == i {
			continue
		}
		for _, rule := range [][]string{{"INPUT", "-s", nodeIP(j)}, {"OUTPUT", "-d", nodeIP(j)}} {
			args := append([]string{"iptables", "-A"}, rule...)
			if err := inNS(i, append(args, "-j", "DROP")...); err != nil {
				return err
			}
		}
	}
	return nil
}

// heal removes node i's partition rules.
func heal(i int) error {
	if err := inNS(i, "iptables", "-F", "INPUT"); err != nil {
		return err
	}
	return inNS(i, "iptables", "-F", "OUTPUT")
}

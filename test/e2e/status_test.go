package e2e

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer a process writes while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStatusShowsEveryNode checks pastectl status against a real 3-node
// cluster: every member answers for itself with the version --version
// prints, a killed node shows up at once as unreachable and not
// answering with exit 3, in members too, and --watch redraws until
// interrupted.
func TestStatusShowsEveryNode(t *testing.T) {
	nodes := startCluster(t, "st", 3)
	eventually(t, 20*time.Second, "one leader, all caught up", func() error {
		r := pastectl(t, nodes[0].URL, nil, "status")
		if r.code != 0 {
			return fmt.Errorf("exit %d: %s%s", r.code, r.stdout, r.stderr)
		}
		return nil
	})
	r := pastectl(t, nodes[1].URL, nil, "status")
	version := strings.Join(strings.Fields(strings.TrimPrefix(run(t, "pastenode", nil, nil, "--version").stdout, "pastenode version ")), " ")
	for _, p := range nodes {
		line := rowOf(r.stdout, p.id)
		// Every member answered for itself: version, uptime and ready.
		if !strings.Contains(line, " "+version+" ") || !strings.HasSuffix(line, "yes") {
			t.Errorf("row of %s: %q, want its own answer (version %s, ready yes)\n%s", p.id, line, version, r.stdout)
		}
	}

	leader, err := leaderOf(t, nodes)
	if err != nil {
		t.Fatal(err)
	}
	var down, asked *proc
	for _, p := range nodes {
		if p.id != leader && down == nil {
			down = p
		} else if asked == nil || p.id == leader {
			asked = p
		}
	}
	down.kill()
	// The leader's Raft finds it gone within a heartbeat or two, long
	// before gossip's probes would.
	eventually(t, 2*time.Second, "members shows the killed node unreachable", func() error {
		r := pastectl(t, asked.URL, nil, "members")
		if row := rowOf(r.stdout, down.id); !strings.Contains(row, " unreachable ") {
			return fmt.Errorf("row %q", row)
		}
		return nil
	})
	r = pastectl(t, asked.URL, nil, "status")
	if r.code != 3 || !strings.Contains(r.stderr, "degraded: "+down.id+": voter not answering") {
		t.Fatalf("status with %s down: exit %d stderr %q, want 3 and the voter not answering\n%s", down.id, r.code, r.stderr, r.stdout)
	}
	if row := rowOf(r.stdout, down.id); !strings.HasSuffix(row, "- - - - - - - -") || !strings.Contains(row, " unreachable ") ||
		!strings.Contains(r.stdout, down.id+": no answer: ") {
		t.Errorf("row of the killed %s: %q, want it unreachable, dashes and a note why\n%s", down.id, row, r.stdout)
	}

	cmd := exec.Command(binary(t, "pastectl"), "--addr", asked.URL, "status", "--watch")
	cmd.Env = cleanEnv()
	var out lockedBuffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "--watch draws the table twice", func() error {
		if n := strings.Count(out.String(), "commit index:"); n < 2 {
			return fmt.Errorf("%d tables so far", n)
		}
		return nil
	})
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("--watch after SIGINT: %v, want exit 0", err)
	}
}

// rowOf returns the table row of member id, fields joined by one space,
// without the leader mark.
func rowOf(out, id string) string {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "*"))
		if len(f) > 0 && f[0] == id {
			return strings.Join(f, " ")
		}
	}
	return ""
}

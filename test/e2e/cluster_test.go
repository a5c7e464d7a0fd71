package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clusterTimeScale is the Raft time scale of cluster nodes: slower than a
// lone node's 0.1, so that a busy machine running several clusters at once
// does not start spurious elections.
const clusterTimeScale = "0.3"

// newNode prepares a cluster node named id; it does not start it.
func newNode(t *testing.T, id string, args ...string) *proc {
	t.Helper()
	p := newProc(t, args...)
	p.id = id
	p.env = []string{"PASTE_RAFT_TIME_SCALE=" + clusterTimeScale} // the last value wins
	return p
}

// startCluster starts n nodes named prefix1..prefixN with --bootstrap-expect
// n, each joining the first one's gossip address, in reverse order, and
// waits until every node is ready.
func startCluster(t *testing.T, prefix string, n int, args ...string) []*proc {
	t.Helper()
	nodes := make([]*proc, n)
	for i := range nodes {
		nodes[i] = newNode(t, fmt.Sprintf("%s%d", prefix, i+1), args...)
	}
	for _, p := range nodes {
		p.args = slices.Concat(args, []string{"--join", nodes[0].gossip, "--bootstrap-expect", strconv.Itoa(n)})
	}
	for _, p := range slices.Backward(nodes) {
		p.start()
	}
	for _, p := range nodes {
		p.waitReady()
	}
	return nodes
}

// clusterStatus is what `pastectl -o json status` prints: GET
// /api/v1/status, with the field names of the contract.
type clusterStatus struct {
	Node struct {
		ID       string `json:"id"`
		State    string `json:"state"`
		LeaderID string `json:"leader_id"`
	} `json:"node"`
	Members []member `json:"members"`
}

// member is one row of clusterStatus.Members.
type member struct {
	ID       string `json:"id"`
	APIAddr  string `json:"api_addr"`
	Suffrage string `json:"suffrage"`
	Gossip   string `json:"gossip"`
	Leader   bool   `json:"leader"`
}

// suffrage returns the suffrage of member id, or "" if it is not listed.
func (st clusterStatus) suffrage(id string) string {
	for _, m := range st.Members {
		if m.ID == id {
			return m.Suffrage
		}
	}
	return ""
}

// viewOf runs `pastectl -o json status` against p and returns what it
// printed, with or without a leader; the error means no JSON (the node is
// down).
func viewOf(t *testing.T, p *proc) (clusterStatus, result, error) {
	t.Helper()
	var st clusterStatus
	r := pastectl(t, p.URL, nil, "-o", "json", "status")
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		return st, r, fmt.Errorf("%s: status exit %d, stderr %q: %v", p.id, r.code, r.stderr, err)
	}
	return st, r, nil
}

// statusOf is viewOf for polling: it is an error too when p knows no leader.
func statusOf(t *testing.T, p *proc) (clusterStatus, error) {
	t.Helper()
	st, r, err := viewOf(t, p)
	if err != nil {
		return st, err
	}
	if st.Node.LeaderID == "" {
		return st, fmt.Errorf("%s knows no leader (exit %d)", p.id, r.code)
	}
	if r.code != 0 && r.code != 3 { // 3: degraded, with a leader
		return st, fmt.Errorf("%s: status exit %d with leader %s: %s", p.id, r.code, st.Node.LeaderID, r.stderr)
	}
	return st, nil
}

// leaderOf returns the leader that every node of nodes agrees on.
func leaderOf(t *testing.T, nodes []*proc) (string, error) {
	t.Helper()
	leader := ""
	for _, p := range nodes {
		st, err := statusOf(t, p)
		if err != nil {
			return "", err
		}
		if leader != "" && st.Node.LeaderID != leader {
			return "", fmt.Errorf("%s sees leader %s, another node %s", p.id, st.Node.LeaderID, leader)
		}
		leader = st.Node.LeaderID
	}
	return leader, nil
}

// gossipAlive reports whether every node's status shows every node of
// nodes alive in gossip.
func gossipAlive(t *testing.T, nodes []*proc) error {
	t.Helper()
	for _, p := range nodes {
		st, err := statusOf(t, p)
		if err != nil {
			return err
		}
		for _, q := range nodes {
			if i := slices.IndexFunc(st.Members, func(m member) bool { return m.ID == q.id }); i < 0 || st.Members[i].Gossip != "alive" {
				return fmt.Errorf("%s does not see %s alive in gossip: %+v", p.id, q.id, st.Members)
			}
		}
	}
	return nil
}

// byID returns the node of nodes named id.
func byID(t *testing.T, nodes []*proc, id string) *proc {
	t.Helper()
	for _, p := range nodes {
		if p.id == id {
			return p
		}
	}
	t.Fatalf("no node %q", id)
	return nil
}

// statusTable reads the table of `pastectl status`: the member ids in
// order, and the ids of the rows marked * as the leader.
func statusTable(out string) (ids, marked []string) {
	table, _, _ := strings.Cut(out, "\n\n")
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] == "ID" {
			continue
		}
		if f[0] == "*" {
			if f[3] == "leader" { // *, id, address, role
				marked = append(marked, f[1])
			}
			f = f[1:]
		}
		ids = append(ids, f[0])
	}
	return ids, marked
}

// pastes is what the story created through pastectl: id → content.
type pastes map[string][]byte

// put creates content through pastectl at p and records it.
func (ps pastes) put(t *testing.T, p *proc, content []byte) {
	t.Helper()
	r := pastectl(t, p.URL, content, "put")
	u := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(u, "http") {
		t.Fatalf("put via %s: got exit %d stdout %q stderr %q, want 0 and a URL", p.id, r.code, r.stdout, r.stderr)
	}
	ps[u[strings.LastIndex(u, "/")+1:]] = content
}

// readableOn checks, without retries, that every paste is readable
// byte-exact through pastectl on every node of nodes.
func (ps pastes) readableOn(t *testing.T, nodes ...*proc) {
	t.Helper()
	for id, content := range ps {
		for _, p := range nodes {
			if r := pastectl(t, p.URL, nil, "get", id); r.code != 0 || r.stdout != string(content) {
				t.Errorf("get %s via %s: got exit %d stdout %q stderr %q, want %q", id, p.id, r.code, r.stdout, r.stderr, content)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

func TestClusterStory(t *testing.T) {
	t.Parallel()
	key := make([]byte, 16)
	rand.Read(key)
	const token = "story-admin-token"
	common := []string{"--cluster-key", base64.StdEncoding.EncodeToString(key), "--admin-token", token}
	nodes := startCluster(t, "story", 3, common...)
	n1, n2 := nodes[0], nodes[1]

	// The table, as an operator reads it.
	r := pastectl(t, n2.URL, nil, "status")
	ids, marked := statusTable(r.stdout)
	if r.code != 0 || !slices.Equal(ids, []string{"story1", "story2", "story3"}) || len(marked) != 1 {
		t.Fatalf("status via story2: got exit %d, ids %v, leader rows %v, want 0, all three and one leader\n%s%s",
			r.code, ids, marked, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "leader: "+marked[0]+" (asked story2)") {
		t.Errorf("status footer does not name the marked leader %s:\n%s", marked[0], r.stdout)
	}
	st, err := statusOf(t, n2)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Members) != 3 {
		t.Fatalf("status -o json: got %d members, want 3: %+v", len(st.Members), st.Members)
	}
	for _, m := range st.Members {
		if m.Suffrage != "voter" || m.Gossip != "alive" || m.APIAddr == "" {
			t.Errorf("member %s: got suffrage %q gossip %q api %q, want an alive voter with an address", m.ID, m.Suffrage, m.Gossip, m.APIAddr)
		}
		if m.Leader != (m.ID == marked[0]) {
			t.Errorf("member %s: leader %v, but the table marks %s", m.ID, m.Leader, marked[0])
		}
	}

	// Read-your-writes from anywhere, with no polling.
	ps := pastes{}
	for i, p := range nodes {
		ps.put(t, p, fmt.Appendf([]byte{0, 0xff, '\n'}, "paste %d via %s\n", i, p.id))
	}
	ps.readableOn(t, nodes...)

	// Crash the leader: the other two elect a new one and take writes.
	old := byID(t, nodes, marked[0])
	old.kill()
	t.Logf("SIGKILL the leader %s", old.id)
	var survivors []*proc
	for _, p := range nodes {
		if p != old {
			survivors = append(survivors, p)
		}
	}
	eventually(t, 20*time.Second, "a new leader after SIGKILL of "+old.id, func() error {
		leader, err := leaderOf(t, survivors)
		if err == nil && leader == old.id {
			err = fmt.Errorf("the survivors still follow the killed %s", old.id)
		}
		if err == nil {
			t.Logf("new leader %s", leader)
		}
		return err
	})
	for _, p := range survivors {
		ps.put(t, p, []byte("after the crash via "+p.id+"\n"))
	}
	ps.readableOn(t, survivors...)

	// The crashed node comes back and has everything once ready.
	old.restart()
	ps.readableOn(t, old)
	// Gossip heals at once too: the restarted node rejoins the peers it
	// remembers even when its only --join seed is itself (the first node,
	// as in the README), so a node joined through it is seen by the leader.
	healed := time.Now()
	eventually(t, 10*time.Second, "every node sees the others alive in gossip", func() error {
		return gossipAlive(t, nodes)
	})
	t.Logf("gossip healed %s after %s was ready", time.Since(healed).Round(100*time.Millisecond), old.id)

	// A fourth node, joined by pastectl, is promoted to voter.
	n4 := newNode(t, "story4", slices.Concat(common, []string{"--bootstrap-expect", "0"})...)
	n4.start()
	n4.waitOK("/healthz")
	if r := pastectl(t, n4.URL, nil, "--admin-token", token, "join", n1.gossip); r.code != 0 {
		t.Fatalf("join: got exit %d stderr %q, want 0", r.code, r.stderr)
	}
	eventually(t, 30*time.Second, "story4 a voter", func() error {
		st, err := statusOf(t, n1)
		if s := st.suffrage("story4"); err == nil && s != "voter" {
			err = fmt.Errorf("story4 has suffrage %q", s)
		}
		return err
	})
	t.Log("story4 is a voter")
	n4.waitReady()
	ps.readableOn(t, n4)

	// Removal goes through a follower, needs the admin token, and sticks.
	leader, err := leaderOf(t, nodes)
	if err != nil {
		t.Fatal(err)
	}
	follower := n1
	if leader == n1.id {
		follower = n2
	}
	if r := pastectl(t, follower.URL, nil, "remove", "story4"); r.code != 1 || !strings.Contains(r.stderr, "401") {
		t.Fatalf("remove without the admin token: got exit %d stderr %q, want 1 and a 401", r.code, r.stderr)
	}
	if r := pastectl(t, follower.URL, nil, "--admin-token", token, "remove", "story4"); r.code != 0 {
		t.Fatalf("remove via %s: got exit %d stderr %q, want 0", follower.id, r.code, r.stderr)
	}
	// Only a listing counts, not a moment without a leader.
	out := func() error {
		for _, p := range nodes {
			st, _, err := viewOf(t, p)
			if err != nil {
				return err
			}
			if s := st.suffrage("story4"); s != "" && s != "none" {
				return fmt.Errorf("%s lists story4 as %q", p.id, s)
			}
		}
		return nil
	}
	eventually(t, 15*time.Second, "story4 out of every node's Raft configuration", out)
	t.Logf("story4 removed via %s", follower.id)

	// A node with another cluster key is never let in, while the removed
	// one stays out.
	otherKey := bytes.Repeat([]byte{7}, 16)
	intruder := newNode(t, "intruder", "--cluster-key", base64.StdEncoding.EncodeToString(otherKey),
		"--admin-token", token, "--bootstrap-expect", "0", "--join", n1.gossip)
	intruder.start()
	intruder.waitOK("/healthz")
	holds(t, 5*time.Second, "story4 out and the intruder unseen", func() error {
		if err := out(); err != nil {
			return err
		}
		for _, p := range nodes {
			st, _, err := viewOf(t, p)
			if err != nil {
				return err
			}
			if s := st.suffrage("intruder"); s != "" {
				return fmt.Errorf("%s lists the node with another key (suffrage %q)", p.id, s)
			}
		}
		return nil
	})
	ist, r, err := viewOf(t, intruder)
	if err != nil {
		t.Fatal(err)
	}
	if len(ist.Members) > 1 || ist.Node.LeaderID != "" || r.code != 1 {
		t.Errorf("intruder: got members %+v, leader %q, exit %d; want only itself, no leader, exit 1", ist.Members, ist.Node.LeaderID, r.code)
	}
	ps.readableOn(t, nodes...)
}

package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pastenode/pastenode"
)

// fakeCluster is three fake nodes that list each other as members: n1
// leads, n2 and n3 follow. change edits their answers (by id) before they
// serve; the ids in down are not listening.
func fakeCluster(t *testing.T, change func(map[string]*pastenode.Status), down ...string) string {
	t.Helper()
	ids := []string{"n1", "n2", "n3"}
	fakes := map[string]*fakeNode{}
	addrs := map[string]string{}
	for _, id := range ids {
		f := &fakeNode{ready: true, pastes: map[string][]byte{}, tokens: map[string]string{}}
		srv := httptest.NewServer(f.routes())
		t.Cleanup(srv.Close)
		fakes[id], addrs[id] = f, strings.TrimPrefix(srv.URL, "http://")
		for _, d := range down {
			if d == id {
				srv.Close()
			}
		}
	}
	statuses := map[string]*pastenode.Status{}
	for i, id := range ids {
		st := &pastenode.Status{
			Node: pastenode.NodeStatus{ID: id, State: "follower", LeaderID: "n1", Term: 3,
				CommitIndex: 100, AppliedIndex: 98 + uint64(i), LastContactMs: 20 + int64(i), Version: "v1.2.3",
				UptimeS: 3725, Ready: true},
			Store: pastenode.StoreStatus{Pastes: 12, Bytes: 3 << 20},
		}
		if id == "n1" {
			st.Node.State, st.Node.AppliedIndex, st.Node.LastContactMs = "leader", 100, 0
		}
		for _, m := range ids {
			st.Members = append(st.Members, pastenode.Member{ID: m, APIAddr: addrs[m], Gossip: "alive", Suffrage: "voter", Leader: m == "n1"})
		}
		statuses[id] = st
	}
	if change != nil {
		change(statuses)
	}
	for id, f := range fakes {
		f.status = *statuses[id]
	}
	return "http://" + addrs["n2"] // ask a follower
}

// tableRows reads the status table: member id -> the cells after the id.
func tableRows(out string) map[string]string {
	rows := map[string]string{}
	table, _, _ := strings.Cut(out, "\n\n")
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] == "ID" {
			continue
		}
		if f[0] == "*" {
			f = append([]string{"*" + f[1]}, f[2:]...)
		}
		rows[f[0]] = strings.Join(f[1:], " ")
	}
	return rows
}

func TestStatusFanOut(t *testing.T) {
	tests := []struct {
		name   string
		change func(map[string]*pastenode.Status)
		down   []string
		args   []string
		code   int
		rows   map[string]string // id (with * for the leader) -> cells after the id, the address left out
		out    []string          // in stdout
		stderr string            // in stderr
	}{
		{
			name: "healthy",
			code: 0,
			rows: map[string]string{
				"*n1": "leader voter alive 100 0 - v1.2.3 1h2m5s 12 3 MiB yes",
				"n2":  "follower voter alive 99 1 21ms v1.2.3 1h2m5s 12 3 MiB yes",
				"n3":  "follower voter alive 100 0 22ms v1.2.3 1h2m5s 12 3 MiB yes",
			},
			out: []string{"pastes: 12, bytes: 3145728 (3 MiB)", "term: 3, commit index: 100, leader: n1 (asked n2)"},
		},
		{
			name:   "a voter down",
			down:   []string{"n3"},
			code:   exitDegraded,
			rows:   map[string]string{"n3": "unreachable voter alive - - - - - - - -"},
			out:    []string{"n3: no answer: "},
			stderr: "degraded: n3: voter not answering",
		},
		{
			name: "a nonvoter down",
			down: []string{"n3"},
			change: func(sts map[string]*pastenode.Status) {
				for _, st := range sts {
					st.Members[2].Suffrage = "nonvoter"
				}
			},
			code: 0,
			rows: map[string]string{"n3": "unreachable nonvoter alive - - - - - - - -"},
			out:  []string{"n3: no answer: "},
		},
		{
			name: "a voter lagging",
			change: func(sts map[string]*pastenode.Status) {
				sts["n1"].Node.CommitIndex, sts["n1"].Node.AppliedIndex = 5000, 5000
			},
			code:   exitDegraded,
			rows:   map[string]string{"n2": "follower voter alive 99 4901 21ms v1.2.3 1h2m5s 12 3 MiB yes"},
			stderr: "n2: voter 4901 entries behind",
		},
		{
			name: "lag under --max-lag",
			change: func(sts map[string]*pastenode.Status) {
				sts["n1"].Node.CommitIndex, sts["n1"].Node.AppliedIndex = 5000, 5000
			},
			args: []string{"--max-lag", "10000"},
			code: 0,
		},
		{
			name: "a voter not ready",
			change: func(sts map[string]*pastenode.Status) {
				sts["n3"].Node.Ready, sts["n3"].Node.ReadyReason = false, "no leader known"
			},
			code:   exitDegraded,
			rows:   map[string]string{"n3": "follower voter alive 100 0 22ms v1.2.3 1h2m5s 12 3 MiB no"},
			out:    []string{"n3: not ready: no leader known"},
			stderr: "n3: voter not ready",
		},
		{
			name: "storage full",
			change: func(sts map[string]*pastenode.Status) {
				sts["n1"].Node.StorageFull, sts["n1"].Node.StorageReason = true, "the data dir has 1 MiB free"
			},
			code:   exitDegraded,
			out:    []string{"n1: refuses creates (507): the data dir has 1 MiB free"},
			stderr: "n1: storage full",
		},
		{
			name: "no leader",
			down: []string{"n1"},
			change: func(sts map[string]*pastenode.Status) {
				for _, st := range sts {
					st.Node.LeaderID = ""
					st.Node.State = "candidate"
					st.Members[0].Leader = false
				}
			},
			code:   1,
			rows:   map[string]string{"n1": "unreachable voter alive - - - - - - - -", "n2": "candidate voter alive 99 1 21ms v1.2.3 1h2m5s 12 3 MiB yes"},
			out:    []string{"leader: none (asked n2)"},
			stderr: "pastectl: no leader",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := fakeCluster(t, tt.change, tt.down...)
			code, stdout, stderr := pastectl(t, "", append([]string{"--addr", url, "status", "--member-timeout", "1s"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) || (tt.stderr == "" && stderr != "") {
				t.Fatalf("exit %d stderr %q, want %d and %q\n%s", code, stderr, tt.code, tt.stderr, stdout)
			}
			rows := tableRows(stdout)
			for id, want := range tt.rows {
				got := rows[id]
				if _, rest, ok := strings.Cut(got, " "); ok { // drop the address
					got = rest
				}
				if got != want {
					t.Errorf("row %s: %q, want %q\n%s", id, got, want, stdout)
				}
			}
			for _, s := range tt.out {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
		})
	}
}

func TestStatusJSON(t *testing.T) {
	url := fakeCluster(t, nil, "n3")
	code, stdout, _ := pastectl(t, "", "--addr", url, "-o", "json", "status")
	if code != exitDegraded {
		t.Errorf("exit %d, want %d", code, exitDegraded)
	}
	var v struct {
		Node    pastenode.NodeStatus `json:"node"`
		Members []struct {
			ID     string                `json:"id"`
			Role   string                `json:"role"`
			Leader bool                  `json:"leader"`
			Lag    *uint64               `json:"lag"`
			Error  string                `json:"error"`
			Status *pastenode.NodeStatus `json:"status"`
		} `json:"members"`
		Degraded bool     `json:"degraded"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if v.Node.ID != "n2" || len(v.Members) != 3 || !v.Degraded || len(v.Problems) != 1 {
		t.Fatalf("json: %+v", v)
	}
	n1, n3 := v.Members[0], v.Members[2]
	if n1.Role != "leader" || !n1.Leader || n1.Status == nil || n1.Status.UptimeS != 3725 || n1.Lag == nil || *n1.Lag != 0 {
		t.Errorf("n1: %+v", n1)
	}
	if n3.Status != nil || n3.Error == "" || n3.Lag != nil || n3.Role != "unreachable" {
		t.Errorf("n3 is down: %+v", n3)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pastenode/pastenode"
)

// oneObject decodes s as exactly one JSON object.
func oneObject(t *testing.T, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, s)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("stdout holds more than one JSON object:\n%s", s)
	}
	return v
}

// TestEveryCommandPrintsOneJSONObject: with -o json each command prints
// one JSON object on stdout, never text.
func TestEveryCommandPrintsOneJSONObject(t *testing.T) {
	f, url := newFake(t)
	f.adminToken = "adm"
	f.pastes["p1"], f.tokens["p1"] = []byte("hello"), "tok-p1"
	f.pastes["p2"], f.tokens["p2"] = []byte("\xff\x00binary"), "tok-p2"
	f.export, _ = cdbFile(t)
	dir := t.TempDir()
	tests := []struct {
		args []string
		want map[string]any // fields it must have, with these values
	}{
		{[]string{"put"}, map[string]any{"id": "p3"}},
		{[]string{"get", "p1"}, map[string]any{"id": "p1", "content": "hello", "size": 5.0}},
		{[]string{"get", url + "/raw/p2"}, map[string]any{"id": "p2", "content_base64": "/wBiaW5hcnk="}},
		{[]string{"info", "p1"}, map[string]any{"id": "p1", "size": 5.0}},
		{[]string{"delete", "p1", "--token", "tok-p1"}, map[string]any{"deleted": "p1"}},
		{[]string{"members"}, nil},
		{[]string{"remove", "n3"}, map[string]any{"removed": "n3"}},
		{[]string{"snapshot"}, map[string]any{"snapshot": true}},
		{[]string{"health"}, map[string]any{"ready": true}},
		{[]string{"export", "--out", filepath.Join(dir, "x.cdb")}, map[string]any{"file": filepath.Join(dir, "x.cdb")}},
		{[]string{"version"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := pastectl(t, "content", append([]string{"--addr", url, "--admin-token", "adm", "-o", "json"}, tt.args...)...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			v := oneObject(t, stdout)
			for k, want := range tt.want {
				if v[k] != want {
					t.Errorf("%s: got %v, want %v\n%s", k, v[k], want, stdout)
				}
			}
		})
	}
}

// TestJSONErrors: with -o json a failure is one object on stdout with
// the reason and the HTTP status (0 when no answer came), and the exit
// code of the failure; nothing on stderr.
func TestJSONErrors(t *testing.T) {
	_, url := newFake(t)
	refused := refusedAddr(t)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStatus float64
		wantError  string
	}{
		{"not found", []string{"--addr", url, "get", "nope"}, 1, 404, "404 Not Found: paste not found"},
		{"forbidden", []string{"--addr", url, "delete", "nope", "--token", "x"}, 1, 404, "404 Not Found: paste not found"},
		{"unreachable", []string{"--addr", refused, "get", "p1"}, 1, 0, "connection refused"},
		{"usage", []string{"--addr", url, "get"}, 2, 0, "get: accepts 1 arg(s), received 0"},
		{"unknown command", []string{"--addr", url, "stauts"}, 2, 0, `unknown command "stauts" for "pastectl" Did you mean this? status`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := pastectl(t, "", append([]string{"-o", "json"}, tt.args...)...)
			if code != tt.wantCode || stderr != "" {
				t.Errorf("exit %d, stderr %q; want %d and nothing", code, stderr, tt.wantCode)
			}
			v := oneObject(t, stdout)
			if v["status"] != tt.wantStatus || !strings.Contains(v["error"].(string), tt.wantError) {
				t.Errorf("got %s, want status %v and an error with %q", stdout, tt.wantStatus, tt.wantError)
			}
		})
	}
}

// TestUsageHints: a usage error points to the help of the command it
// concerns, and cobra's suggestion for a typo stays on its own lines.
func TestUsageHints(t *testing.T) {
	_, url := newFake(t)
	tests := []struct {
		args       []string
		wantStderr string
	}{
		{[]string{"stauts"}, "pastectl: unknown command \"stauts\" for \"pastectl\"\nDid you mean this?\n\tstatus\nRun 'pastectl --help' for usage.\n"},
		{[]string{"get"}, "pastectl: get: accepts 1 arg(s), received 0 (usage: pastectl get ID_OR_URL [flags])\nRun 'pastectl get --help' for usage.\n"},
		{[]string{"status", "--bogus"}, "pastectl: unknown flag: --bogus\nRun 'pastectl status --help' for usage.\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := pastectl(t, "", append([]string{"--addr", url}, tt.args...)...)
			if code != 2 || stdout != "" || stderr != tt.wantStderr {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, tt.wantStderr)
			}
		})
	}
}

func TestMembers(t *testing.T) {
	f, url := newFake(t)
	f.status.Members[2].Unreachable = true
	code, stdout, stderr := pastectl(t, "", "--addr", url, "members")
	want := "   ID  ADDRESS        ROLE         SUFFRAGE  GOSSIP\n" +
		"*  n1  10.0.0.1:8080  leader       voter     alive\n" +
		"   n2  10.0.0.2:8080  follower     voter     alive\n" +
		"   n3  10.0.0.3:8080  unreachable  nonvoter  suspect\n"
	if code != 0 || stdout != want {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	// The same columns head status's table.
	_, status, _ := pastectl(t, "", "--addr", url, "status", "--member-timeout", "100ms")
	head, _, _ := strings.Cut(status, "\n")
	if got := strings.Join(strings.Fields(head)[:5], " "); got != "ID ADDRESS ROLE SUFFRAGE GOSSIP" {
		t.Errorf("status's header %q does not start as members's", head)
	}

	_, stdout, _ = pastectl(t, "", "--addr", url, "-o", "json", "members")
	var v struct {
		Members []struct {
			pastenode.Member
			Role string `json:"role"`
		} `json:"members"`
	}
	if err := json.NewDecoder(bytes.NewReader([]byte(stdout))).Decode(&v); err != nil || len(v.Members) != 3 ||
		v.Members[0].Role != "leader" || v.Members[2].Role != "unreachable" || !v.Members[2].Unreachable {
		t.Errorf("-o json: %v %s", err, stdout)
	}
}

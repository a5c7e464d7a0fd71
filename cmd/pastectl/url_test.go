package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pastenode/pastenode"
)

// TestURLMeansItsNode: get, info and delete of a paste URL ask the node
// the URL names, not --addr, which stays the node of bare ids; the admin
// token goes only to --addr's nodes.
func TestURLMeansItsNode(t *testing.T) {
	here, hereURL := newFake(t)
	there, thereURL := newFake(t)
	here.adminToken, there.adminToken = "adm", "adm"
	here.pastes["p1"], here.tokens["p1"] = []byte("from --addr"), "tok-here"
	there.pastes["p1"], there.tokens["p1"] = []byte("from the URL's node"), "tok-there"
	there.pastes["p2"], there.tokens["p2"] = []byte("second"), "tok-p2"

	for _, arg := range []string{thereURL + "/p1", thereURL + "/raw/p1", thereURL + "/p1#L3"} {
		code, stdout, stderr := pastectl(t, "", "--addr", hereURL, "get", arg)
		if code != 0 || stdout != "from the URL's node" {
			t.Errorf("get %s: exit %d, %q (%s); want the URL's node's paste", arg, code, stdout, stderr)
		}
	}
	if code, stdout, _ := pastectl(t, "", "--addr", hereURL, "get", "p1"); code != 0 || stdout != "from --addr" {
		t.Errorf("get of a bare id: exit %d, %q; want --addr's paste", code, stdout)
	}

	code, stdout, stderr := pastectl(t, "", "--addr", hereURL, "-o", "json", "info", thereURL+"/p1")
	var m pastenode.Meta
	if err := json.Unmarshal([]byte(stdout), &m); code != 0 || err != nil || m.URL != thereURL+"/p1" || m.Size != len("from the URL's node") {
		t.Errorf("info -o json of a URL: exit %d, %q (%s); want the URL's node's metadata", code, stdout, stderr)
	}
	code, stdout, _ = pastectl(t, "", "--addr", hereURL, "info", "p1")
	for _, want := range []string{"id:        p1\n", "size:      11 bytes\n", "lang:      go\n", "expires:   never\n", "burn:      no\n"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("info: exit %d, %q; want a line %q", code, stdout, want)
		}
	}

	// The admin token is not sent to a node the URL names.
	code, _, stderr = pastectl(t, "", "--addr", hereURL, "--admin-token", "adm", "delete", thereURL+"/p1")
	if code != 2 || !strings.Contains(stderr, "needs --token") || there.pastes["p1"] == nil {
		t.Errorf("admin delete of another node's URL: exit %d, %q; want 2 and the paste kept", code, stderr)
	}
	if code, _, stderr := pastectl(t, "", "--addr", hereURL, "delete", thereURL+"/p1", "--token", "tok-there"); code != 0 || there.pastes["p1"] != nil || here.pastes["p1"] == nil {
		t.Errorf("delete of a URL: exit %d (%s); want the URL's node's paste gone, --addr's kept", code, stderr)
	}
	// A URL of an --addr node gets the admin token.
	if code, _, stderr := pastectl(t, "", "--addr", thereURL, "--admin-token", "adm", "delete", thereURL+"/raw/p2"); code != 0 || there.pastes["p2"] != nil {
		t.Errorf("admin delete of an --addr node's URL: exit %d (%s)", code, stderr)
	}
}

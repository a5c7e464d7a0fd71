package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var backupClient = &http.Client{Timeout: 5 * time.Second}

// postPaste creates content at url with the extra headers and returns its id
// and delete token.
func postPaste(url string, content []byte, headers ...string) (id, token string, err error) {
	req, err := http.NewRequest(http.MethodPost, url+"/", bytes.NewReader(content))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := backupClient.Do(req)
	if err != nil {
		return "", "", err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return "", "", fmt.Errorf("create: %d %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return resp.Header.Get("X-Paste-Id"), resp.Header.Get("X-Delete-Token"), nil
}

// getRaw reads /raw/id at url.
func getRaw(url, id string) (int, []byte, error) {
	resp, err := backupClient.Get(url + "/raw/" + id)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func mustPost(t *testing.T, url string, content []byte, headers ...string) (id, token string) {
	t.Helper()
	id, token, err := postPaste(url, content, headers...)
	if err != nil {
		t.Fatal(err)
	}
	return id, token
}

// TestBackupRestore takes a backup of a 3-node cluster while writes go on,
// wipes every data dir, restores one node from the backup, lets the other
// two join it, and checks that the cluster holds everything acknowledged
// before the backup, with its delete tokens, burn and expiry intact.
func TestBackupRestore(t *testing.T) {
	nodes := startCluster(t, "bk", 3)
	eventually(t, 20*time.Second, "one leader", func() error { _, err := leaderOf(t, nodes); return err })

	acked := map[string][]byte{}
	for i := range 30 {
		content := fmt.Appendf(nil, "paste %d\x00\xff%s", i, strings.Repeat("x", i*37))
		id, _ := mustPost(t, nodes[i%3].URL, content)
		acked[id] = content
	}
	tokenID, token := mustPost(t, nodes[1].URL, []byte("delete me with my token"))
	acked[tokenID] = []byte("delete me with my token")
	burnID, _ := mustPost(t, nodes[2].URL, []byte("read me once"), "X-Paste-Burn", "1")
	const expireIn = 40 * time.Second
	expStart := time.Now()
	expID, _ := mustPost(t, nodes[0].URL, []byte("I expire"), "X-Paste-Expire", "40s")
	expEnd := time.Now()

	// Writes go on while the backup is taken.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			_, _, _ = postPaste(nodes[i%3].URL, fmt.Appendf(nil, "during backup %d", i))
		}
	}()
	file := filepath.Join(t.TempDir(), "cluster.backup")
	r := pastectl(t, nodes[2].URL, nil, "--data-dir", nodes[2].dataDir, "backup", "--out", file)
	cancel()
	wg.Wait()
	if r.code != 0 || !strings.Contains(r.stdout, "backed up") {
		t.Fatalf("pastectl backup: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	for _, p := range nodes {
		p.stop()
		if err := os.RemoveAll(p.dataDir); err != nil {
			t.Fatal(err)
		}
	}
	first := nodes[0]
	r = run(t, "pastenode", nil, nil, "restore", "--from", file, "--data-dir", first.dataDir,
		"--node-id", first.id, "--raft-addr", first.raftAddr)
	if r.code != 0 {
		t.Fatalf("pastenode restore: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	first.args = []string{"--bootstrap-expect", "1"}
	first.restart()
	for _, p := range nodes[1:] {
		p.args = []string{"--bootstrap-expect", "0", "--join", first.gossip}
		p.start()
	}
	for _, p := range nodes[1:] {
		p.waitReady()
	}
	eventually(t, 30*time.Second, "three voters under one leader", func() error {
		if _, err := leaderOf(t, nodes); err != nil {
			return err
		}
		st, err := statusOf(t, first)
		if err != nil {
			return err
		}
		for _, p := range nodes {
			if s := st.suffrage(p.id); s != "voter" {
				return fmt.Errorf("%s is %q, want voter", p.id, s)
			}
		}
		return nil
	})

	checkExpiring(t, nodes, expID, expStart.Add(expireIn), expEnd.Add(expireIn), false)
	for id, want := range acked {
		for _, p := range nodes {
			code, got, err := getRaw(p.URL, id)
			if err != nil || code != http.StatusOK || !bytes.Equal(got, want) {
				t.Errorf("%s on %s after restore: %d %q %v, want %q", id, p.id, code, got, err, want)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	checkTokenAndBurn(t, nodes, tokenID, token, burnID)
	checkExpiring(t, nodes, expID, expStart.Add(expireIn), expEnd.Add(expireIn), true)
}

// checkTokenAndBurn deletes paste id with the token from before the backup,
// and reads the burn paste twice on two nodes.
func checkTokenAndBurn(t *testing.T, nodes []*proc, id, token, burnID string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, nodes[1].URL+"/"+id, nil)
	req.Header.Set("X-Delete-Token", token)
	resp, err := backupClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("delete with the token from before the backup: %d, want 204", resp.StatusCode)
	}
	if code, _, _ := getRaw(nodes[1].URL, id); code != http.StatusNotFound {
		t.Errorf("deleted paste on %s, which deleted it: %d, want 404", nodes[1].id, code)
	}
	// Another node may serve a stale hit until it applies the delete
	// (CONSISTENCY-NOTES.md), which it does within moments.
	eventually(t, 2*time.Second, "the deleted paste gone on every node", func() error {
		for _, p := range nodes {
			if code, _, _ := getRaw(p.URL, id); code != http.StatusNotFound {
				return fmt.Errorf("%s: %d, want 404", p.id, code)
			}
		}
		return nil
	})
	if code, got, _ := getRaw(nodes[1].URL, burnID); code != http.StatusOK || string(got) != "read me once" {
		t.Errorf("first read of the burn paste: %d %q", code, got)
	}
	if code, _, _ := getRaw(nodes[2].URL, burnID); code != http.StatusNotFound {
		t.Errorf("second read of the burn paste: %d, want 404", code)
	}
}

// checkExpiring checks the expiring paste, which expires between first
// and last (its create's request began and ended expireIn before them):
// readable on every node with a second to spare before first, or, with
// gone, readable on one node until shortly before first and then gone
// from every node soon after last.
func checkExpiring(t *testing.T, nodes []*proc, id string, first, last time.Time, gone bool) {
	t.Helper()
	if !gone {
		if time.Until(first) < time.Second {
			t.Fatalf("the restore took too long to check the expiring paste before it expires (at %s)", first)
		}
		for _, p := range nodes {
			if code, got, _ := getRaw(p.URL, id); code != http.StatusOK || string(got) != "I expire" {
				t.Errorf("expiring paste on %s before its time: %d %q", p.id, code, got)
			}
		}
		return
	}
	// Not until last: the node that took the create set its expiry from
	// its clock when the request reached it, which may be up to
	// last-first before last.
	holds(t, time.Until(first.Add(-500*time.Millisecond)), "expiring paste readable before its time", func() error {
		if code, _, err := getRaw(nodes[0].URL, id); code != http.StatusOK {
			return fmt.Errorf("%d %v", code, err)
		}
		return nil
	})
	eventually(t, time.Until(last)+2*time.Second, "expiring paste gone on every node", func() error {
		for _, p := range nodes {
			if code, _, err := getRaw(p.URL, id); code != http.StatusNotFound {
				return fmt.Errorf("%s: %d %v", p.id, code, err)
			}
		}
		return nil
	})
}

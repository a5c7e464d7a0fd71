package audit

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pastenode/pastenode/fsm"
)

// clusterKey returns a fresh base64 cluster key.
func clusterKey() string {
	k := make([]byte, 32)
	rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

// internalCall speaks the internal RPC by hand on a Raft port, as a host on
// the cluster network could: the 'H' byte, then a plain HTTP request. It
// returns the status, or an error when the node would not talk.
func internalCall(addr, path string, body []byte) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "HPOST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/msgpack\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		path, len(body))
	c.Write(body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestForgedInternalCall: an admin delete hand-made in msgpack and sent to
// the Raft port of a keyed node is refused; the paste stays.
func TestForgedInternalCall(t *testing.T) {
	t.Parallel()
	n := startNode(t, "forged", "--cluster-key", clusterKey(), "--rate-limit", "0")
	id := create(t, n.URL, []byte("not yours to delete"), "")
	cmd, err := fsm.Encode(&fsm.Command{Type: fsm.TypeDelete, ID: id, Admin: true, Now: time.Now().UnixNano()})
	if err != nil {
		t.Fatal(err)
	}
	code, err := internalCall(n.raftAddr, "/internal/v1/apply", cmd)
	t.Logf("forged apply: status %d, err %v", code, err)
	if code, body, err := get(n.URL+"/raw/"+id, nil); err != nil || code != http.StatusOK || string(body) != "not yours to delete" {
		t.Fatalf("after the forged delete: GET /raw/%s = %d %q %v, want the paste", id, code, body, err)
	}
}

// TestPoisonEntry: a body that is no valid command, sent through the
// internal path, never reaches the log: the node keeps serving and restarts
// cleanly.
func TestPoisonEntry(t *testing.T) {
	t.Parallel()
	n := startNode(t, "poison", "--rate-limit", "0")
	id := create(t, n.URL, []byte("before the poison"), "")
	for _, body := range [][]byte{{0xc1}, []byte("garbage"), {0x81, 0xa1, 't', 0x7f}} {
		code, err := internalCall(n.raftAddr, "/internal/v1/apply", body)
		t.Logf("poison %x: status %d, err %v", body, code, err)
	}
	after := create(t, n.URL, []byte("after the poison"), "")
	if !n.alive() {
		t.Fatal("the node died on the poison entry")
	}
	if code := n.stop(); code != 0 {
		t.Fatalf("stop after the poison: exit %d, want 0", code)
	}
	n.start()
	n.waitReady()
	for id, want := range map[string]string{id: "before the poison", after: "after the poison"} {
		if code, body, err := get(n.URL+"/raw/"+id, nil); err != nil || code != http.StatusOK || string(body) != want {
			t.Errorf("after a restart: GET /raw/%s = %d %q %v, want %q", id, code, body, err, want)
		}
	}
}

// TestNonLoopbackNeedsKey: a node whose Raft and gossip addresses are not
// loopback refuses to start without --cluster-key, with one line that says
// how to make one, so that its internal port cannot be reached keyless.
func TestNonLoopbackNeedsKey(t *testing.T) {
	t.Parallel()
	n := newNode(t, "open", "--rate-limit", "0", "--advertise-host", "127.0.0.1")
	n.raftAddr = "0.0.0.0:" + portOf(n.raftAddr)
	n.goss = "0.0.0.0:" + portOf(n.goss)
	n.start()
	select {
	case <-n.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("a keyless node on 0.0.0.0 still runs after 10s")
	}
	if n.cmd.ProcessState.ExitCode() == 0 {
		t.Error("a keyless node on 0.0.0.0 exited 0")
	}
	b, _ := os.ReadFile(n.logPath)
	if !bytes.Contains(b, []byte("cluster-key")) {
		t.Errorf("its message does not name --cluster-key:\n%s", b)
	}
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// TestKeylessFourthNode: a node without the cluster key that joins a keyed
// cluster's gossip never becomes a voter or a non-voter and serves nothing.
func TestKeylessFourthNode(t *testing.T) {
	t.Parallel()
	key := clusterKey()
	nodes := make([]*node, 3)
	for i := range nodes {
		nodes[i] = newNode(t, "keyed"+strconv.Itoa(i+1), "--cluster-key", key, "--bootstrap-expect", "3", "--rate-limit", "0")
	}
	for _, n := range nodes {
		n.args = append(n.args, "--join", nodes[0].goss)
		n.start()
	}
	for _, n := range nodes {
		n.waitReady()
	}
	id := create(t, nodes[0].URL, []byte("for members only"), "")

	rogue := newNode(t, "rogue", "--bootstrap-expect", "0", "--join", nodes[0].goss, "--rate-limit", "0")
	rogue.start()
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range nodes[0].status().Members {
			if m.ID == "rogue" && (m.Suffrage == "voter" || m.Suffrage == "nonvoter") {
				t.Fatalf("the keyless node is a %s of the cluster", m.Suffrage)
			}
		}
		if code, body, err := get(rogue.URL+"/raw/"+id, nil); err == nil && code == http.StatusOK {
			t.Fatalf("the keyless node served a paste: %q", body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestLocalhostProxyAdmin: a reverse proxy on the same host (the usual
// deployment) does not make its clients admins: without the token every
// admin call is refused, whatever X-Forwarded-For says.
func TestLocalhostProxyAdmin(t *testing.T) {
	t.Parallel()
	n := startNode(t, "proxied", "--rate-limit", "0")
	target, _ := url.Parse(n.URL)
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	defer proxy.Close()
	id := create(t, proxy.URL, []byte("some paste"), "burn=1")

	calls := []struct {
		method, path, ct string
		body             []byte
	}{
		{http.MethodGet, "/api/v1/export.cdb", "", nil},
		{http.MethodPost, "/api/v1/snapshot", "application/json", []byte("{}")},
		{http.MethodPost, "/api/v1/cluster/join", "text/plain", []byte(`{"addrs":["127.0.0.1:1"]}`)},
		{http.MethodPost, "/api/v1/cluster/join", "application/json", []byte(`{"addrs":["127.0.0.1:1"]}`)},
		{http.MethodDelete, "/api/v1/cluster/nodes/proxied", "", nil},
		{http.MethodDelete, "/" + id, "", nil},
	}
	for _, c := range calls {
		for _, xff := range []string{"", "127.0.0.1"} {
			code, body, _, err := send(c.method, proxy.URL+c.path, c.body, "Content-Type", c.ct, "X-Forwarded-For", xff)
			if err != nil || code < 400 {
				t.Errorf("%s %s through the proxy (X-Forwarded-For %q): %d %q %v, want refused", c.method, c.path, xff, code, body, err)
			}
		}
	}
	// With the token the node generated, the same calls work; a POST that
	// is not JSON is still refused.
	auth := "Bearer " + n.adminToken()
	if code, _, _, err := send(http.MethodGet, proxy.URL+"/api/v1/export.cdb", nil, "Authorization", auth); err != nil || code != http.StatusOK {
		t.Errorf("export with the generated token: %d %v, want 200", code, err)
	}
	if code, _, _, _ := send(http.MethodPost, proxy.URL+"/api/v1/snapshot", nil, "Authorization", auth, "Content-Type", "text/plain"); code != http.StatusUnsupportedMediaType {
		t.Errorf("snapshot as text/plain with the token: %d, want 415", code)
	}
	if code, body, _ := get(n.URL+"/raw/"+id, nil); code != http.StatusOK || string(body) != "some paste" {
		t.Errorf("the burn paste after the attempts: %d %q, want it intact", code, body)
	}
}

// TestHighlightBomb: a paste that costs chroma's makefile lexer tens of
// seconds of CPU is served within a second, and so is each of four
// parallel first views of another.
func TestHighlightBomb(t *testing.T) {
	t.Parallel()
	n := startNode(t, "bomb", "--rate-limit", "0")
	html := []string{"Accept", "text/html"}
	bomb := create(t, n.URL, bytes.Repeat([]byte("a"), 32<<10), "lang=makefile")
	start := time.Now()
	if code, _, err := get(n.URL+"/"+bomb, html); err != nil || code != http.StatusOK {
		t.Fatalf("bomb page: %d %v", code, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("32 KiB makefile bomb: %s, want under a second", took)
	}
	shared := create(t, n.URL, bytes.Repeat([]byte("a"), 16<<10), "lang=makefile")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			start := time.Now()
			code, _, err := get(n.URL+"/"+shared, html)
			if took := time.Since(start); err != nil || code != http.StatusOK || took > time.Second {
				t.Errorf("parallel first view: %d %v after %s, want 200 within a second", code, err, took)
			}
		})
	}
	wg.Wait()
	start = time.Now()
	if code, _, err := get(n.URL+"/healthz", nil); err != nil || code != http.StatusOK || time.Since(start) > time.Second {
		t.Errorf("healthz after the bombs: %d %v in %s", code, err, time.Since(start))
	}
}

// TestWriteFlood: deletes and reveals of unknown ids, and deletes with
// wrong tokens, move no Raft index; the default rate limit refuses a
// flood with the real wait; every acknowledged paste survives, also a
// restart.
func TestWriteFlood(t *testing.T) {
	t.Parallel()
	n := startNode(t, "flood", "--rate-limit", "0")
	acked := map[string]string{}
	for i := range 5 {
		content := "acknowledged " + strconv.Itoa(i)
		acked[create(t, n.URL, []byte(content), "")] = content
	}
	var some string
	for id := range acked {
		some = id
	}
	// The node's own entries (the cluster's identity, made just after
	// the first leader took office) are in before the flood.
	eventually(t, 5*time.Second, "a cluster id, applied up to the commit index", func() error {
		if st := n.status(); st.Node.ClusterID == "" || st.Node.AppliedIndex != st.Node.CommitIndex {
			return fmt.Errorf("cluster %q, applied %d of %d", st.Node.ClusterID, st.Node.AppliedIndex, st.Node.CommitIndex)
		}
		return nil
	})
	before := n.status().Node.CommitIndex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 60 {
				unknown := fmt.Sprintf("nx%d-%d", w, i)
				send(http.MethodDelete, n.URL+"/"+unknown, nil, "X-Delete-Token", "anything")
				send(http.MethodPost, n.URL+"/"+unknown+"/reveal", nil)
				send(http.MethodDelete, n.URL+"/"+some, nil, "X-Delete-Token", "wrong")
			}
		})
	}
	wg.Wait()
	if after := n.status().Node.CommitIndex; after != before {
		t.Errorf("a flood on unknown ids moved the commit index from %d to %d", before, after)
	}

	// The default rate limit, on its own node.
	limited := startNode(t, "limited")
	var refused bool
	for i := range 100 {
		code, _, h, err := send(http.MethodDelete, limited.URL+"/nx"+strconv.Itoa(i), nil, "X-Delete-Token", "x")
		if err != nil {
			t.Fatal(err)
		}
		if code == http.StatusTooManyRequests {
			if ra, _ := strconv.Atoi(h.Get("Retry-After")); ra < 1 {
				t.Errorf("429 with Retry-After %q, want the wait in seconds", h.Get("Retry-After"))
			}
			refused = true
			break
		}
	}
	if !refused {
		t.Error("100 deletes in a row from one address: none refused by the default rate limit")
	}

	check := func(when string) {
		for id, want := range acked {
			if code, body, err := get(n.URL+"/raw/"+id, nil); err != nil || code != http.StatusOK || string(body) != want {
				t.Errorf("%s: GET /raw/%s = %d %q %v, want %q", when, id, code, body, err, want)
			}
		}
	}
	check("after the flood")
	if code := n.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	n.start()
	n.waitReady()
	check("after a restart")
}

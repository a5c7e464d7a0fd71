package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of size on a new dir and unmounts it when the
// test ends, after the node on it has stopped. It skips when not root,
// but fails under CI=true, where the tests run as root.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test mounts a tmpfs and must run as root under CI=true")
		}
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	// Registered before the node's cleanup, so it runs after it.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// fill writes a file in dir until less than left bytes are free there.
func fill(t *testing.T, dir string, left int64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{0xa5}, 256<<10)
	for freeBytes(t, dir) >= left {
		if _, err := f.Write(chunk); err != nil {
			t.Fatalf("fill: %v", err)
		}
	}
	return path
}

// nodeTerm returns the Raft term and state of the node at url.
func nodeTerm(url string) (uint64, string, error) {
	resp, err := backupClient.Get(url + "/api/v1/status")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var st struct {
		Node struct {
			State string `json:"state"`
			Term  uint64 `json:"term"`
		} `json:"node"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, "", err
	}
	return st.Node.Term, st.Node.State, nil
}

// metricValue returns the value of an unlabelled metric at url.
func metricValue(url, name string) (float64, error) {
	resp, err := backupClient.Get(url + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no metric %s", name)
}

// TestDiskFull runs a node on a 24 MiB tmpfs, fills it, and checks that
// creates get 507 within a second with a reason, while the node keeps its
// term and leadership and serves reads, and that creates work again once
// space is freed, with nothing acknowledged lost.
func TestDiskFull(t *testing.T) {
	mnt := mountTmpfs(t, "24m")
	p := newProc(t, "--storage-reserve", "4MiB", "--max-paste-size", "512KiB")
	p.dataDir = filepath.Join(mnt, "data")
	p.start()
	p.waitReady()

	acked := map[string][]byte{}
	for i := range 20 {
		content := fmt.Appendf(nil, "before the disk fills %d %s", i, strings.Repeat("y", i*100))
		id, _ := mustPost(t, p.URL, content)
		acked[id] = content
	}
	term, state, err := nodeTerm(p.URL)
	if err != nil || state != "leader" {
		t.Fatalf("status before: term %d state %q err %v", term, state, err)
	}

	// Leave a little more than the reserve, then create until refused:
	// the last creates go through the Raft log for real.
	filler := fill(t, mnt, 6<<20)
	big := bytes.Repeat([]byte("z"), 256<<10)
	refused := false
	for i := 0; i < 100 && !refused; i++ {
		start := time.Now()
		content := append(fmt.Appendf(nil, "filling %d ", i), big...)
		id, _, err := postPaste(p.URL, content)
		took := time.Since(start)
		switch {
		case err == nil:
			acked[id] = content
		case strings.Contains(err.Error(), "507") && strings.Contains(err.Error(), "insufficient storage"):
			refused = true
			if took > time.Second {
				t.Errorf("the 507 took %s, want under a second", took)
			}
			t.Logf("after %d more creates: %v", i, err)
		default:
			t.Fatalf("create %d while filling: %v (after %s)", i, err, took)
		}
	}
	if !refused {
		t.Fatal("no 507 after 100 creates of 256 KiB on a full disk")
	}
	if v, err := metricValue(p.URL, "pastenode_storage_full"); err != nil || v != 1 {
		t.Errorf("pastenode_storage_full = %v, %v; want 1", v, err)
	}

	holds(t, 3*time.Second, "507 within a second, same term, still leader", func() error {
		start := time.Now()
		_, _, err := postPaste(p.URL, []byte("refused"))
		if err == nil || !strings.Contains(err.Error(), "507") {
			return fmt.Errorf("create on a full disk: %v, want 507", err)
		}
		if took := time.Since(start); took > time.Second {
			return fmt.Errorf("507 after %s", took)
		}
		now, state, err := nodeTerm(p.URL)
		if err != nil || now != term || state != "leader" {
			return fmt.Errorf("term %d state %q (%v), want term %d leader", now, state, err, term)
		}
		return nil
	})
	checkAll(t, p.URL, acked, "on a full disk")

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "creates accepted after space came back", func() error {
		id, _, err := postPaste(p.URL, []byte("space is back"))
		if err == nil {
			acked[id] = []byte("space is back")
		}
		return err
	})
	checkAll(t, p.URL, acked, "after space came back")
	if now, _, err := nodeTerm(p.URL); err != nil || now != term {
		t.Errorf("term %d (%v) after the disk was full, want %d", now, err, term)
	}
	if v, err := metricValue(p.URL, "pastenode_storage_full"); err != nil || v != 0 {
		t.Errorf("pastenode_storage_full = %v, %v after space came back; want 0", v, err)
	}
}

func checkAll(t *testing.T, url string, acked map[string][]byte, when string) {
	t.Helper()
	for id, want := range acked {
		code, got, err := getRaw(url, id)
		if err != nil || code != http.StatusOK || !bytes.Equal(got, want) {
			t.Fatalf("read %s %s: %d %v (%d bytes), want the %d bytes acknowledged", id, when, code, errors.Unwrap(err), len(got), len(want))
		}
	}
}

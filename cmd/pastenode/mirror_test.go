package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/internal/freeport"
	"github.com/pastenode/pastenode/mirror"
	"github.com/pastenode/pastenode/ui"
)

func TestParseMirrorFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		want      mirrorConfig
		wantUsage string // a usage error containing this; "" for none
	}{
		{name: "defaults", args: []string{"--cdb", "a.cdb"},
			want: mirrorConfig{cdb: "a.cdb", httpAddr: "127.0.0.1:8080", log: logConfig{Format: "text"}}},
		{name: "flags", args: []string{"--cdb=a.cdb", "--http-addr", ":9090", "--log-level", "debug", "--log-format", "json"},
			want: mirrorConfig{cdb: "a.cdb", httpAddr: ":9090", log: logConfig{Level: slog.LevelDebug, Format: "json"}}},
		{name: "environment twins", env: map[string]string{"PASTE_CDB": "env.cdb", "PASTE_HTTP_ADDR": "0.0.0.0:80", "PASTE_LOG_LEVEL": "warn"},
			want: mirrorConfig{cdb: "env.cdb", httpAddr: "0.0.0.0:80", log: logConfig{Level: slog.LevelWarn, Format: "text"}}},
		{name: "flag beats environment", args: []string{"--cdb", "flag.cdb"}, env: map[string]string{"PASTE_CDB": "env.cdb"},
			want: mirrorConfig{cdb: "flag.cdb", httpAddr: "127.0.0.1:8080", log: logConfig{Format: "text"}}},
		{name: "no cdb", wantUsage: "--cdb is required"},
		{name: "bad addr", args: []string{"--cdb", "a", "--http-addr", "nowhere"}, wantUsage: "--http-addr"},
		{name: "bad level", args: []string{"--cdb", "a", "--log-level", "loud"}, wantUsage: "--log-level"},
		{name: "bad format", args: []string{"--cdb", "a", "--log-format", "xml"}, wantUsage: "--log-format"},
		{name: "bad env", env: map[string]string{"PASTE_CDB": "a", "PASTE_LOG_FORMAT": "yaml"}, wantUsage: "--log-format"},
		{name: "argument", args: []string{"--cdb", "a", "extra"}, wantUsage: "unexpected argument"},
		{name: "unknown flag", args: []string{"--data-dir", "x"}, wantUsage: "data-dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			got, err := parseMirrorFlags(tt.args, env)
			if tt.wantUsage != "" {
				var ue usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantUsage) {
					t.Fatalf("got error %v, want a usage error about %q", err, tt.wantUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *got != tt.want {
				t.Errorf("got %+v, want %+v", *got, tt.want)
			}
		})
	}
}

// lockedBuffer collects the log that a running command writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// writeArchive writes an export holding one paste per id, whose content is
// the id and then suffix, to a temporary file in dir, and returns its path.
func writeArchive(t *testing.T, dir, suffix string, ids ...string) string {
	t.Helper()
	f := fsm.New()
	now := time.Now()
	for i, id := range ids {
		b, err := fsm.Encode(&fsm.Command{Type: fsm.TypeCreate, Now: now.UnixNano(), Paste: &fsm.Paste{
			ID: id, Content: []byte(id + suffix), CreatedAt: now.UnixNano(), TokenHash: fsm.HashToken("t"),
		}})
		if err != nil {
			t.Fatal(err)
		}
		f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: b})
	}
	pages, err := ui.New(ui.Options{Mirror: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.CreateTemp(dir, "export-*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := mirror.WriteExport(context.Background(), out, f.View(), pages, now, mirror.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	return out.Name()
}

// fetch answers GET url with the status and body, or an error.
func fetch(url string, headers ...string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// poll retries check every 10ms until it returns nil or timeout passes.
func poll(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitReady polls base's /readyz until it answers 200. If serve returns
// first (done), the test fails at once with serve's error rather than
// after the timeout with a refused connection; the error goes back into
// done for the caller's cleanup.
func waitReady(t *testing.T, base string, done chan error) {
	t.Helper()
	poll(t, 20*time.Second, "ready", func() error {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("serve returned before it was ready: %v", err)
		default:
		}
		if code, body, err := fetch(base + "/readyz"); err != nil || code != http.StatusOK {
			return fmt.Errorf("%d %s %v", code, body, err)
		}
		return nil
	})
}

// TestRunMirror runs `pastenode mirror` as main does and replaces its file
// while it serves.
func TestRunMirror(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mirror.cdb")
	if err := os.Rename(writeArchive(t, dir, " in A", "alpha"), path); err != nil {
		t.Fatal(err)
	}
	addr := freeport.Addr(t)
	base := "http://" + addr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs lockedBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"mirror", "--cdb", path, "--http-addr", addr}, io.Discard, &logs) }()

	raw := func(id string, wantCode int, wantBody string) func() error {
		return func() error {
			code, body, err := fetch(base + "/raw/" + id)
			if err != nil {
				return err
			}
			if code != wantCode || (wantCode == 200 && body != wantBody) {
				return fmt.Errorf("/raw/%s: got %d %q, want %d %q", id, code, body, wantCode, wantBody)
			}
			return nil
		}
	}
	poll(t, 10*time.Second, "mirror serving", raw("alpha", 200, "alpha in A"))
	if code, body, _ := fetch(base+"/alpha", "Accept", "text/html"); code != 200 || !strings.Contains(body, "read-only mirror") {
		t.Errorf("/alpha for a browser: got %d %.200q", code, body)
	}
	resp, err := http.Post(base+"/", "text/plain", strings.NewReader("new paste"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: got %d, want 405", resp.StatusCode)
	}

	if err := os.Rename(writeArchive(t, dir, " in B", "beta"), path); err != nil {
		t.Fatal(err)
	}
	poll(t, time.Second, "new file served", raw("beta", 200, "beta in B"))
	os.WriteFile(path+".bad", []byte("garbage"), 0o644)
	os.Rename(path+".bad", path)
	poll(t, time.Second, "bad file logged", func() error {
		if !strings.Contains(logs.String(), "new archive rejected") {
			return errors.New("no error in the log")
		}
		return nil
	})
	if err := raw("beta", 200, "beta in B")(); err != nil {
		t.Errorf("after a bad file: %v", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if !strings.Contains(logs.String(), "serving mirror") {
		t.Errorf("log has no start line:\n%s", logs.String())
	}
}

func TestRunMirrorBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.cdb")
	os.WriteFile(path, []byte(strings.Repeat("x", 4096)), 0o644)
	err := run(context.Background(), []string{"mirror", "--cdb", path, "--http-addr", freeport.Addr(t)}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "kawipiko") && !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("run on a bad file: got %v, want an error that names the problem", err)
	}
}

// TestMirrorGC: the mirror runs its collector at mirrorGCPercent within
// mirrorMemoryLimit, unless GOGC is set (then neither is touched) or
// GOMEMLIMIT is (then the limit is not).
func TestMirrorGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	env := func(set ...string) func(string) (string, bool) {
		return func(name string) (string, bool) { return "", slices.Contains(set, name) }
	}
	for _, c := range []struct {
		env     []string
		percent int
		limit   int64
	}{
		{nil, mirrorGCPercent, mirrorMemoryLimit},
		{[]string{"GOMEMLIMIT"}, mirrorGCPercent, math.MaxInt64},
		{[]string{"GOGC"}, 100, math.MaxInt64},
	} {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		tuneMirrorGC(env(c.env...))
		if got := debug.SetGCPercent(100); got != c.percent {
			t.Errorf("%v set: GC percent %d, want %d", c.env, got, c.percent)
		}
		if got := debug.SetMemoryLimit(-1); got != c.limit {
			t.Errorf("%v set: memory limit %d, want %d", c.env, got, c.limit)
		}
	}
}

package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The store of the capacity and write-cost rows: 2.05 GiB of content that
// does not compress, four times the memory the capacity row's container
// may use, so that only a store on disk holds it. It is sent from a few
// clients at once, well under the 64 connections a node allows one
// address by default.
const (
	bigPastes    = 2200
	bigPasteSize = 1_000_000
	bigClients   = 8
)

// bigContent writes paste i's content: random bytes seeded by i, so that
// none compresses and no two are alike.
func bigContent(i int64, body []byte) {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(i))
	mrand.NewChaCha8(seed).Read(body)
}

// fillBig creates bigPastes pastes of bigPasteSize at base and counts the
// answers; it keeps going after a failure, so that the count says how
// many a node refused.
func (b *bench) fillBig(ctx context.Context, base string) created {
	return b.createMany(ctx, base, bulk{total: bigPastes, clients: bigClients, size: bigPasteSize, content: bigContent, sums: true})
}

// capacityMiB is the container's memory, with no swap beside it: a
// quarter of the big store, so that a node that kept its content in memory
// could not hold it.
const capacityMiB = 512

// capacityRow runs one node of the image b.image in a container limited to
// capacityMiB, with the image's defaults but the rate limit off, sends
// it bigPastes incompressible pastes, restarts the container and reads
// every paste back. It wants every create answered 201, no OOM kill, and
// every paste byte-exact. The container and its volume are removed at the
// end, also on failure.
func (b *bench) capacityRow(ctx context.Context) row {
	r := row{figure: fmt.Sprintf("capacity: %d pastes of %d random bytes into one node in a container of %d MiB, no swap; each read back after a restart",
		bigPastes, bigPasteSize, capacityMiB), peer: "-", ratio: -1,
		target: "all 201, no OOM kill, all byte-exact"}
	if _, err := exec.LookPath("docker"); err != nil {
		r.ours, r.met = "docker not found", "MISS (not measured)"
		return r
	}
	if _, err := docker(ctx, "image", "inspect", "--format", "{{.Id}}", b.image); err != nil {
		r.ours, r.met = fmt.Sprintf("no image %s: make docker-image", b.image), "MISS (not measured)"
		return r
	}
	c, err := b.startContainer(ctx)
	if c != nil {
		defer c.remove()
	}
	if err == nil {
		r.ours, err = b.capacity(ctx, c)
	}
	if err != nil {
		r.ours, r.met = err.Error(), "MISS"
		if c != nil {
			b.say("capacity: %v; the container's last lines:\n%s", err, c.logTail())
		}
	} else {
		r.met = "met"
	}
	return r
}

// container is the capacity row's docker container and its volume, both
// named name.
type container struct {
	name string
	url  string // http://127.0.0.1:PORT, published on loopback only
}

// startContainer starts the capacity row's container on a new volume and
// waits until it is ready.
func (b *bench) startContainer(ctx context.Context) (*container, error) {
	suffix := make([]byte, 4)
	rand.Read(suffix)
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &container{name: "pastenode-bench-" + hex.EncodeToString(suffix), url: "http://" + addr}
	// A node that binds every interface wants a cluster key and the name
	// peers dial, as in docker-compose.cluster.yml; a key made here is as
	// good as any for one node.
	key, err := exec.CommandContext(ctx, filepath.Join(b.bin, "pastenode"), "keygen").Output()
	if err != nil {
		return nil, fmt.Errorf("pastenode keygen: %w", err)
	}
	b.say("capacity: container %s, %d MiB of memory", c.name, capacityMiB)
	memory := fmt.Sprintf("%dm", capacityMiB)
	_, err = docker(ctx, "run", "--detach", "--name", c.name, "--hostname", "capacity",
		"--memory", memory, "--memory-swap", memory,
		"--env", "PASTE_ADVERTISE_HOST=capacity", "--env", "PASTE_CLUSTER_KEY="+strings.TrimSpace(string(key)),
		"--publish", addr+":8080", "--volume", c.name+":/data", b.image, "--rate-limit", "0")
	if err != nil {
		return c, err
	}
	return c, b.containerReady(ctx, c)
}

func (b *bench) containerReady(ctx context.Context, c *container) error {
	return waitFor(ctx, time.Minute, c.name+" ready", httpOK(b.hc, c.url+"/readyz"))
}

// capacity is the capacity row's measure once the container is up: what
// it says of the run, and an error when a target is missed. It goes on
// after an OOM kill, as docker restart starts the container again, to say
// whether the pastes answered 201 survived it.
func (b *bench) capacity(ctx context.Context, c *container) (string, error) {
	watch, stop := context.WithCancel(ctx)
	defer stop()
	peak := c.watchMemory(watch)
	start := time.Now()
	res := b.fillBig(ctx, c.url)
	took := time.Since(start)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	ok := res.statuses[201]
	summary := fillSummary(res, took) + "; " + peak()
	st, err := c.state(ctx)
	if err == nil && !st.running && !st.oomKilled {
		err = fmt.Errorf("the container stopped (exit code %s)", st.exitCode)
	}
	if err != nil {
		return "", fmt.Errorf("%s; %w", summary, err)
	}
	oom := st.oomKilled
	if oom {
		summary += "; OOM-killed"
	} else {
		summary += "; not OOM-killed"
	}
	b.say("capacity: %s", summary)
	start = time.Now()
	if _, err := docker(ctx, "restart", "--time", "60", c.name); err != nil {
		return "", fmt.Errorf("%s; restart: %w", summary, err)
	}
	if err := b.containerReady(ctx, c); err != nil {
		return "", fmt.Errorf("%s; %w", summary, err)
	}
	summary += fmt.Sprintf("; restarted, ready in %.1f s", time.Since(start).Seconds())
	var ids []string
	var sums [][sha256.Size]byte
	for i, id := range res.ids {
		if id != "" {
			ids, sums = append(ids, id), append(sums, res.sums[i])
		}
	}
	start = time.Now()
	exact, readErr := b.readBackBig(ctx, c.url, ids, sums)
	summary += fmt.Sprintf("; %d of %d byte-exact, read in %.0f s", exact, len(ids), time.Since(start).Seconds())
	if readErr != nil {
		summary += fmt.Sprintf(" (first failure: %v)", readErr)
	}
	// docker keeps OOMKilled set across a restart: after one, the
	// container running is what tells.
	if st, err := c.state(ctx); err != nil || !st.running {
		return "", fmt.Errorf("%s; after the restart: running %v (exit code %s), %v", summary, st.running, st.exitCode, err)
	}
	if oom || ok != bigPastes || exact != bigPastes {
		return "", errors.New(summary)
	}
	return summary, nil
}

// fillSummary says how the creates of a fill were answered.
func fillSummary(res created, took time.Duration) string {
	ok := res.statuses[201]
	var answers []string
	for status, n := range res.statuses {
		switch status {
		case 201:
		case 0:
			answers = append(answers, fmt.Sprintf("%d without an answer", n))
		default:
			answers = append(answers, fmt.Sprintf("%d answered %d", n, status))
		}
	}
	summary := fmt.Sprintf("%d of %d answered 201 in %.0f s (%.0f MB/s)", ok, bigPastes, took.Seconds(),
		float64(ok)*bigPasteSize/1e6/took.Seconds())
	if len(answers) > 0 {
		summary += " (" + strings.Join(answers, ", ") + "; first: " + res.firstErr.Error() + ")"
	}
	return summary
}

// state is what docker says of the container.
type state struct {
	oomKilled, running bool
	exitCode           string
}

func (c *container) state(ctx context.Context) (state, error) {
	out, err := docker(ctx, "inspect", "--format", "{{.State.OOMKilled}} {{.State.Running}} {{.State.ExitCode}}", c.name)
	if err != nil {
		return state{}, err
	}
	f := strings.Fields(out)
	if len(f) != 3 {
		return state{}, fmt.Errorf("docker inspect: %q", out)
	}
	return state{oomKilled: f[0] == "true", running: f[1] == "true", exitCode: f[2]}, nil
}

// watchMemory samples the node's resident memory and its container's
// memory charge, page cache included, until ctx ends, and returns what
// says their peaks so far. It samples rather than reads the peaks once at
// the end, because a container killed for memory takes them with it.
func (c *container) watchMemory(ctx context.Context) func() string {
	var mu sync.Mutex
	var rss, charge int64
	out, err := docker(ctx, "inspect", "--format", "{{.State.Pid}}", c.name)
	pid, _ := strconv.Atoi(out)
	if err == nil && pid > 0 {
		go func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for ctx.Err() == nil {
				m, err := residentMemory(pid)
				cg, cgErr := cgroupUsage(pid)
				if err != nil && cgErr != nil {
					return // the process is gone
				}
				mu.Lock()
				rss, charge = max(rss, m.rss), max(charge, cg)
				mu.Unlock()
				select {
				case <-ctx.Done():
				case <-tick.C:
				}
			}
		}()
	}
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		if rss == 0 {
			return "peak memory unknown"
		}
		s := fmt.Sprintf("peak RSS %.0f MiB", mib(rss))
		if charge > 0 {
			s += fmt.Sprintf(" (container, page cache included: %.0f MiB)", mib(charge))
		}
		return s
	}
}

// cgroupUsage reads the memory charge of the process pid's memory cgroup:
// memory.current on cgroup v2, memory.usage_in_bytes on v1.
func cgroupUsage(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var file string
		switch {
		case f[0] == "0" && f[1] == "":
			file = filepath.Join("/sys/fs/cgroup", f[2], "memory.current")
		case strings.Contains(","+f[1]+",", ",memory,"):
			file = filepath.Join("/sys/fs/cgroup/memory", f[2], "memory.usage_in_bytes")
		default:
			continue
		}
		v, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		var n int64
		if _, err := fmt.Sscanf(strings.TrimSpace(string(v)), "%d", &n); err == nil {
			return n, nil
		}
	}
	return 0, errors.New("no memory cgroup")
}

// logTail is the container's last log lines.
func (c *container) logTail() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "docker", "logs", "--tail", "20", c.name).CombinedOutput()
	return string(out)
}

// remove removes the container and its volume. It runs on its own
// context: the run's may be over, and they must go anyway.
func (c *container) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	docker(ctx, "rm", "--force", "--volumes", c.name)
	docker(ctx, "volume", "rm", "--force", c.name)
}

// docker runs the docker command with args and returns its output.
func docker(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// readBackBig reads each paste of ids at base, from clients at once, and
// counts those whose content has the sha256 of sums.
func (b *bench) readBackBig(ctx context.Context, base string, ids []string, sums [][sha256.Size]byte) (exact int, firstErr error) {
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range bigClients {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(ids)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				err := b.sameContent(base+"/raw/"+ids[i], sums[i])
				mu.Lock()
				if err == nil {
					exact++
				} else if firstErr == nil {
					firstErr = fmt.Errorf("paste %s: %w", ids[i], err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return exact, firstErr
}

// sameContent fetches url and checks that its body has the sha256 sum.
func (b *bench) sameContent(url string, sum [sha256.Size]byte) error {
	resp, err := b.hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	h := sha256.New()
	if _, err := io.Copy(h, resp.Body); err != nil {
		return err
	}
	if [sha256.Size]byte(h.Sum(nil)) != sum {
		return errors.New("content differs")
	}
	return nil
}

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// pnode is one pastenode process of the run.
type pnode struct {
	name string
	bin  string   // the pastenode binary, of this build or another
	args []string // to start it again on the same data dir
	url  string   // http:// or https:// base
	cmd  *exec.Cmd
}

// startNode starts a pastenode of this build with the common flags and
// extra ones.
func (b *bench) startNode(name string, extra ...string) (*pnode, error) {
	return b.startNodeOf(filepath.Join(b.bin, "pastenode"), name, extra...)
}

// startNodeOf is startNode for the pastenode binary bin, which may be of
// an older build: the common flags are ones every build since the
// in-memory one accepts.
func (b *bench) startNodeOf(bin, name string, extra ...string) (*pnode, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	n := &pnode{name: name, bin: bin, url: "http://" + ports[0]}
	n.args = append([]string{"--node-id", name, "--data-dir", filepath.Join(b.tmp, name),
		"--http-addr", ports[0], "--raft-addr", ports[1], "--gossip-addr", ports[2], "--log-level", "warn",
		"--rate-limit", "0", "--max-conns-per-ip", "0"}, extra...) // load from one address is the point
	if strings.Contains(strings.Join(extra, " "), "--tls-cert") {
		n.url = "https://" + ports[0]
	}
	return n, b.restart(n)
}

// restart starts n's process (again).
func (b *bench) restart(n *pnode) error {
	cmd, err := b.procs.start(n.name, n.bin, n.args...)
	n.cmd = cmd
	return err
}

// ready waits until n answers /readyz with 200.
func (b *bench) ready(ctx context.Context, n *pnode, timeout time.Duration) error {
	return waitFor(ctx, timeout, n.name+" ready", func() error {
		if err := b.procs.exitedEarly(n.cmd); err != nil {
			return err
		}
		return httpOK(b.hc, n.url+"/readyz")()
	})
}

// status is the part of GET /api/v1/status the bench reads.
type status struct {
	Node struct {
		State string `json:"state"`
	} `json:"node"`
	Store struct {
		Pastes int64 `json:"pastes"`
	} `json:"store"`
}

func (b *bench) status(n *pnode) (status, error) {
	var st status
	resp, err := b.hc.Get(n.url + "/api/v1/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, errors.New(resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// create posts content to n and returns the new paste's id.
func (b *bench) create(n *pnode, content []byte) (string, error) {
	id, status, err := b.post(n.url, content)
	if err == nil && status != http.StatusCreated {
		err = fmt.Errorf("create: %d %s", status, http.StatusText(status))
	}
	return id, err
}

// post creates a paste of content at base and returns its id and the
// answer's status.
func (b *bench) post(base string, content []byte) (string, int, error) {
	resp, err := b.hc.Post(base+"/", "application/octet-stream", bytes.NewReader(content))
	if err != nil {
		return "", 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Header.Get("X-Paste-Id"), resp.StatusCode, nil
}

// fill creates total pastes of 1 KiB on n, each different from every
// other the run makes, from 32 clients at once, and returns their ids.
func (b *bench) fill(ctx context.Context, n *pnode, total int) ([]string, error) {
	from := b.filled
	b.filled += int64(total)
	res := b.createMany(ctx, n.url, bulk{total: total, clients: 32, size: len(b.content), stopOnError: true,
		content: func(i int64, body []byte) {
			copy(body, b.content)
			copy(body, fmt.Sprintf("%09d ", from+i))
		}})
	return res.ids, res.firstErr
}

// bulk describes pastes that createMany makes: total of size bytes from
// clients at once, paste i's content written by content.
type bulk struct {
	total, clients, size int
	content              func(i int64, body []byte)
	stopOnError          bool // else every paste is tried and the failures counted
	sums                 bool // keep each content's sha256
}

// created is what createMany made: each paste's id ("" where the create
// failed), the sha256 of its content when asked, and how many answers had
// each status (0: no answer).
type created struct {
	ids      []string
	sums     [][sha256.Size]byte
	statuses map[int]int
	firstErr error
}

// createMany creates the pastes l describes at base.
func (b *bench) createMany(ctx context.Context, base string, l bulk) created {
	res := created{ids: make([]string, l.total), statuses: map[int]int{}}
	if l.sums {
		res.sums = make([][sha256.Size]byte, l.total)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range l.clients {
		wg.Go(func() {
			body := make([]byte, l.size)
			for i := next.Add(1) - 1; i < int64(l.total) && ctx.Err() == nil; i = next.Add(1) - 1 {
				l.content(i, body)
				if l.sums {
					res.sums[i] = sha256.Sum256(body)
				}
				id, status, err := b.post(base, body)
				if err == nil && status != http.StatusCreated {
					err = fmt.Errorf("create: %d %s", status, http.StatusText(status))
				}
				mu.Lock()
				res.statuses[status]++
				if err != nil && res.firstErr == nil {
					res.firstErr = err
				}
				mu.Unlock()
				if err != nil {
					if l.stopOnError {
						cancel()
					}
					continue
				}
				res.ids[i] = id
			}
		})
	}
	wg.Wait()
	if res.firstErr == nil && ctx.Err() != nil {
		res.firstErr = ctx.Err()
	}
	return res
}

// cluster starts three nodes that form one cluster and returns them once
// every one is ready.
func (b *bench) cluster(ctx context.Context) ([]*pnode, error) {
	seeds, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	var nodes []*pnode
	for i := range 3 {
		ports, err := freePorts(2)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("c%d", i+1)
		n := &pnode{name: name, bin: filepath.Join(b.bin, "pastenode"), url: "http://" + ports[0]}
		n.args = []string{"--node-id", name, "--data-dir", filepath.Join(b.tmp, name),
			"--http-addr", ports[0], "--raft-addr", ports[1], "--gossip-addr", seeds[i],
			"--join", strings.Join(seeds, ","), "--bootstrap-expect", "3", "--log-level", "warn",
			"--rate-limit", "0", "--max-conns-per-ip", "0"}
		if err := b.restart(n); err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		if err := b.ready(ctx, n, 60*time.Second); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// follower returns a node of nodes that is a Raft follower.
func (b *bench) follower(nodes []*pnode) (*pnode, error) {
	for _, n := range nodes {
		st, err := b.status(n)
		if err == nil && strings.EqualFold(st.Node.State, "follower") {
			return n, nil
		}
	}
	return nil, errors.New("no follower in the cluster")
}

// insecureClient trusts any certificate, for the bench's self-signed one.
func insecureClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// bounce stops n with SIGTERM, runs whileStopped (if not nil), starts n
// again and waits until it is ready and holds pastes pastes.
func (b *bench) bounce(ctx context.Context, n *pnode, pastes int, whileStopped func() error) error {
	b.procs.stop(n.cmd, time.Minute)
	if whileStopped != nil {
		if err := whileStopped(); err != nil {
			return err
		}
	}
	if err := b.restart(n); err != nil {
		return err
	}
	if err := b.ready(ctx, n, 5*time.Minute); err != nil {
		return err
	}
	return waitFor(ctx, 5*time.Minute, "every paste back", func() error {
		st, err := b.status(n)
		if err == nil && st.Store.Pastes < int64(pastes) {
			err = fmt.Errorf("%d of %d pastes", st.Store.Pastes, pastes)
		}
		return err
	})
}

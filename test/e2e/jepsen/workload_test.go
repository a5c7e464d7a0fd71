package jepsen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

const (
	readTimeout  = 2 * time.Second
	writeTimeout = 4 * time.Second
	burnRacers   = 3 // concurrent consumes of each burn paste, on distinct nodes
)

// recorder collects the history with monotonic times since its start.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op
}

func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *recorder) add(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

func (r *recorder) history() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// paste is an acknowledged create the clients may read or delete.
type paste struct {
	id, token, content string
	node               string // where it was created
	deleting           bool   // a delete was sent (whatever its outcome)
}

// registry holds the acknowledged plain pastes, newest last.
type registry struct {
	mu       sync.Mutex
	pastes   []*paste
	unhanded []string // burn pastes no racer got
}

func (g *registry) add(p *paste) {
	g.mu.Lock()
	g.pastes = append(g.pastes, p)
	g.mu.Unlock()
}

// pick returns a recent paste: half the time one of the last 20, else one of
// the last 500, so that reads meet fresh creates and fresh deletes. With
// forDelete it marks the paste as being deleted and skips marked ones.
func (g *registry) pick(rng *mathrand.Rand, forDelete bool) *paste {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.pastes)
	if n == 0 {
		return nil
	}
	window := min(n, 500)
	if rng.IntN(2) == 0 {
		window = min(n, 20)
	}
	for try := 0; try < 5; try++ {
		p := g.pastes[n-1-rng.IntN(window)]
		if !forDelete {
			return p
		}
		if !p.deleting {
			p.deleting = true
			return p
		}
	}
	return nil
}

// kept returns id -> content of every paste no delete was sent for.
func (g *registry) kept() map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]string{}
	for _, p := range g.pastes {
		if !p.deleting {
			out[p.id] = p.content
		}
	}
	return out
}

// workload drives the clients against the cluster's nodes.
type workload struct {
	nodes []*node
	rec   *recorder
	reg   registry
	http  *http.Client
	// once serves consumes: without keep-alive, so that net/http never
	// replays a GET on a reused connection that broke after the node may
	// already have handed the paste out (the replay would see a 404).
	once *http.Client
}

func newWorkload(nodes []*node, rec *recorder) *workload {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     5 * time.Second,
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	once := &http.Transport{DialContext: tr.DialContext, DisableKeepAlives: true}
	return &workload{nodes: nodes, rec: rec, http: &http.Client{Transport: tr, CheckRedirect: noRedirect},
		once: &http.Client{Transport: once, CheckRedirect: noRedirect}}
}

// client runs one client until ctx ends. Its ops never overlap each other,
// except the burn races, which use sub-client ids.
func (w *workload) client(ctx context.Context, c int, seed uint64) {
	rng := mathrand.New(mathrand.NewPCG(seed, uint64(c)))
	for seq := 0; ctx.Err() == nil; seq++ {
		switch r := rng.IntN(100); {
		case r < 25:
			if p := w.create(c, rng, seq, false); p != nil {
				w.read(c, w.other(rng, p.node), p.id, KindRead)
			}
		case r < 68:
			if p := w.reg.pick(rng, false); p != nil {
				w.read(c, w.random(rng), p.id, KindRead)
			}
		case r < 82:
			if p := w.reg.pick(rng, true); p != nil {
				nd := w.random(rng)
				w.delete(c, nd, p)
				w.read(c, w.other(rng, nd.id), p.id, KindRead)
			}
		default:
			if p := w.create(c, rng, seq, true); p != nil {
				w.race(c, rng, p.id)
			}
		}
	}
}

func (w *workload) random(rng *mathrand.Rand) *node { return w.nodes[rng.IntN(len(w.nodes))] }

// other returns a random node other than the one named not.
func (w *workload) other(rng *mathrand.Rand, not string) *node {
	for {
		if nd := w.random(rng); nd.id != not {
			return nd
		}
	}
}

// race sends burnRacers consumes of a burn paste at once, to distinct nodes
// in random order, as sub-clients of client c.
// A paste no racer got is kept for finishBurns.
func (w *workload) race(c int, rng *mathrand.Rand, id string) {
	order := rng.Perm(len(w.nodes))
	var wg sync.WaitGroup
	got := make([]bool, burnRacers)
	for j := 0; j < burnRacers; j++ {
		nd := w.nodes[order[j%len(order)]]
		wg.Go(func() { got[j] = w.read(numClients+c*burnRacers+j, nd, id, KindConsume).Result == ResultOK })
	}
	wg.Wait()
	if !slices.Contains(got, true) {
		w.reg.mu.Lock()
		w.reg.unhanded = append(w.reg.unhanded, id)
		w.reg.mu.Unlock()
	}
}

// finishBurns consumes, once the cluster has healed, every burn paste that
// no racer got, retrying unknown outcomes until ctx ends. Content here
// means the paste was still there: any 404 its racers got was false, unless
// a racer whose answer was lost handed it out, and then this is a second
// hand-out. It returns how many were handed out now.
func (w *workload) finishBurns(ctx context.Context) int {
	w.reg.mu.Lock()
	ids := append([]string(nil), w.reg.unhanded...)
	w.reg.mu.Unlock()
	n := 0
	for k, id := range ids {
		nd := w.nodes[k%len(w.nodes)]
		for ctx.Err() == nil {
			op := w.read(lateClient, nd, id, KindConsume)
			if op.Result == ResultOK {
				n++
			}
			if op.Result != ResultUnknown {
				break
			}
		}
	}
	return n
}

// numClients is how many clients run at once; the ids of the burn racers
// (sub-clients) follow theirs, then lateClient's, which reads after healing.
const (
	numClients = 8
	lateClient = numClients * (1 + burnRacers)
)

func content(c, seq int, rng *mathrand.Rand) string {
	var b strings.Builder
	fmt.Fprintf(&b, "c%d-%d-", c, seq)
	for n := 8 + rng.IntN(300); n > 0; n-- {
		b.WriteByte(byte('!' + rng.IntN(94)))
	}
	return b.String()
}

// outcome maps an HTTP answer to a result.
func outcome(status int, err error) Result {
	switch {
	case err != nil:
		return ResultUnknown
	case status >= 200 && status < 300:
		return ResultOK
	case status == http.StatusNotFound:
		return ResultNotFound
	}
	return ResultUnknown
}

// do sends one request with the timeout covering the whole body.
func (w *workload) do(req *http.Request, timeout time.Duration) (int, http.Header, []byte, error) {
	return send(w.http, req, timeout)
}

func send(c *http.Client, req *http.Request, timeout time.Duration) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := c.Do(req.WithContext(ctx))
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body, err
}

// create posts a paste, as JSON or as a raw body, and registers it if
// acknowledged. Creates whose id never came back are recorded without a key.
func (w *workload) create(c int, rng *mathrand.Rand, seq int, burn bool) *paste {
	nd := w.random(rng)
	text := content(c, seq, rng)
	var req *http.Request
	if rng.IntN(2) == 0 {
		b, _ := json.Marshal(map[string]any{"content": text, "burn": burn})
		req, _ = http.NewRequest(http.MethodPost, nd.url()+"/api/v1/pastes", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
	} else {
		req, _ = http.NewRequest(http.MethodPost, nd.url()+fmt.Sprintf("/?burn=%t", burn), strings.NewReader(text))
		req.Header.Set("Content-Type", "text/plain")
	}
	op := Op{Client: c, Node: nd.id, Kind: KindCreate, Content: text, Call: w.rec.now()}
	status, hdr, body, err := w.do(req, writeTimeout)
	op.Return, op.Status, op.Result = w.rec.now(), status, outcome(status, err)
	if err != nil {
		op.Err = err.Error()
	}
	p := &paste{content: text, node: nd.id}
	if op.Result == ResultOK {
		p.id, p.token = hdr.Get("X-Paste-Id"), hdr.Get("X-Delete-Token")
		var created struct {
			ID    string `json:"id"`
			Token string `json:"delete_token"`
		}
		if p.id == "" && json.Unmarshal(body, &created) == nil {
			p.id, p.token = created.ID, created.Token
		}
		if p.id == "" || status != http.StatusCreated {
			op.Result, op.Err = ResultUnknown, "no id in the answer"
		}
	}
	op.Key = p.id
	if op.Result != ResultOK {
		op.Key = ""
	}
	w.rec.add(op)
	if op.Key == "" {
		return nil
	}
	if !burn {
		w.reg.add(p)
	}
	return p
}

// read sends GET /raw/{id}; for a burn paste that is a consume.
func (w *workload) read(c int, nd *node, id string, kind Kind) Op {
	req, _ := http.NewRequest(http.MethodGet, nd.url()+"/raw/"+id, nil)
	client := w.http
	if kind == KindConsume {
		client = w.once
	}
	op := Op{Client: c, Node: nd.id, Key: id, Kind: kind, Call: w.rec.now()}
	status, _, body, err := send(client, req, readTimeout)
	op.Return, op.Status, op.Result = w.rec.now(), status, outcome(status, err)
	if err != nil {
		op.Err = err.Error()
	}
	if op.Result == ResultOK {
		op.Content = string(body)
	}
	w.rec.add(op)
	return op
}

// delete sends DELETE /{id} with the paste's delete token.
func (w *workload) delete(c int, nd *node, p *paste) {
	req, _ := http.NewRequest(http.MethodDelete, nd.url()+"/"+p.id, nil)
	req.Header.Set("X-Delete-Token", p.token)
	op := Op{Client: c, Node: nd.id, Key: p.id, Kind: KindDelete, Call: w.rec.now()}
	status, _, _, err := w.do(req, writeTimeout)
	op.Return, op.Status, op.Result = w.rec.now(), status, outcome(status, err)
	if err != nil {
		op.Err = err.Error()
	}
	w.rec.add(op)
}

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// chaosClient is the writers' and readers' client: bounded so that a request
// to a node that dies mid-answer cannot hang a writer, and long enough for a
// write held through an election (up to 7s).
var chaosClient = &http.Client{
	Timeout:   15 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 16},
}

// chaosLog is what the writers and readers saw, shared between them.
type chaosLog struct {
	mu       sync.Mutex
	acked    map[string][]byte // plain pastes answered 201: id → content
	burns    map[string]*burnLog
	attempts int            // create attempts
	failed   map[string]int // failed create attempts by reason
}

// burnLog is the reads of one acknowledged burn paste.
type burnLog struct {
	content   []byte
	delivered int // 200s with the content
	unsure    int // reads without a definite answer (error, 5xx)
	other     []string
}

func (l *chaosLog) fail(reason string) {
	l.mu.Lock()
	l.failed[reason]++
	l.mu.Unlock()
}

// create posts content to a random node, and on failure to the others in
// turn, until one answers 201 or ctx ends. It returns the paste's id, or ""
// if no node acknowledged it.
func (l *chaosLog) create(ctx context.Context, rng *rand.Rand, urls []string, content []byte, query string) string {
	for i := rng.IntN(len(urls)); ctx.Err() == nil; i++ {
		l.mu.Lock()
		l.attempts++
		l.mu.Unlock()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, urls[i%len(urls)]+"/"+query, bytes.NewReader(content))
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := chaosClient.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				l.fail("transport error")
			}
		} else {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if id := resp.Header.Get("X-Paste-Id"); resp.StatusCode == http.StatusCreated && id != "" {
				return id
			}
			l.fail(fmt.Sprintf("status %d", resp.StatusCode))
		}
		select { // a retry backoff, not a wait for state
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return ""
}

// readBurn reads burn paste id once at url and records what came back.
func (l *chaosLog) readBurn(url, id string) {
	resp, err := chaosClient.Get(url + "/raw/" + id)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.burns[id]
	switch {
	case err != nil || resp.StatusCode >= 500:
		b.unsure++
	case resp.StatusCode == http.StatusOK && bytes.Equal(body, b.content):
		b.delivered++
	case resp.StatusCode != http.StatusNotFound:
		b.other = append(b.other, fmt.Sprintf("%s: %d %.80q", url, resp.StatusCode, body))
	}
}

// chaosContent is a unique paste: a header, then random text or binary.
func chaosContent(rng *rand.Rand, writer, seq int) []byte {
	b := fmt.Appendf(nil, "chaos writer %d paste %d\n", writer, seq)
	n := 1 + rng.IntN(2048)
	if rng.IntN(2) == 0 {
		for range n {
			b = append(b, byte(rng.UintN(256)))
		}
		return b
	}
	const text = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 {}();\t\n"
	for range n {
		b = append(b, text[rng.IntN(len(text))])
	}
	return b
}

// TestChaos writes to random nodes while a nemesis crashes and restarts one
// node at a time, then checks that no acknowledged paste is lost on any
// node and that no burn paste was handed out twice. The nodes purge every
// half second, so the burns consumed keep cutting the Raft log under the
// crashes, and nodes that come back behind a cut must be sent a snapshot.
func TestChaos(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t, "chaos", 3, "--purge-after", "2s")
	urls := make([]string, len(nodes))
	for i, p := range nodes {
		urls[i] = p.URL
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	l := &chaosLog{acked: map[string][]byte{}, burns: map[string]*burnLog{}, failed: map[string]int{}}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stopWriters := func() { cancel(); wg.Wait() }
	defer stopWriters() // also when the nemesis fails the test
	const plainWriters, burnWriters = 4, 2
	for w := range plainWriters + burnWriters {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		burn := w >= plainWriters
		wg.Go(func() {
			for seq := 0; ctx.Err() == nil; seq++ {
				content := chaosContent(rng, w, seq)
				if !burn {
					if id := l.create(ctx, rng, urls, content, ""); id != "" {
						l.mu.Lock()
						if _, dup := l.acked[id]; dup {
							t.Errorf("id %s acknowledged twice", id)
						}
						l.acked[id] = content
						l.mu.Unlock()
					}
					continue
				}
				id := l.create(ctx, rng, urls, content, "?burn=true")
				if id == "" {
					continue
				}
				l.mu.Lock()
				l.burns[id] = &burnLog{content: content}
				l.mu.Unlock()
				// Every node is asked at the same moment; one reader at most
				// may get the content.
				var readers sync.WaitGroup
				for _, u := range urls {
					readers.Go(func() { l.readBurn(u, id) })
				}
				readers.Wait()
			}
		})
	}

	// The nemesis: odd rounds crash the leader, even rounds a random node;
	// the node stays down a while and is back and ready before the next.
	rng := rand.New(rand.NewPCG(seed, 1000))
	const rounds = 5
	start := time.Now()
	for round := range rounds {
		time.Sleep(time.Duration(1000+rng.IntN(1000)) * time.Millisecond) // the fault schedule
		victim := nodes[rng.IntN(len(nodes))]
		if round%2 == 0 {
			if id := leaderAt(victim.URL); id != "" {
				victim = byID(t, nodes, id)
			}
		}
		t.Logf("round %d: SIGKILL %s", round+1, victim.id)
		victim.kill()
		time.Sleep(time.Duration(1000+rng.IntN(1000)) * time.Millisecond)
		victim.restart()
		t.Logf("round %d: %s ready again", round+1, victim.id)
	}
	time.Sleep(time.Second) // writes against a whole cluster once more
	stopWriters()
	elapsed := time.Since(start)

	for _, p := range nodes {
		p.waitReady()
	}
	lost := checkAcked(t, urls, l.acked)

	// Read every burn paste on every node once more: whatever is left may
	// go to one reader, never to a second.
	burned := 0
	for id, b := range l.burns {
		for _, u := range urls {
			l.readBurn(u, id)
		}
		switch {
		case b.delivered > 1:
			t.Errorf("burn paste %s delivered %d times", id, b.delivered)
		case len(b.other) > 0:
			t.Errorf("burn paste %s: unexpected answers %v", id, b.other)
		case b.delivered == 0 && b.unsure == 0:
			t.Errorf("burn paste %s: every read answered 404, none delivered it", id)
		}
		burned += b.delivered
	}

	var reasons []string
	failed := 0
	for r, n := range l.failed {
		reasons = append(reasons, fmt.Sprintf("%s: %d", r, n))
		failed += n
	}
	sort.Strings(reasons)
	summary := fmt.Sprintf("chaos: %d rounds in %s; %d creates acknowledged (%d plain, %d burn) of %d attempts, %d attempts failed (%s); %d plain lost; %d burn pastes delivered once",
		rounds, elapsed.Round(100*time.Millisecond), len(l.acked)+len(l.burns), len(l.acked), len(l.burns),
		l.attempts, failed, strings.Join(reasons, ", "), lost, burned)
	t.Log(summary)
	fmt.Println(summary)
	if len(l.acked) == 0 || len(l.burns) == 0 {
		t.Errorf("nothing was acknowledged: the test tested nothing")
	}
}

// leaderAt returns the leader that the node at url names, or "".
func leaderAt(url string) string {
	resp, err := chaosClient.Get(url + "/api/v1/status")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var st clusterStatus
	json.NewDecoder(resp.Body).Decode(&st)
	return st.Node.LeaderID
}

// checkAcked reads every acknowledged paste on every node, once, and returns
// how many are missing or wrong anywhere.
func checkAcked(t *testing.T, urls []string, acked map[string][]byte) int {
	t.Helper()
	type job struct {
		id      string
		content []byte
	}
	jobs := make(chan job)
	var (
		mu   sync.Mutex
		lost = map[string]string{}
		wg   sync.WaitGroup
	)
	for range 6 {
		wg.Go(func() {
			for j := range jobs {
				for _, u := range urls {
					resp, err := chaosClient.Get(u + "/raw/" + j.id)
					var body []byte
					if err == nil {
						body, err = io.ReadAll(resp.Body)
						resp.Body.Close()
					}
					var why string
					switch {
					case err != nil:
						why = err.Error()
					case resp.StatusCode != http.StatusOK:
						why = fmt.Sprintf("status %d %.80q", resp.StatusCode, body)
					case !bytes.Equal(body, j.content):
						why = fmt.Sprintf("got %d bytes, want %d", len(body), len(j.content))
					default:
						continue
					}
					mu.Lock()
					lost[j.id] = u + ": " + why
					mu.Unlock()
				}
			}
		})
	}
	for id, content := range acked {
		jobs <- job{id, content}
	}
	close(jobs)
	wg.Wait()
	shown := 0
	for id, why := range lost {
		if shown++; shown <= 20 {
			t.Errorf("acknowledged paste %s: %s", id, why)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d acknowledged pastes missing or wrong on some node", len(lost), len(acked))
	}
	return len(lost)
}

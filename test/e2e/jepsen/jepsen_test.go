package jepsen

import (
	"context"
	"flag"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

const numNodes = 3

// config is the run's knobs, from the environment (the Makefile sets them).
type config struct {
	duration time.Duration // client traffic, PASTE_JEPSEN_DURATION (default 35s)
	quiet    time.Duration // gap between faults, PASTE_JEPSEN_FAULT_GAP (default 2s)
	seed     uint64        // PASTE_JEPSEN_SEED, default from the clock
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration such as 35s", name, v)
	}
	return d
}

func loadConfig(t *testing.T) config {
	cfg := config{
		duration: envDuration(t, "PASTE_JEPSEN_DURATION", 35*time.Second),
		quiet:    envDuration(t, "PASTE_JEPSEN_FAULT_GAP", 2*time.Second),
		seed:     uint64(time.Now().UnixNano()),
	}
	if v := os.Getenv("PASTE_JEPSEN_SEED"); v != "" {
		fmt.Sscan(v, &cfg.seed)
	}
	return cfg
}

// requireRoot skips without root (network namespaces and iptables need it),
// but fails under CI=true, where the run is expected to happen.
func requireRoot(t *testing.T) {
	reason := ""
	if os.Geteuid() != 0 {
		reason = "needs root for network namespaces and iptables"
	}
	for _, tool := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil && reason == "" {
			reason = "needs " + tool + " in PATH"
		}
	}
	if reason == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("jepsen: %s (CI=true: not skipping)", reason)
	}
	t.Skipf("jepsen: %s", reason)
}

// TestJepsen runs 3 real nodes in network namespaces, 8 clients and a
// nemesis, then checks the history and sweeps for lost creates. It runs only
// with PASTE_JEPSEN=1 (make jepsen-short, make jepsen).
func TestJepsen(t *testing.T) {
	if os.Getenv("PASTE_JEPSEN") != "1" {
		t.Skip("jepsen: set PASTE_JEPSEN=1 to run (make jepsen-short, make jepsen)")
	}
	requireRoot(t)
	cfg := loadConfig(t)
	t.Logf("jepsen: %v of traffic, a fault every %v-%v, seed %d", cfg.duration, cfg.quiet, 2*cfg.quiet, cfg.seed)
	bin := buildBinary(t)
	setupNetwork(t, numNodes)
	c := startCluster(t, bin, numNodes)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	err := c.waitReady(ctx)
	cancel()
	if err != nil {
		t.Fatalf("cluster never became ready: %v", err)
	}

	rec := &recorder{start: time.Now()}
	w := newWorkload(c.nodes, rec)
	nem := &nemesis{c: c, rec: rec, rng: mathrand.New(mathrand.NewPCG(cfg.seed, 99)), quiet: cfg.quiet,
		logf: t.Logf, counts: map[string]int{}}
	traffic, stop := context.WithTimeout(context.Background(), cfg.duration)
	defer stop()
	var wg sync.WaitGroup
	for i := 0; i < numClients; i++ {
		wg.Go(func() { w.client(traffic, i, cfg.seed) })
	}
	wg.Go(func() { nem.run(traffic) })
	wg.Wait()

	ctx, cancel = context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := c.waitReady(ctx); err != nil {
		t.Errorf("after healing: %v", err)
	}
	late := w.finishBurns(ctx)
	t.Logf("figures: burn pastes no racer got=%d, handed out after healing=%d", len(w.reg.unhanded), late)
	history := rec.history()
	want := w.reg.kept()
	sweep := w.sweep(ctx, want)
	report := Check(history, 20*time.Second)
	lost := Lost(want, sweep)
	printFigures(t, history, nem, report, want, lost)
	nem.mu.Lock()
	for _, e := range nem.errs {
		t.Errorf("nemesis: %s", e)
	}
	nem.mu.Unlock()
	if !report.OK() || len(lost) > 0 {
		explain(t, report, lost)
	}
}

// sweep reads every kept paste from every node, retrying answers that are
// not final (503, timeouts) and a 404 twice, until ctx ends. It returns each
// node's last answer per id.
func (w *workload) sweep(ctx context.Context, want map[string]string) []Op {
	type job struct {
		nd *node
		id string
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var out []Op
	var wg sync.WaitGroup
	for i := 0; i < numClients; i++ {
		wg.Go(func() {
			for j := range jobs {
				var op Op
				for try := 0; ; try++ {
					op = w.read(lateClient, j.nd, j.id, KindRead)
					if op.Result == ResultOK || (op.Result == ResultNotFound && try >= 2) || ctx.Err() != nil {
						break
					}
					time.Sleep(300 * time.Millisecond)
				}
				mu.Lock()
				out = append(out, op)
				mu.Unlock()
			}
		})
	}
	for id := range want {
		for _, nd := range w.nodes {
			jobs <- job{nd, id}
		}
	}
	close(jobs)
	wg.Wait()
	return out
}

// artifactsDir is where visualizations and logs go: PASTE_JEPSEN_ARTIFACTS,
// else the test's artifact dir under -artifacts -outputdir, else a new
// directory under the system's temporary directory that is kept.
func artifactsDir(t *testing.T) string {
	artifactsOnce.Do(func() {
		dir := os.Getenv("PASTE_JEPSEN_ARTIFACTS")
		if f := flag.Lookup("test.artifacts"); dir == "" && f != nil && f.Value.String() == "true" {
			dir = t.ArtifactDir()
		}
		if dir == "" {
			d, err := os.MkdirTemp("", "pastenode-jepsen-")
			if err != nil {
				t.Fatal(err)
			}
			dir = d
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		artifacts = dir
	})
	return artifacts
}

var (
	artifactsOnce sync.Once
	artifacts     string
)

// explain saves porcupine's visualization of the first illegal ids and
// prints the history of the first offending ids.
func explain(t *testing.T, r *Report, lost []Finding) {
	dir := artifactsDir(t)
	for i, k := range r.Illegal {
		if i == 20 {
			t.Logf("... and %d more illegal ids", len(r.Illegal)-20)
			break
		}
		p := filepath.Join(dir, "porcupine-"+k+".html")
		if err := r.VisualizePath(k, p); err != nil {
			t.Logf("visualize %s: %v", k, err)
			continue
		}
		t.Logf("visualization of %s: %s", k, p)
	}
	// Up to three ids per kind of finding, with their whole history; then
	// ids only porcupine rejected, if any.
	shown, named, perKind := map[string]bool{}, map[string]bool{}, map[string]int{}
	for _, f := range append(append([]Finding(nil), r.Findings...), lost...) {
		if f.Kind == FindNonLinear {
			continue
		}
		named[f.Key] = true
		if shown[f.Key] || perKind[f.Kind] == 3 {
			continue
		}
		shown[f.Key] = true
		perKind[f.Kind]++
		t.Errorf("%s%s", f, historyText(r.History(f.Key)))
	}
	unnamed := 0
	for _, k := range r.Illegal {
		if !named[k] && unnamed < 3 {
			unnamed++
			t.Errorf("%s: %s%s", FindNonLinear, k, historyText(r.History(k)))
		}
	}
}

// lagsOf returns the sorted lags of the findings of one kind.
func lagsOf(r *Report, kind string) []time.Duration {
	var lags []time.Duration
	for _, f := range r.Findings {
		if f.Kind == kind {
			lags = append(lags, time.Duration(f.Lag).Round(time.Microsecond))
		}
	}
	slices.Sort(lags)
	return lags
}

func historyText(ops []Op) string {
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "\n    %s", op)
	}
	return b.String()
}

// printFigures logs the run's figures.
func printFigures(t *testing.T, history []Op, nem *nemesis, r *Report, want map[string]string, lost []Finding) {
	byKind := map[string]int{}
	var acked, unknown int
	for _, op := range history {
		byKind[op.Kind.String()+"/"+op.Result.String()]++
		if op.Result == ResultOK && (op.Kind == KindCreate || op.Kind == KindDelete) {
			acked++
		}
		if op.Result == ResultUnknown {
			unknown++
		}
	}
	var kinds []string
	for k, n := range byKind {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	raced := map[string]int{}
	for _, op := range history {
		if op.Kind == KindConsume {
			raced[op.Key]++
		}
	}
	lostKeys := map[string]bool{}
	for _, f := range lost {
		lostKeys[f.Key] = true
	}
	t.Logf("figures: ops=%d by kind/outcome: %s", len(history), strings.Join(kinds, " "))
	t.Logf("figures: acknowledged creates+deletes=%d unknown outcomes=%d", acked, unknown)
	t.Logf("figures: faults: %s", nem.summary())
	t.Logf("figures: burn ids raced=%d (%d consumes)", len(raced), byKind["consume/ok"]+byKind["consume/404"]+byKind["consume/unknown"])
	t.Logf("figures: keys checked=%d (porcupine: not linearizable=%d, timed out=%d), swept=%d ids x %d nodes",
		r.Keys, r.Counts[FindNonLinear], r.Counts[FindCheckTimeout], len(want), numNodes)
	t.Logf("figures: lost=%d (ids; %d node answers) stale reads=%d false 404s=%d false burn 404s=%d burns handed twice=%d wrong content=%d other=%d",
		len(lostKeys), len(lost), r.Counts[FindStale], r.Counts[FindFalse404], r.Counts[FindBurnFalse],
		r.Counts[FindBurnTwice], r.Counts[FindWrong], r.Counts[FindBadOutcome])
	for _, kind := range []string{FindStale, FindFalse404, FindBurnFalse} {
		if lags := lagsOf(r, kind); len(lags) > 0 {
			t.Logf("figures: %s started after what it contradicts by: min %v, median %v, max %v", kind,
				lags[0], lags[len(lags)/2], lags[len(lags)-1])
		}
	}
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// rowGroups are the names -only accepts, each a group of rows measured
// together.
var rowGroups = []string{"rss", "restart", "export", "reads", "readcpu", "creates", "rejoin", "capacity", "writecost"}

// all measures every row b.only selects, in the order.
func (b *bench) all(ctx context.Context) ([]row, error) {
	content := make([]byte, 768)
	rand.Read(content)
	b.content = []byte(base64.StdEncoding.EncodeToString(content)) // 1024 bytes of text

	var rows []row
	if b.want("readcpu") { // first, while nothing else runs
		rows = append(rows, b.inMemoryReadRow(ctx))
	}
	if b.want("rss", "restart", "export", "reads") {
		single, err := b.singleRows(ctx)
		if err != nil {
			return nil, err
		}
		rows = append(rows, single...)
	}
	if b.want("creates", "rejoin") {
		b.say("3-node pastenode cluster")
		nodes, err := b.cluster(ctx)
		if err != nil {
			return nil, err
		}
		if b.want("creates") {
			creates, err := b.createRows(ctx, nodes)
			if err != nil {
				return nil, err
			}
			rows = append(rows, creates...)
		}
		if b.want("rejoin") {
			rejoin, err := b.rejoinRow(ctx, nodes)
			if err != nil {
				return nil, err
			}
			rows = append(rows, rejoin)
		}
	}
	if b.want("capacity") {
		rows = append(rows, b.capacityRow(ctx))
	}
	if b.want("writecost") {
		cost, err := b.writeCostRows(ctx)
		if err != nil {
			return nil, err
		}
		rows = append(rows, cost...)
	}
	return orderRows(rows), nil
}

// singleRows measures the rows of one node holding b.pastes pastes: the
// memory, the restart, the export and the reads.
func (b *bench) singleRows(ctx context.Context) ([]row, error) {
	b.say("single node: starting and loading %d pastes", b.pastes)
	live, err := b.startNode("live")
	if err != nil {
		return nil, err
	}
	if err := b.ready(ctx, live, 30*time.Second); err != nil {
		return nil, err
	}
	if b.id, err = b.create(live, b.content); err != nil {
		return nil, err
	}
	start := time.Now()
	ids, err := b.fill(ctx, live, b.pastes-1)
	if err != nil {
		return nil, fmt.Errorf("load pastes: %w", err)
	}
	b.say("loaded in %s", time.Since(start).Round(time.Second/10))
	ids = append(ids, b.id)
	var rows []row
	if b.want("restart") {
		restart, err := b.restartRow(ctx, live, ids)
		if err != nil {
			return nil, err
		}
		rows = append(rows, restart)
	}
	var cdb string
	if b.want("export", "reads") {
		var export []row
		export, cdb = b.exportRows(ctx, live)
		if b.want("export") {
			rows = append(rows, export...)
		}
	}
	if b.want("reads") {
		reads, err := b.readRows(ctx, live, cdb)
		if err != nil {
			return nil, err
		}
		rows = append(rows, reads...)
	}
	if b.want("rss") {
		// Last, as the other rows are of -pastes pastes.
		if more := b.memory - len(ids); more > 0 {
			b.say("memory: loading %d pastes more", more)
			start := time.Now()
			if _, err := b.fill(ctx, live, more); err != nil {
				return nil, fmt.Errorf("load pastes: %w", err)
			}
			b.say("loaded in %s", time.Since(start).Round(time.Second/10))
		}
		memory, err := b.memoryRow(live, max(b.memory, len(ids)))
		if err != nil {
			return nil, err
		}
		rows = append(rows, memory)
	}
	return rows, nil
}

// want reports whether -only selects any of the row groups named.
func (b *bench) want(groups ...string) bool {
	if len(b.only) == 0 {
		return true
	}
	for _, g := range groups {
		if b.only[g] {
			return true
		}
	}
	return false
}

// orderRows puts rows in the order, which is not the order they
// are measured in.
func orderRows(rows []row) []row {
	order := []string{"GET /raw/{id}, 1 KiB", "same read on pastenode mirror", "reference: live vs the bare", "reference: mirror vs the bare",
		"reference: mirror vs kawipiko", "reference: CPU per raw read", "CPU per raw read of 1 KiB", "GET /raw/{id}, 1 MiB", "1 KiB creates through", "reference: CPU of the 3 processes", "anonymous memory", "restart (", "HTTPS read",
		"1,000 connections", "pastectl export", "reference: CPU per paste of a first export", "restarted follower",
		"capacity", "1 KiB creates on one node", "bytes written", "restart to ready"}
	rank := func(r row) int {
		for i, prefix := range order {
			if strings.HasPrefix(r.figure, prefix) {
				return i
			}
		}
		return len(order)
	}
	slices.SortStableFunc(rows, func(a, b row) int { return rank(a) - rank(b) })
	return rows
}

// memoryRow is the node's anonymous memory per paste once it holds n
// pastes of 1 KiB: with the content on disk, only the index should cost
// memory. The total RSS is printed beside it.
func (b *bench) memoryRow(node *pnode, n int) (row, error) {
	r := row{figure: fmt.Sprintf("anonymous memory (RssAnon) of one node with %d pastes of 1 KiB", n),
		target: "<= 128 B/paste + 64 MiB", ratio: -1}
	m, err := residentMemory(node.cmd.Process.Pid)
	if err != nil {
		return r, err
	}
	limit := 128*int64(n) + 64<<20
	r.ours = fmt.Sprintf("%.0f MiB (%.0f B/paste; RSS %.0f MiB, files %.0f MiB)", mib(m.anon),
		float64(m.anon)/float64(n), mib(m.rss), mib(m.file))
	r.peer = fmt.Sprintf("%.0f MiB allowed", mib(limit))
	r.ratio = float64(m.anon) / float64(limit)
	r.met = metOrMiss(m.anon <= limit)
	return r, nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// restartRuns is how many restarts the restart row takes the median of:
// restarts of one build took 0.45 s to 0.69 s here.
const restartRuns = 3

// restartRow stops the node with SIGTERM, starts it again and times until
// it is ready and holds every paste, restartRuns times; after each it
// checks that a sample of the pastes reads back, outside the timing.
func (b *bench) restartRow(ctx context.Context, n *pnode, ids []string) (row, error) {
	r := row{figure: fmt.Sprintf("restart (SIGTERM, start, /readyz and every paste back), per 100k pastes; %d pastes, median of %d", len(ids), restartRuns),
		target: "<= 0.5 s per 100k", ratio: -1}
	runs, err := b.timeRestarts(ctx, n, len(ids), func() error { return b.readBack(n, ids) })
	if err != nil {
		return r, err
	}
	took := median(runs)
	per := took * 100_000 / float64(len(ids))
	r.ours = fmt.Sprintf("%.2f s (%.2f s in all; runs %s s)", per, took, joinSeconds(runs))
	r.met = metOrMiss(per <= 0.5)
	return r, nil
}

// timeRestarts stops n with SIGTERM and starts it again restartRuns times,
// and returns the seconds until it was ready and held its pastes pastes
// each time; after each it runs check (if not nil), outside the timing.
func (b *bench) timeRestarts(ctx context.Context, n *pnode, pastes int, check func() error) ([]float64, error) {
	b.say("restart with %d pastes, %d times", pastes, restartRuns)
	var runs []float64
	for range restartRuns {
		start := time.Now()
		if err := b.bounce(ctx, n, pastes, nil); err != nil {
			return nil, err
		}
		runs = append(runs, time.Since(start).Seconds())
		if check != nil {
			if err := check(); err != nil {
				return nil, err
			}
		}
	}
	return runs, nil
}

// joinSeconds lists durations in seconds, as "0.45 0.63".
func joinSeconds(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, " ")
}

// readBack reads 1,000 of ids (all, if fewer) from n and wants 200.
func (b *bench) readBack(n *pnode, ids []string) error {
	for i := 0; i < len(ids); i += max(1, len(ids)/1000) {
		resp, err := b.hc.Get(n.url + "/raw/" + ids[i])
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("after the restart /raw/%s is %s", ids[i], resp.Status)
		}
	}
	return nil
}

// readRows measures the read rows: raw reads on the live node, the mirror,
// the bare handler, nginx and kawipiko, over HTTP and HTTPS, then 1,000
// connections on the live node and the bare handler, then reads of 1 MiB
// on the live node and nginx.
func (b *bench) readRows(ctx context.Context, live *pnode, cdb string) ([]row, error) {
	t, large, err := b.readTargets(ctx, live, cdb)
	if err != nil {
		return nil, err
	}
	b.say("reads: %d rounds", b.rounds)
	byName, cpu, err := b.runRounds(ctx, t, b.conns, false)
	if err != nil {
		return nil, err
	}
	b.say("1,000 connections: %d rounds", b.rounds)
	wide, _, err := b.runRounds(ctx, []target{t[0], t[1]}, 1000, true)
	if err != nil {
		return nil, err
	}
	b.say("reads of 1 MiB: %d rounds", b.rounds)
	largeRuns, _, err := b.runRounds(ctx, large, b.conns, false)
	if err != nil {
		return nil, err
	}
	rows := []row{
		ratioRow("GET /raw/{id}, 1 MiB, live node vs nginx with sendfile", largeRuns["live"], largeRuns["nginx"], 0),
		ratioRow("GET /raw/{id}, 1 KiB, live node vs bare net/http", byName["live"], byName["bare"], 0.95),
		ratioRow("same read on pastenode mirror vs bare net/http", byName["mirror"], byName["bare"], 0.95),
		ratioRow("reference: live vs the bare handler sending the live node's headers too", byName["live"], byName["bare-like"], 0),
		ratioRow("reference: mirror vs the bare handler sending the mirror's headers too", byName["mirror"], byName["bare-mirror"], 0),
		ratioRow("GET /raw/{id}, 1 KiB, live node vs nginx (2 workers, static file)", byName["live"], byName["nginx"], 0.9),
		ratioRow("reference: mirror vs kawipiko-server on our export", byName["mirror"], byName["kawipiko"], 0),
		ratioRow("HTTPS read (keep-alive), live vs nginx, same certificate", byName["live-tls"], byName["nginx-tls"], 0),
		p99Row("1,000 connections, live vs bare: p99", wide["live"], wide["bare"]),
		readCPURow("live node", cpu["live"], cpu["bare"]),
	}
	if cpu["mirror"] != nil {
		rows = append(rows, readCPURow("mirror", cpu["mirror"], cpu["bare"]))
	}
	return rows, nil
}

// target is one server a read load runs against: the process pid, when
// the CPU it spends per read is measured.
type target struct {
	name, url string
	pid       int
}

// readTargets starts the servers the read rows compare and returns them,
// the live node first and the bare handler second, and apart from them the
// live node and nginx serving a paste of 1 MiB.
func (b *bench) readTargets(ctx context.Context, live *pnode, cdb string) (t, large []target, err error) {
	www := filepath.Join(b.tmp, "www")
	file := filepath.Join(www, "raw", b.id)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(file, b.content, 0o644); err != nil {
		return nil, nil, err
	}
	ports, err := freePorts(5)
	if err != nil {
		return nil, nil, err
	}
	bare, err := b.startBare(ctx, "bare", ports[0], file)
	if err != nil {
		return nil, nil, err
	}
	if _, err := b.startBare(ctx, "bare-like", ports[3], file, "--like", live.url+"/raw/"+b.id); err != nil {
		return nil, nil, err
	}
	cert, key, err := selfSigned(b.tmp)
	if err != nil {
		return nil, nil, err
	}
	if err := b.startNginx(ctx, www, ports[1], ports[2], ports[4], cert, key); err != nil {
		return nil, nil, err
	}
	tls, err := b.startNode("tls", "--tls-cert", cert, "--tls-key", key)
	if err != nil {
		return nil, nil, err
	}
	if err := b.ready(ctx, tls, 30*time.Second); err != nil {
		return nil, nil, err
	}
	tlsID, err := b.create(tls, b.content)
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(www, "raw", tlsID), b.content, 0o644); err != nil {
		return nil, nil, err
	}
	largeID, err := b.largePaste(live, www)
	if err != nil {
		return nil, nil, err
	}
	large = []target{
		{"live", live.url + "/raw/" + largeID, 0},
		{"nginx", "http://" + ports[4] + "/raw/" + largeID, 0},
	}
	t = []target{
		{"live", live.url + "/raw/" + b.id, live.cmd.Process.Pid},
		{"bare", "http://" + ports[0] + "/raw/" + b.id, bare},
		{"bare-like", "http://" + ports[3] + "/raw/" + b.id, 0},
		{"nginx", "http://" + ports[1] + "/raw/" + b.id, 0},
		{"live-tls", tls.url + "/raw/" + tlsID, 0},
		{"nginx-tls", "https://" + ports[2] + "/raw/" + tlsID, 0},
	}
	if cdb == "" {
		return t, large, nil
	}
	mirrors, err := b.mirrorTargets(ctx, cdb, file)
	return append(t, mirrors...), large, err
}

// largePaste creates a paste of 1 MiB of random bytes on n, writes the
// same file under www for nginx, and returns its id.
func (b *bench) largePaste(n *pnode, www string) (string, error) {
	content := make([]byte, 1<<20)
	bigContent(-1, content)
	id, err := b.create(n, content)
	if err != nil {
		return "", fmt.Errorf("a paste of 1 MiB: %w", err)
	}
	return id, os.WriteFile(filepath.Join(www, "raw", id), content, 0o644)
}

// mirrorTargets starts pastenode mirror on the export cdb, a bare handler
// serving file with the mirror's headers, and kawipiko-server when it is
// installed, and returns them.
func (b *bench) mirrorTargets(ctx context.Context, cdb, file string) ([]target, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	mirrorURL := "http://" + ports[0] + "/raw/" + b.id
	mirror, err := b.procs.start("mirror", filepath.Join(b.bin, "pastenode"), "mirror", "--cdb", cdb, "--http-addr", ports[0])
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, time.Minute, "mirror", httpOK(b.hc, mirrorURL)); err != nil {
		return nil, fmt.Errorf("%w (%v)", err, b.procs.exitedEarly(mirror))
	}
	if _, err := b.startBare(ctx, "bare-mirror", ports[1], file, "--like", mirrorURL); err != nil {
		return nil, err
	}
	t := []target{{"mirror", mirrorURL, mirror.Process.Pid}, {"bare-mirror", "http://" + ports[1] + "/raw/" + b.id, 0}}
	kawipiko, err := b.startKawipiko(ctx, cdb)
	if err != nil || kawipiko == "" {
		return t, err
	}
	return append(t, target{"kawipiko", kawipiko + "/raw/" + b.id, 0}), nil
}

// startBare serves file with bench/bare on addr, with its extra flags,
// logging to name.log, and returns its pid.
func (b *bench) startBare(ctx context.Context, name, addr, file string, extra ...string) (int, error) {
	args := append([]string{"--addr", addr, "--file", file}, extra...)
	bare, err := b.procs.start(name, filepath.Join(b.bin, "bare"), args...)
	if err != nil {
		return 0, err
	}
	return bare.Process.Pid, waitFor(ctx, 10*time.Second, "bare", func() error {
		if err := b.procs.exitedEarly(bare); err != nil {
			return err
		}
		return httpOK(b.hc, "http://"+addr+"/")()
	})
}

// runRounds runs wrk against every target once per round, rotating the
// order each round, and returns each target's runs by name, and the CPU
// that the targets with a pid spent on them.
func (b *bench) runRounds(ctx context.Context, targets []target, conns int, latency bool) (map[string][]wrkResult, map[string]*cpuPerOp, error) {
	res, cpu := map[string][]wrkResult{}, map[string]*cpuPerOp{}
	for round := range b.rounds {
		for i := range targets {
			t := targets[(i+round)%len(targets)]
			var before time.Duration
			if t.pid != 0 {
				var err error
				if before, err = cpuTime([]int{t.pid}); err != nil {
					return nil, nil, err
				}
			}
			r, err := runWrk(ctx, load{url: t.url, conns: conns, duration: b.duration, latency: latency})
			if err != nil {
				return nil, nil, err
			}
			res[t.name] = append(res[t.name], r)
			if t.pid != 0 {
				after, err := cpuTime([]int{t.pid})
				if err != nil {
					return nil, nil, err
				}
				if cpu[t.name] == nil {
					cpu[t.name] = &cpuPerOp{}
				}
				cpu[t.name].add(after-before, r.requests)
			}
		}
	}
	return res, cpu, nil
}

// startKawipiko serves cdb with kawipiko-server when it is installed and
// returns its base URL, or "" when it is not.
func (b *bench) startKawipiko(ctx context.Context, cdb string) (string, error) {
	path, err := exec.LookPath("kawipiko-server")
	if err != nil {
		return "", nil
	}
	addr, err := freePort()
	if err != nil {
		return "", err
	}
	if _, err := b.procs.start("kawipiko", path, "--archive", cdb, "--archive-mmap", "--index-all", "--bind", addr); err != nil {
		return "", err
	}
	return "http://" + addr, waitFor(ctx, time.Minute, "kawipiko-server", httpOK(b.hc, "http://"+addr+"/raw/"+b.id))
}

// createRows compares 1 KiB creates through a follower of a 3-node
// pastenode cluster with 1 KiB puts through a follower of a 3-member etcd:
// the throughput, and the CPU the three processes spent per write, which
// the machine's other load moves less.
func (b *bench) createRows(ctx context.Context, nodes []*pnode) ([]row, error) {
	b.say("3-member etcd")
	follower, err := b.follower(nodes)
	if err != nil {
		return nil, err
	}
	var ourPIDs []int
	for _, n := range nodes {
		ourPIDs = append(ourPIDs, n.cmd.Process.Pid)
	}
	etcd, etcdPIDs, err := b.startEtcd(ctx)
	if err != nil {
		return nil, err
	}
	ours, err := b.createScript()
	if err != nil {
		return nil, err
	}
	theirs := filepath.Join(b.tmp, "etcd.lua")
	if err := os.WriteFile(theirs, []byte(etcdPutScript(base64.StdEncoding.EncodeToString(b.content))), 0o644); err != nil {
		return nil, err
	}
	b.say("creates: %d rounds", b.rounds)
	res := map[string][]wrkResult{}
	cpu := map[string]*cpuPerOp{"pastenode": {}, "etcd": {}}
	for round := range b.rounds {
		for i := range 2 {
			l := load{url: follower.url + "/", conns: b.conns, duration: b.duration, script: ours}
			name, pids := "pastenode", ourPIDs
			if (i+round)%2 == 1 {
				l.url, l.script, name, pids = etcd+"/v3/kv/put", theirs, "etcd", etcdPIDs
			}
			before, err := cpuTime(pids)
			if err != nil {
				return nil, err
			}
			r, err := runWrk(ctx, l)
			if err != nil {
				return nil, err
			}
			after, err := cpuTime(pids)
			if err != nil {
				return nil, err
			}
			res[name] = append(res[name], r)
			cpu[name].add(after-before, r.requests)
		}
	}
	r := ratioRow("1 KiB creates through a follower of 3 nodes vs etcd 3.4 puts through a follower's gateway", res["pastenode"], res["etcd"], 2.0)
	bad := sumBad(res["pastenode"])
	r.ours += fmt.Sprintf(", %d non-201", bad)
	r.peer += fmt.Sprintf(", %d non-200", sumBad(res["etcd"]))
	r.target = ">= 2.0x, zero non-201"
	if bad != 0 {
		r.met = "MISS"
	}
	return []row{r, cpuRow(cpu["pastenode"], cpu["etcd"])}, nil
}

// cpuPerOp adds up the CPU time and the requests of runs.
type cpuPerOp struct {
	cpu      time.Duration
	requests int64
}

func (c *cpuPerOp) add(cpu time.Duration, requests int64) {
	c.cpu += cpu
	c.requests += requests
}

// per is the CPU time per request, or 0 without requests.
func (c *cpuPerOp) per() time.Duration {
	if c.requests == 0 {
		return 0
	}
	return c.cpu / time.Duration(c.requests)
}

// readCPURow prints the CPU the server (the live node or the mirror) spent
// per raw read against the bare handler's, in the same rounds, and the
// bare handler's over ours (as the read rows' ratios, 1x is bare's cost):
// the read rows' throughput shares the CPUs with wrk, and this figure
// moves less with the machine's other load.
func readCPURow(server string, ours, bare *cpuPerOp) row {
	r := row{figure: "reference: CPU per raw read, " + server + " vs bare net/http, same runs (ratio: bare's over ours)",
		target: "printed, no target", met: "-", ratio: -1}
	if ours == nil || bare == nil {
		r.ours, r.peer = "not measured", "not measured"
		return r
	}
	r.ours = fmt.Sprintf("%.1f µs per read", float64(ours.per().Nanoseconds())/1e3)
	r.peer = fmt.Sprintf("%.1f µs per read", float64(bare.per().Nanoseconds())/1e3)
	if ours.per() > 0 && bare.per() > 0 {
		r.ratio = float64(bare.per()) / float64(ours.per())
	}
	return r
}

// cpuRow prints the CPU per write of ours and etcd's, and how many times
// more etcd spends.
func cpuRow(ours, etcd *cpuPerOp) row {
	r := row{figure: "reference: CPU of the 3 processes per 1 KiB write, same runs (ratio: etcd's over ours)",
		target: "printed, no target", met: "-", ratio: -1}
	r.ours = fmt.Sprintf("%d µs per create", ours.per().Microseconds())
	r.peer = fmt.Sprintf("%d µs per put", etcd.per().Microseconds())
	if ours.per() > 0 && etcd.per() > 0 {
		r.ratio = float64(etcd.per()) / float64(ours.per())
	}
	return r
}

func sumBad(rs []wrkResult) int64 {
	var n int64
	for _, r := range rs {
		n += max(r.bad, 0) + r.errors
	}
	return n
}

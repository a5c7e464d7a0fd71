package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// inMemoryBuild is the last commit whose nodes kept every paste in memory
// (upgradeFrom in test/e2e/upgrade_test.go, which builds it the same way).
// Issue 47 wants a read of a hot paste from disk to cost no more CPU than
// a read from memory did.
const inMemoryBuild = "8fb1ff5da781a857fc0564987ff8f89a07e9d000"

// inMemoryTarget is the least ratio of the in-memory build's CPU per read
// over ours that meets the "no more CPU": 1 less the spread that
// runs of this build against itself show, so that noise alone rarely
// misses it.
const inMemoryTarget = 0.95

// inMemoryReadRow compares the CPU per raw read of one hot 1 KiB paste on
// a fresh node of this build, which preads it from its segment, with that
// of a fresh node of inMemoryBuild, rounds interleaved as the read rows'.
// A failure, the old build's included, misses the row and says why rather
// than end the run, as the capacity row does.
func (b *bench) inMemoryReadRow(ctx context.Context) row {
	res, cpu, err := b.inMemoryReads(ctx)
	if err != nil {
		b.say("CPU per read against %s: %v", inMemoryBuild[:7], err)
		return inMemoryRow(nil, nil, nil, nil, err.Error())
	}
	return inMemoryRow(res["ondisk"], res["inmemory"], cpu["ondisk"], cpu["inmemory"], "")
}

// inMemoryReads starts a node of this build and one of inMemoryBuild, and
// runs the rounds of raw reads on each one's hot paste; both nodes are
// stopped at the end, so that they do not idle through later rows.
func (b *bench) inMemoryReads(ctx context.Context) (map[string][]wrkResult, map[string]*cpuPerOp, error) {
	old, err := b.buildInMemory(ctx)
	if err != nil {
		return nil, nil, err
	}
	b.say("CPU per read against %s: 2 nodes, %d rounds", inMemoryBuild[:7], b.rounds)
	var targets []target
	for _, n := range []struct{ name, bin string }{{"ondisk", filepath.Join(b.bin, "pastenode")}, {"inmemory", old}} {
		node, err := b.startNodeOf(n.bin, n.name)
		if node != nil && node.cmd != nil {
			defer b.procs.stop(node.cmd, 10*time.Second)
		}
		if err != nil {
			return nil, nil, err
		}
		url, err := b.hotPaste(ctx, node)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", n.name, err)
		}
		targets = append(targets, target{n.name, url, node.cmd.Process.Pid})
	}
	return b.runRounds(ctx, targets, b.conns, false)
}

// hotPaste waits until n is ready, creates the paste of b.content on it
// and returns its raw URL once it serves the content byte-exact.
func (b *bench) hotPaste(ctx context.Context, n *pnode) (string, error) {
	if err := b.ready(ctx, n, 30*time.Second); err != nil {
		return "", err
	}
	id, err := b.create(n, b.content)
	if err != nil {
		return "", err
	}
	url := n.url + "/raw/" + id
	resp, err := b.hc.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && (resp.StatusCode != 200 || !bytes.Equal(body, b.content)) {
		err = fmt.Errorf("GET %s: %s, %d bytes, not the paste's", url, resp.Status, len(body))
	}
	return url, err
}

// buildInMemory returns the -inmemory-bin binary, or builds pastenode at
// inMemoryBuild from this clone's history into b.tmp. -trimpath keeps the
// build the same wherever its sources are unpacked, so that the go
// command's cache makes every build after the first quick.
func (b *bench) buildInMemory(ctx context.Context) (string, error) {
	if b.oldBin != "" {
		return b.oldBin, nil
	}
	short := inMemoryBuild[:7]
	b.say("building pastenode %s from git history", short)
	top, err := exec.CommandContext(ctx, "git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("no git work tree here to build %s from (%v): run in the repository, or give -inmemory-bin", short, err)
	}
	git := []string{"git", "-C", strings.TrimSpace(string(top))}
	if exec.CommandContext(ctx, "git", slices.Concat(git[1:], []string{"cat-file", "-e", inMemoryBuild + "^{commit}"})...).Run() != nil {
		return "", fmt.Errorf("commit %s is not in this clone (a shallow one? git fetch --unshallow), or give -inmemory-bin", short)
	}
	src, tarball, bin := filepath.Join(b.tmp, "src-"+short), filepath.Join(b.tmp, short+".tar"), filepath.Join(b.tmp, "pastenode-"+short)
	defer os.RemoveAll(src)
	defer os.Remove(tarball)
	if err := os.Mkdir(src, 0o755); err != nil {
		return "", err
	}
	for _, step := range [][]string{
		slices.Concat(git, []string{"archive", "-o", tarball, inMemoryBuild}),
		{"tar", "-x", "-f", tarball, "-C", src},
		{"go", "build", "-trimpath", "-o", bin, "./cmd/pastenode"},
	} {
		cmd := exec.CommandContext(ctx, step[0], step[1:]...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s: %v: %s", strings.Join(step, " "), err, bytes.TrimSpace(out))
		}
	}
	return bin, nil
}

// inMemoryRow prints the CPU per raw read and the rate of ours and of the
// in-memory build, and the in-memory build's CPU per read over ours; the
// CPU ratio is what the target holds, as the rate shares the CPUs with wrk
// and the machine's other load. notMeasured says why there are no runs.
func inMemoryRow(ours, old []wrkResult, oursCPU, oldCPU *cpuPerOp, notMeasured string) row {
	r := row{figure: fmt.Sprintf("CPU per raw read of 1 KiB, on disk (this build) vs in memory (%s), same runs (ratio: in-memory's over ours)", inMemoryBuild[:7]),
		peer: "-", ratio: -1, target: fmt.Sprintf(">= %.2fx", inMemoryTarget), met: "MISS (not measured)"}
	if notMeasured == "" && (oursCPU == nil || oldCPU == nil || oursCPU.per() <= 0 || oldCPU.per() <= 0) {
		notMeasured = "no requests served"
	}
	if notMeasured != "" {
		r.ours = "not measured: " + notMeasured
		return r
	}
	r.ours = fmt.Sprintf("%.1f µs per read (%.0f/s)", float64(oursCPU.per().Nanoseconds())/1e3, medianRPS(ours))
	r.peer = fmt.Sprintf("%.1f µs per read (%.0f/s)", float64(oldCPU.per().Nanoseconds())/1e3, medianRPS(old))
	r.ratio = float64(oldCPU.per()) / float64(oursCPU.per())
	r.met = metOrMiss(r.ratio >= inMemoryTarget)
	return r
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// exportRuns is how many exports the second export row takes the median
// of: one varies by a fifth between runs on the same machine.
const exportRuns = 3

// firstRuns is how many first exports the first export row takes the
// median of, each on the node started again without its page cache: one
// first export took 2.7 s and another 3.5 s on the same machine.
const firstRuns = 3

// exportRows runs pastectl export with its default flags firstRuns times,
// each on the node started again without its page cache (mirror.PageCache),
// so that every page is rendered and compressed, then
// exportRuns times more, when the pages come from the cache. It returns
// the rows, the CPU one among them, and the file for the mirror, or ""
// when an export failed.
func (b *bench) exportRows(ctx context.Context, n *pnode) ([]row, string) {
	b.say("pastectl export: %d first runs, then %d with the page cache", firstRuns, exportRuns)
	first := row{figure: fmt.Sprintf("pastectl export with its default flags, %d pastes, the first (every page made), median of %d", b.pastes, firstRuns),
		target: "succeeds; >= 30k pastes/s", ratio: -1}
	cpu := row{figure: "reference: CPU per paste of a first export, node and pastectl, median", ratio: -1,
		target: "printed, no target", met: "-"}
	again := row{figure: fmt.Sprintf("pastectl export again (pages from the last export), median of %d", exportRuns),
		target: "succeeds; >= 30k pastes/s", ratio: -1}
	file := filepath.Join(b.tmp, "export.cdb")
	cache := filepath.Join(b.tmp, n.name, "export-cache.cdb")
	fail := func(r *row, err error) ([]row, string) {
		r.ours, r.met = err.Error(), "MISS"
		if errors.Is(err, errPartial) {
			return []row{first, cpu, again}, file
		}
		return []row{first, cpu, again}, ""
	}
	var firsts []exportRun
	dropCache := func() error {
		if err := os.Remove(cache); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	for range firstRuns {
		// Every first run is on a node just started, as the first after
		// the restart row was.
		if err := b.bounce(ctx, n, b.pastes, dropCache); err != nil {
			return fail(&first, fmt.Errorf("failed: restarting the node without its page cache: %w", err))
		}
		run, err := b.export(ctx, n, file)
		if err != nil {
			return fail(&first, err)
		}
		firsts = append(firsts, run)
	}
	rate := medianOf(firsts, func(r exportRun) float64 { return r.rate })
	first.ours = fmt.Sprintf("ok, %.0f pastes/s (%.1f s; runs %s)", rate, float64(b.pastes)/rate,
		joinRates(mapRuns(firsts, func(r exportRun) float64 { return r.rate })))
	first.met = metOrMiss(rate >= 30_000)
	cpu.ours = fmt.Sprintf("%.0f µs (node %.0f, pastectl %.0f)", medianOf(firsts, func(r exportRun) float64 { return r.node + r.ctl }),
		medianOf(firsts, func(r exportRun) float64 { return r.node }), medianOf(firsts, func(r exportRun) float64 { return r.ctl }))
	cpu.peer = fmt.Sprintf("30k/s on %d CPUs: %.0f µs", runtime.NumCPU(), float64(runtime.NumCPU())*1e6/30_000)
	var agains []exportRun
	for range exportRuns {
		run, err := b.export(ctx, n, file)
		if err != nil {
			return fail(&again, err)
		}
		agains = append(agains, run)
	}
	rate = medianOf(agains, func(r exportRun) float64 { return r.rate })
	again.ours = fmt.Sprintf("ok, %.0f pastes/s (%.1f s; runs %s)", rate, float64(b.pastes)/rate,
		joinRates(mapRuns(agains, func(r exportRun) float64 { return r.rate })))
	again.met = metOrMiss(rate >= 30_000)
	return []row{first, cpu, again}, file
}

// exportRun is one pastectl export: pastes a second, and the CPU the node
// and pastectl spent on it, in µs per paste.
type exportRun struct{ rate, node, ctl float64 }

// errPartial is an export that ended but left pastes out: its file can
// still be served.
var errPartial = errors.New("export incomplete")

// export runs pastectl export of n into file with its default flags.
func (b *bench) export(ctx context.Context, n *pnode, file string) (exportRun, error) {
	pids := []int{n.cmd.Process.Pid}
	before, err := cpuTime(pids)
	if err != nil {
		return exportRun{}, err
	}
	start := time.Now()
	// The admin token is the one the node generated into its data dir.
	cmd := exec.CommandContext(ctx, filepath.Join(b.bin, "pastectl"), "--addr", n.url,
		"--data-dir", filepath.Join(b.tmp, n.name), "export", "--out", file)
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		return exportRun{}, fmt.Errorf("failed: %s", strings.TrimSpace(string(out)))
	}
	after, err := cpuTime(pids)
	if err != nil {
		return exportRun{}, err
	}
	var pastes int
	fmt.Sscanf(string(out), "exported %d pastes", &pastes)
	if pastes != b.pastes {
		return exportRun{}, fmt.Errorf("%w: exported %d of %d pastes", errPartial, pastes, b.pastes)
	}
	perPaste := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(pastes) }
	return exportRun{
		rate: float64(pastes) / took.Seconds(),
		node: perPaste(after - before),
		ctl:  perPaste(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()),
	}, nil
}

// mapRuns is f of each run.
func mapRuns(runs []exportRun, f func(exportRun) float64) []float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	return v
}

// medianOf is the median of f over runs.
func medianOf(runs []exportRun, f func(exportRun) float64) float64 { return median(mapRuns(runs, f)) }

// joinRates lists rates in thousands per second, as "22.4k 23.1k".
func joinRates(rates []float64) string {
	s := make([]string, len(rates))
	for i, v := range rates {
		s[i] = fmt.Sprintf("%.1fk", v/1000)
	}
	return strings.Join(s, " ")
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// writeCostRows fills one node with the big store and compares its 1 KiB
// creates with those of an empty node, rounds interleaved: the rate, the
// bytes written to disk per create while the big node takes them
// (snapshots and compaction included; see writeCostRow), and the big
// node's restart.
func (b *bench) writeCostRows(ctx context.Context) ([]row, error) {
	b.say("write cost: an empty node, and one with %d pastes of %d bytes", bigPastes, bigPasteSize)
	empty, err := b.startNode("empty")
	if err != nil {
		return nil, err
	}
	big, err := b.startNode("big")
	if err != nil {
		return nil, err
	}
	for _, n := range []*pnode{empty, big} {
		if err := b.ready(ctx, n, 30*time.Second); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if res := b.fillBig(ctx, big.url); res.firstErr != nil {
		return nil, fmt.Errorf("fill the big node: %w (%v)", res.firstErr, res.statuses)
	}
	// The fill leaves gigabytes dirty in the page cache, which the kernel
	// would write back during the first rounds, on the big node's account:
	// a node holds a large store long after it wrote it. sync waits for it.
	unix.Sync()
	b.say("filled and synced in %s", time.Since(start).Round(time.Second/10))
	script, err := b.createScript()
	if err != nil {
		return nil, err
	}
	runs, err := b.runCreates(ctx, empty, big, script)
	if err != nil {
		return nil, err
	}
	res, cpu := runs.res, runs.cpu
	rate := ratioRow(fmt.Sprintf("1 KiB creates on one node holding %d pastes of 1 MB vs on an empty one", bigPastes), res[big], res[empty], 0.8)
	bad := sumBad(res[big]) + sumBad(res[empty])
	// The CPU per create moves less with the machine's other load than
	// the rate, which waits on the disk's flushes as well.
	rate.ours += fmt.Sprintf(", %d non-201, %d µs CPU each", sumBad(res[big]), cpu[big].per().Microseconds())
	rate.peer += fmt.Sprintf(", %d non-201, %d µs CPU each", sumBad(res[empty]), cpu[empty].per().Microseconds())
	rate.target = ">= 0.80x, zero non-201"
	if bad != 0 {
		rate.met = "MISS"
	}
	perCreate := writeCostRow(runs.written, runs.onDisk, runs.creates, runs.disk.name)
	restart, err := b.bigRestartRow(ctx, big)
	if err != nil {
		return nil, err
	}
	return []row{rate, perCreate, restart}, nil
}

// createRuns is what the write-cost rounds measured: each node's wrk
// results and CPU per create, and of the big node the bytes its process
// wrote (write_bytes), the device's writes (-1: unknown) and its 201s.
type createRuns struct {
	res                      map[*pnode][]wrkResult
	cpu                      map[*pnode]*cpuPerOp
	written, onDisk, creates int64
	disk                     device
}

// runCreates runs b.rounds rounds of 1 KiB creates on the two nodes,
// alternating which goes first.
func (b *bench) runCreates(ctx context.Context, empty, big *pnode, script string) (createRuns, error) {
	res := map[*pnode][]wrkResult{}
	cpu := map[*pnode]*cpuPerOp{empty: {}, big: {}}
	var written, onDisk, creates int64
	disk := blockDevice(b.tmp)
	for round := range b.rounds {
		for i := range 2 {
			n := []*pnode{empty, big}[(i+round)%2]
			before, err := bytesWritten(n.cmd.Process.Pid)
			if err != nil {
				return createRuns{}, err
			}
			deviceBefore, deviceErr := disk.written()
			cpuBefore, err := cpuTime([]int{n.cmd.Process.Pid})
			if err != nil {
				return createRuns{}, err
			}
			r, err := runWrk(ctx, load{url: n.url + "/", conns: b.conns, duration: b.duration, script: script})
			if err != nil {
				return createRuns{}, err
			}
			cpuAfter, err := cpuTime([]int{n.cmd.Process.Pid})
			if err != nil {
				return createRuns{}, err
			}
			cpu[n].add(cpuAfter-cpuBefore, r.requests)
			after, err := bytesWritten(n.cmd.Process.Pid)
			if err != nil {
				return createRuns{}, err
			}
			deviceAfter, err := disk.written()
			if deviceErr != nil || err != nil {
				onDisk = -1
			}
			res[n] = append(res[n], r)
			if n == big {
				written += after - before
				if onDisk >= 0 {
					onDisk += deviceAfter - deviceBefore
				}
				creates += r.requests - max(r.bad, 0)
			}
		}
	}
	return createRuns{res, cpu, written, onDisk, creates, disk}, nil
}

// writeCostRow is the bytes written per create: what the block device
// holding the data dir wrote, all processes' writes included, so at most
// the node's; and beside it the node's write_bytes in /proc/PID/io, the
// issue's measure. That one counts a whole page-cache folio each time a
// write dirties it, up to 2 MiB where the file system caches files in
// large folios (ext4 on recent kernels), however few bytes the write
// changed and the disk then receives: it overstates a store that
// rewrites a page in place, as bolt did its log's last leaf at every
// commit. The target must hold on both.
func writeCostRow(written, onDisk, creates int64, device string) row {
	r := row{figure: "bytes written to disk per 1 KiB create, same runs on that node (snapshots and compaction included)",
		peer: "-", ratio: -1, target: "<= 64 KiB", met: "MISS (no creates)"}
	if creates == 0 {
		return r
	}
	perProc := float64(written) / float64(creates)
	r.ours = fmt.Sprintf("write_bytes %.1f KiB (%.0f MiB for %d creates)", perProc/1024, mib(written), creates)
	r.met = metOrMiss(perProc <= 64<<10)
	if onDisk >= 0 && device != "" {
		perDisk := float64(onDisk) / float64(creates)
		r.ours = fmt.Sprintf("%.1f KiB written by %s, all writers; %s", perDisk/1024, device, r.ours)
		r.met = metOrMiss(perProc <= 64<<10 && perDisk <= 64<<10)
	}
	return r
}

// device is the block device that holds a directory, for the bytes it
// has written.
type device struct {
	name string // "" when unknown
	stat string // its /sys/dev/block/MAJ:MIN/stat
}

// blockDevice finds the device that holds dir.
func blockDevice(dir string) device {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return device{}
	}
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	real, err := filepath.EvalSymlinks(sys)
	if err != nil {
		return device{}
	}
	return device{name: filepath.Base(real), stat: filepath.Join(sys, "stat")}
}

// written is the bytes the device has written since the machine started:
// the seventh field of its stat counts 512-byte sectors.
func (d device) written() (int64, error) {
	if d.stat == "" {
		return 0, errors.New("no block device")
	}
	data, err := os.ReadFile(d.stat)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data))
	if len(f) < 7 {
		return 0, fmt.Errorf("%s: %q", d.stat, data)
	}
	sectors, err := strconv.ParseInt(f[6], 10, 64)
	return sectors * 512, err
}

// createScript writes the wrk script of 1 KiB creates and returns its path.
func (b *bench) createScript() (string, error) {
	path := filepath.Join(b.tmp, "create.lua")
	return path, os.WriteFile(path, []byte(countScript(201, "POST", "application/octet-stream", string(b.content))), 0o644)
}

// bigRestartRow is the restart row of the node with the big store: SIGTERM,
// start, /readyz and every paste back, the median of restartRuns.
func (b *bench) bigRestartRow(ctx context.Context, n *pnode) (row, error) {
	r := row{figure: fmt.Sprintf("restart to ready with that store (SIGTERM, start, /readyz, every paste back), median of %d", restartRuns),
		peer: "-", ratio: -1, target: "<= 2 s"}
	st, err := b.status(n)
	if err != nil {
		return r, err
	}
	runs, err := b.timeRestarts(ctx, n, int(st.Store.Pastes), nil)
	if err != nil {
		return r, err
	}
	took := median(runs)
	r.ours = fmt.Sprintf("%.2f s (%d pastes, %.1f GiB on disk; runs %s s)", took, st.Store.Pastes,
		float64(dirSize(filepath.Join(b.tmp, n.name)))/(1<<30), joinSeconds(runs))
	r.met = metOrMiss(took <= 2)
	return r, nil
}

// dirSize is the bytes of the files under dir, each counted once however
// many links it has.
func dirSize(dir string) int64 {
	var n int64
	seen := map[uint64]bool{}
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		n += fi.Size()
		return nil
	})
	return n
}

// bytesWritten is what the process pid has caused to be written to disk
// so far, from /proc/PID/io.
func bytesWritten(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/io: no write_bytes", pid)
}

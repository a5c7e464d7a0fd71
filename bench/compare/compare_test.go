package main

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

const wrkOut = `Running 2s test @ http://127.0.0.1:8080/raw/x
  1 threads and 1000 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    21.50ms   10.20ms 210.00ms   80.00%
    Req/Sec    45.12k     2.00k   48.00k    70.00%
  Latency Distribution
     50%   20.00ms
     75%   25.00ms
     90%   30.00ms
     99%  151.00ms
  90240 requests in 2.00s, 100.00MB read
  Socket errors: connect 0, read 12, write 0, timeout 3
  Non-2xx or 3xx responses: 4
Requests/sec:  45120.50
Transfer/sec:     50.00MB
bad 7
`

func TestParseWrk(t *testing.T) {
	r, err := parseWrk(wrkOut)
	if err != nil {
		t.Fatal(err)
	}
	want := wrkResult{rps: 45120.5, p99: 151 * time.Millisecond, bad: 7, errors: 15, requests: 90240}
	if r != want {
		t.Errorf("got %+v, want %+v", r, want)
	}
	r, err = parseWrk(strings.ReplaceAll(wrkOut, "bad 7\n", ""))
	if err != nil || r.bad != -1 {
		t.Errorf("without the script's line: bad %d, %v; want -1", r.bad, err)
	}
	if _, err := parseWrk("unable to connect to 127.0.0.1:1 Connection refused\n"); err == nil {
		t.Error("a failed run parsed")
	}
}

func TestParseWrkDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"812.00us": 812 * time.Microsecond, "1.50ms": 1500 * time.Microsecond, "2.01s": 2010 * time.Millisecond, "1.00m": time.Minute,
	} {
		if got, err := parseWrkDuration(in); err != nil || got != want {
			t.Errorf("%s: got %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := parseWrkDuration("12"); err == nil {
		t.Error("a duration without unit parsed")
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{9, 1, 5}, 5}, {[]float64{4, 1, 3, 2}, 2.5}}
	for _, tt := range tests {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestRowsAndTable(t *testing.T) {
	runs := func(rps ...float64) []wrkResult {
		var rs []wrkResult
		for _, v := range rps {
			rs = append(rs, wrkResult{rps: v, p99: time.Duration(v) * time.Microsecond})
		}
		return rs
	}
	met := ratioRow("read", runs(96, 100, 1), runs(100, 100, 100), 0.95)
	miss := ratioRow("write", runs(10), runs(100), 2)
	ref := ratioRow("reference", runs(50), nil, 0)
	slow := p99Row("p99", runs(200), runs(100))
	if met.met != "met" || miss.met != "MISS" || ref.met != "-" || ref.peer != "not installed" || slow.met != "MISS" {
		t.Errorf("met: %q %q %q %q (peer %q)", met.met, miss.met, ref.met, slow.met, ref.peer)
	}
	if met.ratio != 0.96 {
		t.Errorf("ratio of the medians: got %v, want 0.96", met.ratio)
	}
	table := formatTable([]row{met, miss, ref, slow})
	for _, want := range []string{"| read | 96/s | 100/s | 0.96x | >= 0.95x | met |", "| reference | 50/s | not installed | - | printed, no target | - |",
		"Misses (2):\n- write\n- p99\n"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestCPUTime(t *testing.T) {
	pid := []int{os.Getpid()}
	before, err := cpuTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the kernel has counted at least two ticks more.
	deadline := time.Now().Add(10 * time.Second)
	for x := 0; time.Now().Before(deadline); x++ {
		if x%1_000_000 == 0 {
			if now, err := cpuTime(pid); err != nil {
				t.Fatal(err)
			} else if now-before >= 2*time.Second/clockTicks {
				return
			}
		}
	}
	t.Fatal("the CPU time of a spinning process did not grow in 10 s")
}

func TestCPUTimeOfNoProcess(t *testing.T) {
	if _, err := cpuTime([]int{-1}); err == nil {
		t.Error("no error for pid -1")
	}
}

func TestCPURow(t *testing.T) {
	ours, etcd := &cpuPerOp{}, &cpuPerOp{}
	ours.add(3*time.Second, 10_000) // 300 µs each
	ours.add(time.Second, 10_000)   // 200 µs each: 200 on average
	etcd.add(6*time.Second, 10_000)
	r := cpuRow(ours, etcd)
	if r.ours != "200 µs per create" || r.peer != "600 µs per put" || r.ratio != 3 || r.met != "-" {
		t.Errorf("got %+v", r)
	}
	if r := cpuRow(&cpuPerOp{}, etcd); r.ratio >= 0 {
		t.Errorf("without requests: ratio %v, want none", r.ratio)
	}
}

func TestReadCPURow(t *testing.T) {
	ours, bare := &cpuPerOp{}, &cpuPerOp{}
	ours.add(4*time.Second, 100_000) // 40 µs each
	bare.add(3*time.Second, 100_000) // 30 µs each
	r := readCPURow("live node", ours, bare)
	if r.ours != "40.0 µs per read" || r.peer != "30.0 µs per read" || r.ratio != 0.75 || r.met != "-" {
		t.Errorf("got %+v", r)
	}
	if r := readCPURow("mirror", nil, bare); r.ratio >= 0 || r.ours != "not measured" {
		t.Errorf("without a measure: %+v", r)
	}
}

func TestWriteCostRow(t *testing.T) {
	tests := []struct {
		name                     string
		written, onDisk, creates int64
		device                   string
		wantMet, wantPrefix      string
	}{
		{"both under the target", 10 << 20, 5 << 20, 1000, "vda", "met", "5.1 KiB written by vda"},
		{"write_bytes over the target", 100 << 20, 10 << 20, 1000, "vda", "MISS", "10.2 KiB written by vda"},
		{"a device over the target", 1 << 20, 100 << 20, 1000, "vda", "MISS", "102.4 KiB written by vda"},
		{"without a device, write_bytes", 100 << 20, -1, 1000, "", "MISS", "write_bytes 102.4 KiB"},
		{"no creates", 1, 1, 0, "vda", "MISS (no creates)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := writeCostRow(tt.written, tt.onDisk, tt.creates, tt.device)
			if r.met != tt.wantMet || !strings.HasPrefix(r.ours, tt.wantPrefix) {
				t.Errorf("got %q, %q; want %q, %q...", r.met, r.ours, tt.wantMet, tt.wantPrefix)
			}
		})
	}
}

func TestBlockDevice(t *testing.T) {
	d := blockDevice(t.TempDir())
	if d.name == "" {
		t.Skip("no block device under the temporary directory")
	}
	if _, err := d.written(); err != nil {
		t.Errorf("%s: %v", d.name, err)
	}
}

func TestInMemoryRow(t *testing.T) {
	cpu := func(perRead time.Duration) *cpuPerOp {
		c := &cpuPerOp{}
		c.add(perRead*100_000, 100_000)
		return c
	}
	runs := []wrkResult{{rps: 50_000}, {rps: 70_000}, {rps: 60_000}}
	tests := []struct {
		name              string
		ours, old         *cpuPerOp
		notMeasured       string
		wantMet, wantOurs string
		wantRatio         float64
	}{
		{"cheaper on disk", cpu(10 * time.Microsecond), cpu(12 * time.Microsecond), "", "met", "10.0 µs per read (60000/s)", 1.2},
		{"as dear", cpu(10 * time.Microsecond), cpu(10 * time.Microsecond), "", "met", "10.0 µs per read (60000/s)", 1},
		{"dearer within the target", cpu(10 * time.Microsecond), cpu(9600 * time.Nanosecond), "", "met", "10.0 µs per read (60000/s)", 0.96},
		{"dearer than the target", cpu(10 * time.Microsecond), cpu(9 * time.Microsecond), "", "MISS", "10.0 µs per read (60000/s)", 0.9},
		{"no old build", nil, nil, "commit 8fb1ff5 is not in this clone", "MISS (not measured)", "not measured: commit 8fb1ff5 is not in this clone", -1},
		{"no requests", &cpuPerOp{}, cpu(time.Microsecond), "", "MISS (not measured)", "not measured: no requests served", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := inMemoryRow(runs, runs, tt.ours, tt.old, tt.notMeasured)
			if r.met != tt.wantMet || r.ours != tt.wantOurs || math.Abs(r.ratio-tt.wantRatio) > 1e-9 {
				t.Errorf("got %q, %q, ratio %v; want %q, %q, %v", r.met, r.ours, r.ratio, tt.wantMet, tt.wantOurs, tt.wantRatio)
			}
			if !strings.Contains(r.figure, inMemoryBuild[:7]) || r.target != ">= 0.95x" {
				t.Errorf("figure %q, target %q", r.figure, r.target)
			}
		})
	}
}

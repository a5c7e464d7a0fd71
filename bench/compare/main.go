// Command compare is make bench: it measures pastenode against its peers
// on this machine in one run and prints one table, each figure a ratio
// taken in the same run, since absolute numbers move between runs on a
// shared machine.
//
// It starts everything it measures on loopback ports and in a temporary
// directory: a bare net/http handler (bench/bare), nginx with 2 workers,
// a 3-member etcd, a single pastenode with N pastes, a 3-node pastenode
// cluster, a TLS pastenode, `pastenode mirror` on an export,
// kawipiko-server when it is on PATH, a fresh node of this build and one
// of the last in-memory build (built from git history), two nodes for
// the write cost (one with a store of 2 GiB), and for the capacity row
// one node in a docker container published on loopback. Loads are wrk runs of one thread,
// interleaved round by round between the two sides of a comparison, and
// a figure is the median of its rounds. Every process it starts is stopped
// when it ends, also on failure or interrupt, and the container and its
// volume removed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// bench holds one run's settings and what it has started.
type bench struct {
	bin      string // pastenode, pastectl and bare
	tmp      string
	rounds   int
	duration time.Duration
	conns    int
	pastes   int
	memory   int // pastes of 1 KiB in the node for the memory row
	image    string
	only     map[string]bool // the row groups to measure; empty: all
	oldBin   string          // pastenode built at inMemoryBuild; "": build it from git history
	log      io.Writer

	procs   *procs
	hc      *http.Client
	content []byte // the 1 KiB every read serves
	id      string // that paste's id on the live node
	filled  int64  // pastes of 1 KiB made so far, so that the next differ
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	b := &bench{log: stderr}
	fs.StringVar(&b.bin, "bin", "bin", "directory with pastenode, pastectl and bare")
	fs.IntVar(&b.rounds, "rounds", 5, "interleaved rounds per comparison")
	fs.DurationVar(&b.duration, "duration", 3*time.Second, "length of one wrk run")
	fs.IntVar(&b.conns, "conns", 64, "wrk connections (the 1,000-connection row has its own)")
	fs.IntVar(&b.pastes, "pastes", 100_000, "pastes of 1 KiB in the node for the memory, restart and export rows")
	fs.IntVar(&b.memory, "memory-pastes", 500_000, "pastes of 1 KiB in the node for the memory row (at least -pastes)")
	fs.StringVar(&b.image, "image", "pastenode:local", "the docker image of the capacity row (make docker-image)")
	fs.StringVar(&b.oldBin, "inmemory-bin", "", "pastenode built at "+inMemoryBuild[:7]+" for the readcpu row (default: built from this clone's history)")
	only := fs.String("only", "", "measure only these row groups, comma-separated: "+strings.Join(rowGroups, ", "))
	out := fs.String("out", "bench/results/latest.txt", "file the table is written to as well")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if b.rounds < 1 || b.duration <= 0 || b.conns < 1 || b.pastes < 1 || b.memory < 1 {
		return fmt.Errorf("-rounds, -duration, -conns, -pastes and -memory-pastes must be positive")
	}
	if *only != "" {
		// A partial table does not replace the latest full one unless
		// asked to.
		if !flagSet(fs, "out") {
			*out = ""
		}
		b.only = map[string]bool{}
		for _, g := range strings.Split(*only, ",") {
			if !slices.Contains(rowGroups, g) {
				return fmt.Errorf("-only %q: want some of %s", g, strings.Join(rowGroups, ", "))
			}
			b.only[g] = true
		}
	}
	if err := b.checkTools(); err != nil {
		return err
	}
	var err error
	if b.tmp, err = os.MkdirTemp("", "pastenode-bench-*"); err != nil {
		return err
	}
	defer os.RemoveAll(b.tmp)
	// nginx's workers run as another user and read the files from here.
	if err := os.Chmod(b.tmp, 0o755); err != nil {
		return err
	}
	b.procs = &procs{dir: b.tmp}
	defer b.procs.stopAll()
	b.hc = insecureClient()

	start := time.Now()
	rows, err := b.all(ctx)
	if err != nil {
		return err
	}
	table := b.header(start) + formatTable(rows)
	fmt.Fprint(stdout, table)
	if *out == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(*out, []byte(table), 0o644)
}

// checkTools fails unless the peers and the binaries to compare are there.
func (b *bench) checkTools() error {
	for _, tool := range []string{"wrk", "nginx", "etcd"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: apt-get install -y wrk nginx-light etcd-server", tool)
		}
	}
	for _, name := range []string{"pastenode", "pastectl", "bare"} {
		if _, err := os.Stat(filepath.Join(b.bin, name)); err != nil {
			return fmt.Errorf("%s: build it first (make bench does)", err)
		}
	}
	return nil
}

// flagSet reports whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// header says when, where and how the table was measured.
func (b *bench) header(start time.Time) string {
	cpu := "unknown CPU"
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	return fmt.Sprintf("make bench, %s; %d CPUs (%s); load average at the end %s\n"+
		"wrk -t1 -c%d, %d interleaved rounds of %s, medians; %d pastes of 1 KiB; took %s\n\n",
		start.UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), cpu, strings.Join(strings.Fields(string(load))[:3], " "),
		b.conns, b.rounds, b.duration, b.pastes, time.Since(start).Round(time.Second))
}

// say reports progress on stderr.
func (b *bench) say(format string, args ...any) {
	fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// procs starts the processes of one run and stops every one of them,
// whatever happens: each runs in its own process group, and stopAll ends
// the groups that are still there.
type procs struct {
	dir string // logs go here

	mu   sync.Mutex
	live map[*exec.Cmd]chan struct{} // closed when the process has exited
}

// start runs name with args, its output in dir/log.log.
func (p *procs) start(log, name string, args ...string) (*exec.Cmd, error) {
	out, err := os.Create(filepath.Join(p.dir, log+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	// Should the bench itself be killed, the kernel still stops what it
	// started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	if p.live == nil {
		p.live = map[*exec.Cmd]chan struct{}{}
	}
	p.live[cmd] = exited
	p.mu.Unlock()
	go func() {
		cmd.Wait()
		out.Close()
		close(exited)
	}()
	return cmd, nil
}

// stop sends SIGTERM to cmd's group and waits for it to exit, then
// SIGKILL after grace. It returns how long the exit took.
func (p *procs) stop(cmd *exec.Cmd, grace time.Duration) time.Duration {
	p.mu.Lock()
	exited, ok := p.live[cmd]
	delete(p.live, cmd)
	p.mu.Unlock()
	if !ok {
		return 0
	}
	start := time.Now()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	return time.Since(start)
}

// kill SIGKILLs cmd's group, as a crash would, and waits for it to exit.
func (p *procs) kill(cmd *exec.Cmd) {
	p.mu.Lock()
	exited, ok := p.live[cmd]
	delete(p.live, cmd)
	p.mu.Unlock()
	if ok {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

// stopAll stops every process still running, all at once.
func (p *procs) stopAll() {
	p.mu.Lock()
	cmds := make([]*exec.Cmd, 0, len(p.live))
	for cmd := range p.live {
		cmds = append(cmds, cmd)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, cmd := range cmds {
		wg.Go(func() { p.stop(cmd, 10*time.Second) })
	}
	wg.Wait()
}

// exitedEarly reports an error if cmd is no longer running.
func (p *procs) exitedEarly(cmd *exec.Cmd) error {
	p.mu.Lock()
	exited := p.live[cmd]
	p.mu.Unlock()
	if exited == nil {
		return nil
	}
	select {
	case <-exited:
		return fmt.Errorf("%s exited: %v (see the logs in %s)", filepath.Base(cmd.Path), cmd.ProcessState, p.dir)
	default:
		return nil
	}
}

// freePort returns a loopback address with a port that nothing listens on.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// freePorts returns n distinct free loopback addresses.
func freePorts(n int) ([]string, error) {
	var addrs []string
	for len(addrs) < n {
		a, err := freePort()
		if err != nil {
			return nil, err
		}
		if !strings.Contains(strings.Join(addrs, " "), a) {
			addrs = append(addrs, a)
		}
	}
	return addrs, nil
}

// waitFor polls cond every 20ms until it returns nil or the timeout ends.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within %s: %w", what, timeout, err)
		case <-tick.C:
		}
	}
}

// httpOK returns a cond for waitFor: url answers 200.
func httpOK(hc *http.Client, url string) func() error {
	return func() error {
		resp, err := hc.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	}
}

// memory is the resident memory of a process, from /proc/PID/status.
type memory struct {
	rss  int64 // VmRSS, all of it
	anon int64 // RssAnon: the heap and stacks
	file int64 // RssFile: mapped files (the binary, the Raft log's mmap)
}

// residentMemory reads the resident memory of the process pid.
func residentMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	fields := map[string]*int64{"VmRSS:": &m.rss, "RssAnon:": &m.anon, "RssFile:": &m.file}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, _ := strings.Cut(line, "\t")
		if dst := fields[name]; dst != nil {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
				return memory{}, fmt.Errorf("%s %q: %w", name, v, err)
			}
			*dst = kb << 10
		}
	}
	if m.rss == 0 {
		return memory{}, errors.New("no VmRSS")
	}
	return m, nil
}

// clockTicks is the unit of the CPU times in /proc/PID/stat (USER_HZ,
// 100 on every Linux the bench runs on).
const clockTicks = 100

// cpuTime is the CPU time the processes pids have used so far, user and
// system, their threads' included, from /proc/PID/stat.
func cpuTime(pids []int) (time.Duration, error) {
	var ticks int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, err
		}
		// The command name, in parentheses, may hold spaces: the fields
		// counted are those after it, utime and stime being the 12th and
		// 13th.
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if i < 0 || len(f) < 13 {
			return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
		}
		for _, v := range f[11:13] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
			}
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

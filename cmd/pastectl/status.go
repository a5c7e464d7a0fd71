package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/client"
)

// exitDegraded is status's exit code when the cluster has a leader but a
// voter is down, unready, lagging, or a node's storage is full.
const exitDegraded = 3

// defaultMaxLag is how many entries a voter may apply behind the leader's
// commit index before status calls it lagging.
const defaultMaxLag = 1000

// codeError is an error that exits with its own code.
type codeError struct {
	code int
	error
}

func (e codeError) Unwrap() error { return e.error }

// statusOptions are the flags of the status command.
type statusOptions struct {
	watch         bool
	memberTimeout time.Duration
	maxLag        uint64
}

func (c *cli) statusCommand() *cobra.Command {
	var o statusOptions
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every member of the cluster, as each one reports itself",
		Long: "status asks the node at --addr for the members, then asks every member in\n" +
			"parallel (--member-timeout each) and shows one row per member: role,\n" +
			"suffrage, gossip state, applied index and lag behind the leader's commit\n" +
			"index, last contact with the leader, version, uptime, pastes, bytes and\n" +
			"readiness; the leader's row is marked with *. Members that do not answer\n" +
			"say why below the table.\n\n" +
			"Exit codes: 0 healthy, 1 no leader (or --addr unreachable), 2 usage, 3\n" +
			"degraded: a voter does not answer, is not ready or lags more than --max-lag\n" +
			"entries, or a member refuses creates for want of storage.\n" +
			"--watch redraws it every second until interrupted.",
		Args: cobra.NoArgs,
	}
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		if !o.watch {
			return c.statusOnce(ctx, cl, o, c.stdout)
		}
		return c.watchStatus(ctx, cl, o)
	})
	f := cmd.Flags()
	f.BoolVarP(&o.watch, "watch", "w", false, "refresh every second until interrupted")
	f.DurationVar(&o.memberTimeout, "member-timeout", 2*time.Second, "how long to wait for each member's answer")
	f.Uint64Var(&o.maxLag, "max-lag", defaultMaxLag, "entries a voter may lag behind the leader's commit before it counts as degraded")
	return cmd
}

// statusOnce gathers the view, prints it to w, and returns the error that
// gives the exit code.
func (c *cli) statusOnce(ctx context.Context, cl *client.Client, o statusOptions, w io.Writer) error {
	st, err := cl.Status(ctx)
	if err != nil {
		return err
	}
	v := c.gather(ctx, st, o)
	if c.output == "json" {
		err = jsonEncoder(w).Encode(v)
	} else {
		err = printStatus(w, v)
	}
	if err != nil {
		return err
	}
	switch {
	case st.Node.LeaderID == "":
		return shownError{errors.New("no leader")}
	case v.Degraded:
		return shownError{codeError{exitDegraded, fmt.Errorf("degraded: %s", strings.Join(v.Problems, "; "))}}
	}
	return nil
}

// watchStatus redraws the status every second until ctx ends; on a
// terminal it clears the screen first. It ends with exit 0.
func (c *cli) watchStatus(ctx context.Context, cl *client.Client, o statusOptions) error {
	clear := isTerminal(c.stdout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		var buf bytes.Buffer
		err := c.statusOnce(ctx, cl, o, &buf)
		if ctx.Err() != nil {
			return nil
		}
		if clear {
			io.WriteString(c.stdout, "\033[H\033[2J")
		}
		c.stdout.Write(buf.Bytes())
		if err != nil && c.output != "json" {
			fmt.Fprintf(c.stdout, "%s\n", err)
		}
		if clear {
			fmt.Fprintf(c.stdout, "\n%s, every 1s; Ctrl-C to stop\n", time.Now().Format(time.TimeOnly))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// clusterView is what status shows: the asked node's answer, with every
// member as it reported itself.
type clusterView struct {
	pastenode.Status
	Members           []memberView `json:"members"`
	LeaderCommitIndex uint64       `json:"leader_commit_index"`
	Degraded          bool         `json:"degraded"`
	Problems          []string     `json:"problems"`
}

// memberView is one member: as the asked node knows it, and as it answered.
type memberView struct {
	pastenode.Member
	Role  string                 `json:"role"`
	Self  *pastenode.NodeStatus  `json:"status,omitempty"` // its own answer
	Store *pastenode.StoreStatus `json:"store,omitempty"`
	Lag   *uint64                `json:"lag,omitempty"` // behind the leader's commit index
	Error string                 `json:"error,omitempty"`
}

// gather asks every member for its status in parallel and judges the
// cluster.
func (c *cli) gather(ctx context.Context, st *pastenode.Status, o statusOptions) *clusterView {
	v := &clusterView{Status: *st, Members: make([]memberView, len(st.Members)), Problems: []string{}}
	var wg sync.WaitGroup
	for i, m := range st.Members {
		v.Members[i].Member = m
		if m.ID == st.Node.ID {
			self, store := st.Node, st.Store
			v.Members[i].Self, v.Members[i].Store = &self, &store
			continue
		}
		wg.Add(1)
		go func(mv *memberView) {
			defer wg.Done()
			mv.Self, mv.Store, mv.Error = c.askMember(ctx, mv.APIAddr, o.memberTimeout)
		}(&v.Members[i])
	}
	wg.Wait()
	v.judge(o.maxLag)
	return v
}

// askMember asks the member at apiAddr for its own status.
func (c *cli) askMember(ctx context.Context, apiAddr string, timeout time.Duration) (*pastenode.NodeStatus, *pastenode.StoreStatus, string) {
	if apiAddr == "" {
		return nil, nil, "no API address known (not in gossip)"
	}
	// The address comes from gossip, so it is the member's own word: the
	// status call needs no token, and none is sent there.
	cl, err := client.New([]string{c.scheme() + "://" + apiAddr}, client.Options{Timeout: timeout})
	if err != nil {
		return nil, nil, err.Error()
	}
	st, err := cl.Status(ctx)
	if err != nil {
		return nil, nil, oneLine(err)
	}
	return &st.Node, &st.Store, ""
}

// scheme is the scheme of the first --addr: members are asked the same way.
func (c *cli) scheme() string {
	if strings.HasPrefix(strings.TrimSpace(c.addr), "https://") {
		return "https"
	}
	return "http"
}

// judge fills in roles and lags, and lists what makes the cluster degraded.
func (v *clusterView) judge(maxLag uint64) {
	v.LeaderCommitIndex = v.Node.CommitIndex
	for _, m := range v.Members {
		if m.Self != nil && m.Self.State == "leader" {
			v.LeaderCommitIndex = m.Self.CommitIndex
		}
	}
	for i := range v.Members {
		m := &v.Members[i]
		m.Role = roleOf(m.Member, v.Node.LeaderID)
		if m.Self == nil && m.Error != "" {
			m.Role = unreachable
		}
		if m.Self != nil {
			m.Role = strings.ToLower(m.Self.State)
			lag := uint64(0)
			if m.Self.AppliedIndex < v.LeaderCommitIndex {
				lag = v.LeaderCommitIndex - m.Self.AppliedIndex
			}
			m.Lag = &lag
		}
		if p := m.problem(maxLag); p != "" {
			v.Degraded = true
			v.Problems = append(v.Problems, m.ID+": "+p)
		}
	}
}

// unreachable is the role of a member that cannot be reached: it did not
// answer, or the asked node knows it is down.
const unreachable = "unreachable"

// roleOf is m's role as the node that listed it knows it: unreachable
// when the leader's Raft or gossip says so, else from the configuration.
func roleOf(m pastenode.Member, leaderID string) string {
	switch {
	case m.Unreachable:
		return unreachable
	case m.Leader || (leaderID != "" && m.ID == leaderID):
		return "leader"
	case m.Suffrage != "none":
		return "follower"
	}
	return "-"
}

// problem says what makes this member count against the cluster's health,
// or "" if nothing does.
func (m *memberView) problem(maxLag uint64) string {
	if m.Self != nil && m.Self.StorageFull {
		return "storage full: " + m.Self.StorageReason
	}
	if m.Suffrage != "voter" {
		return ""
	}
	switch {
	case m.Self == nil:
		return "voter not answering: " + m.Error
	case !m.Self.Ready:
		return "voter not ready: " + m.Self.ReadyReason
	case m.Lag != nil && *m.Lag > maxLag:
		return fmt.Sprintf("voter %d entries behind the leader's commit index (more than %d)", *m.Lag, maxLag)
	}
	return ""
}

// memberJSON is a member as members prints it: as the asked node knows
// it, with its role.
type memberJSON struct {
	pastenode.Member
	Role string `json:"role"`
}

func (c *cli) membersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "members",
		Short: "List the cluster's members as the node at --addr knows them",
		Long: "members lists the cluster's members as the node at --addr knows them, in the\n" +
			"columns of status, without asking each one: role (unreachable when the leader's\n" +
			"Raft or gossip says it is down), suffrage and gossip state.",
		Args: cobra.NoArgs,
	}
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		st, err := cl.Status(ctx)
		if err != nil {
			return err
		}
		members := make([]memberJSON, len(st.Members))
		for i, m := range st.Members {
			members[i] = memberJSON{m, roleOf(m, st.Node.LeaderID)}
		}
		return c.print(map[string]any{"members": members}, func(w io.Writer) error { return printMembers(w, members) })
	})
	return cmd
}

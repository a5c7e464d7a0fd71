package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pastenode/pastenode"
)

// printStatus writes v as a table, one row per member as it reported
// itself, then the totals and a line for every member with something to
// say.
func printStatus(w io.Writer, v *clusterView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, memberHeader+"\tAPPLIED\tLAG\tLAST CONTACT\tVERSION\tUPTIME\tPASTES\tBYTES\tREADY")
	for _, m := range v.Members {
		cells := append(memberRow(m.Member, m.Role), memberCells(&m)...)
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	node, leader := v.Node, v.Node.LeaderID
	if leader == "" {
		leader = "none"
	}
	fmt.Fprintf(w, "\npastes: %d, bytes: %d (%s)\nterm: %d, commit index: %d, leader: %s (asked %s)\n",
		v.Store.Pastes, v.Store.Bytes, pastenode.FormatSize(v.Store.Bytes), node.Term, v.LeaderCommitIndex, leader, node.ID)
	for _, m := range v.Members {
		switch {
		case m.Error != "":
			fmt.Fprintf(w, "%s: no answer: %s\n", m.ID, m.Error)
		case m.Self != nil && !m.Self.Ready:
			fmt.Fprintf(w, "%s: not ready: %s\n", m.ID, m.Self.ReadyReason)
		}
		if m.Self != nil && m.Self.StorageFull {
			fmt.Fprintf(w, "%s: refuses creates (507): %s\n", m.ID, m.Self.StorageReason)
		}
	}
	return nil
}

// memberHeader heads the columns that status and members both show, in
// the cells of memberRow.
const memberHeader = "\tID\tADDRESS\tROLE\tSUFFRAGE\tGOSSIP"

// memberRow is a member as the asked node knows it, with its role: the
// leader is marked with *.
func memberRow(m pastenode.Member, role string) []string {
	mark := ""
	if role == "leader" {
		mark = "*"
	}
	return []string{mark, m.ID, orDash(m.APIAddr), role, orDash(m.Suffrage), orDash(m.Gossip)}
}

// printMembers writes members as status's table does, without what only
// each member's own answer tells.
func printMembers(w io.Writer, members []memberJSON) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, memberHeader)
	for _, m := range members {
		fmt.Fprintln(tw, strings.Join(memberRow(m.Member, m.Role), "\t"))
	}
	return tw.Flush()
}

// memberCells are the cells a member fills in from its own answer: "-"
// for one that did not answer.
func memberCells(m *memberView) []string {
	s := m.Self
	if s == nil {
		return []string{"-", "-", "-", "-", "-", "-", "-", "-"}
	}
	contact := "-"
	switch {
	case s.State == "leader":
	case s.LastContactMs < 0:
		contact = "never"
	default:
		contact = (time.Duration(s.LastContactMs) * time.Millisecond).String()
	}
	lag := "-"
	if m.Lag != nil {
		lag = strconv.FormatUint(*m.Lag, 10)
	}
	pastes, size := "-", "-"
	if m.Store != nil {
		pastes = strconv.FormatInt(m.Store.Pastes, 10)
		size = pastenode.FormatSize(m.Store.Bytes)
	}
	ready := "yes"
	if !s.Ready {
		ready = "no"
	}
	uptime := (time.Duration(s.UptimeS) * time.Second).String()
	return []string{strconv.FormatUint(s.AppliedIndex, 10), lag, contact, orDash(s.Version), uptime, pastes, size, ready}
}

// jsonEncoder writes indented JSON to w.
func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc
}

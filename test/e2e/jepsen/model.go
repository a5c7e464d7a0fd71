// Package jepsen checks histories of concurrent operations on pastenode
// against a per-paste model (absent -> present(content) -> gone) with
// porcupine, and its tests run the real binaries in network namespaces under
// faults (kills, pauses, clean stops, partitions) to record such histories.
package jepsen

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Kind is what an operation did to one paste.
type Kind int

// The operation kinds. A consume is a GET /raw/{id} of a burn paste.
const (
	KindCreate Kind = iota
	KindRead
	KindDelete
	KindConsume
)

// String names the kind for figures and histories.
func (k Kind) String() string {
	switch k {
	case KindCreate:
		return "create"
	case KindRead:
		return "read"
	case KindDelete:
		return "delete"
	case KindConsume:
		return "consume"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Result is the outcome of an operation as the client saw it.
type Result int

// The outcomes. ResultUnknown is a 503, a timeout, a refused connection or
// any other answer that does not say whether the operation took effect.
const (
	ResultOK Result = iota
	ResultNotFound
	ResultUnknown
)

// String names the result for histories.
func (r Result) String() string {
	switch r {
	case ResultOK:
		return "ok"
	case ResultNotFound:
		return "404"
	case ResultUnknown:
		return "unknown"
	}
	return fmt.Sprintf("result(%d)", int(r))
}

// Op is one operation of a recorded history. Call and Return are monotonic
// nanoseconds since a common start. Content is the posted bytes of a create
// and the returned bytes of a read or consume that answered ok.
type Op struct {
	Client  int
	Node    string
	Key     string
	Kind    Kind
	Result  Result
	Content string
	Status  int    // HTTP status, 0 when none was received
	Err     string // transport error or reason, if any
	Call    int64
	Return  int64
}

// String is a one-line description used in printed histories.
func (o Op) String() string {
	s := fmt.Sprintf("[%9.3fms %9.3fms] c%-2d %-3s %-7s %s -> %s", float64(o.Call)/1e6, float64(o.Return)/1e6,
		o.Client, o.Node, o.Kind, o.Key, o.Result)
	if o.Status != 0 {
		s += fmt.Sprintf(" (%d)", o.Status)
	}
	if o.Result == ResultOK && o.Kind != KindDelete {
		s += " " + short(o.Content)
	}
	if o.Err != "" {
		s += " err=" + o.Err
	}
	return s
}

func short(s string) string {
	if len(s) > 24 {
		return fmt.Sprintf("%q...(%dB)", s[:24], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// phase is where a paste is in its life.
type phase int

const (
	phaseAbsent phase = iota
	phasePresent
	phaseGone
)

// state is the model's state for one paste id. It is comparable, so
// porcupine's default equality works.
type state struct {
	phase   phase
	content string
}

// input and output are what porcupine sees of an Op.
type input struct {
	kind    Kind
	content string
}

type output struct {
	result  Result
	content string
}

// step is the sequential specification of one paste: a create makes an
// absent paste present, a delete or consume makes a present paste gone, a
// read returns the content only while present and 404 only while absent or
// gone. An unknown outcome is allowed in any state; for a delete or consume
// it may have taken effect (its return is moved to the end of the history,
// so that it may also be placed after everything, which is "never").
func step(st state, in input, out output) (bool, state) {
	switch in.kind {
	case KindCreate:
		if out.result == ResultUnknown {
			return true, createdIfAbsent(st, in.content)
		}
		return out.result == ResultOK && st.phase == phaseAbsent, state{phasePresent, in.content}
	case KindRead:
		return readStep(st, out), st
	case KindDelete, KindConsume:
		switch out.result {
		case ResultUnknown:
			if st.phase == phasePresent {
				return true, state{phase: phaseGone}
			}
			return true, st
		case ResultNotFound:
			return st.phase != phasePresent, st
		default:
			if in.kind == KindConsume && out.content != st.content {
				return false, st
			}
			return st.phase == phasePresent, state{phase: phaseGone}
		}
	}
	return false, st
}

func createdIfAbsent(st state, content string) state {
	if st.phase == phaseAbsent {
		return state{phasePresent, content}
	}
	return st
}

func readStep(st state, out output) bool {
	switch out.result {
	case ResultOK:
		return st.phase == phasePresent && st.content == out.content
	case ResultNotFound:
		return st.phase != phasePresent
	}
	return true
}

// Model is the porcupine model of one paste id. Histories are partitioned
// per id by the caller, so the state is a single paste.
var Model = porcupine.Model{
	Init: func() interface{} { return state{} },
	Step: func(st, in, out interface{}) (bool, interface{}) {
		return step(st.(state), in.(input), out.(output))
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(input), out.(output)
		switch {
		case i.kind == KindCreate:
			return fmt.Sprintf("create(%s) -> %s", short(i.content), o.result)
		case o.result == ResultOK && i.kind != KindDelete:
			return fmt.Sprintf("%s -> %s", i.kind, short(o.content))
		}
		return fmt.Sprintf("%s -> %s", i.kind, o.result)
	},
	DescribeState: func(st interface{}) string {
		s := st.(state)
		switch s.phase {
		case phaseAbsent:
			return "absent"
		case phasePresent:
			return "present(" + short(s.content) + ")"
		}
		return "gone"
	},
	DescribeOperationMetadata: func(info interface{}) string {
		if info == nil {
			return ""
		}
		return info.(string)
	},
}

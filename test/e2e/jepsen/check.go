package jepsen

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// The kinds of findings, beside porcupine's verdict, named for the figures.
const (
	FindStale        = "stale read"         // content read after a 204 delete completed
	FindFalse404     = "false 404"          // 404 after an acknowledged create, nothing removed it
	FindBurnFalse    = "false burn 404"     // burn reader told 404 while no consume could have happened
	FindBurnTwice    = "burn handed twice"  // more than one reader got a burn paste's content
	FindWrong        = "wrong content"      // content other than what was posted
	FindLost         = "lost"               // acknowledged create missing in the final sweep
	FindNonLinear    = "not linearizable"   // porcupine found no linearization
	FindCheckTimeout = "check timed out"    // porcupine gave up; nothing proven either way
	FindBadOutcome   = "unexpected outcome" // e.g. a 201 create without an id
)

// Finding is one violation, tied to the paste id and the offending op.
type Finding struct {
	Kind   string
	Key    string
	Op     Op
	Detail string
	// Lag is how long after the op it contradicts (the 204 delete's return
	// for a stale read, the create's acknowledgement for a false 404) the
	// offending op started, in nanoseconds; 0 for other kinds.
	Lag int64
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s: %s %s", f.Kind, f.Key, f.Op, f.Detail)
}

// Report is the outcome of checking one history.
type Report struct {
	Keys     int
	Findings []Finding
	Counts   map[string]int
	// Illegal lists the ids porcupine found not linearizable, sorted.
	Illegal []string

	histories map[string][]Op
	infos     map[string]porcupine.LinearizationInfo
}

// OK reports whether nothing was found.
func (r *Report) OK() bool { return len(r.Findings) == 0 }

// History returns the recorded ops of one paste id, ordered by call time.
func (r *Report) History(key string) []Op { return r.histories[key] }

func (r *Report) add(f Finding) {
	r.Findings = append(r.Findings, f)
	r.Counts[f.Kind]++
}

// Check partitions the history per paste id and checks each id with
// porcupine under Model, with timeout per id, and with the direct checks that
// name the kind of each violation. Ops without a key (creates whose id never
// came back) constrain nothing and are skipped.
func Check(history []Op, timeout time.Duration) *Report {
	r := &Report{Counts: map[string]int{}, histories: map[string][]Op{},
		infos: map[string]porcupine.LinearizationInfo{}}
	var end int64
	for _, op := range history {
		end = max(end, op.Return+1)
		if op.Key != "" {
			r.histories[op.Key] = append(r.histories[op.Key], op)
		}
	}
	keys := make([]string, 0, len(r.histories))
	for k, ops := range r.histories {
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
		keys = append(keys, k)
	}
	sort.Strings(keys)
	r.Keys = len(keys)
	for _, k := range keys {
		ops := r.histories[k]
		res, info := porcupine.CheckOperationsVerbose(Model, toPorcupine(ops, end), timeout)
		switch res {
		case porcupine.Illegal:
			r.Illegal = append(r.Illegal, k)
			r.infos[k] = info
			r.add(Finding{Kind: FindNonLinear, Key: k, Op: ops[0]})
		case porcupine.Unknown:
			r.add(Finding{Kind: FindCheckTimeout, Key: k, Op: ops[0]})
		}
		for _, f := range classify(k, ops) {
			r.add(f)
		}
	}
	return r
}

// toPorcupine converts ops; a delete or consume with an unknown outcome may
// take effect at any time after its call, so its return is the history's end.
func toPorcupine(ops []Op, end int64) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		ret := op.Return
		if op.Result == ResultUnknown && op.Kind != KindRead {
			ret = end
		}
		meta := op.Node
		if op.Status != 0 {
			meta += fmt.Sprintf(" HTTP %d", op.Status)
		}
		if op.Err != "" {
			meta += " " + op.Err
		}
		out = append(out, porcupine.Operation{
			ClientId: op.Client, Call: op.Call, Return: ret, Metadata: meta,
			Input:  input{kind: op.Kind, content: createdContent(op)},
			Output: output{result: op.Result, content: readContent(op)},
		})
	}
	return out
}

func createdContent(op Op) string {
	if op.Kind == KindCreate {
		return op.Content
	}
	return ""
}

func readContent(op Op) string {
	if op.Kind == KindCreate {
		return ""
	}
	return op.Content
}

// Visualize writes porcupine's HTML visualization of one illegal id.
func (r *Report) Visualize(key string, w io.Writer) error {
	info, ok := r.infos[key]
	if !ok {
		return fmt.Errorf("visualize %s: not an illegal id", key)
	}
	return porcupine.Visualize(Model, info, w)
}

// VisualizePath writes porcupine's HTML visualization of one illegal id to
// path.
func (r *Report) VisualizePath(key, path string) error {
	info, ok := r.infos[key]
	if !ok {
		return fmt.Errorf("visualize %s: not an illegal id", key)
	}
	return porcupine.VisualizePath(Model, info, path)
}

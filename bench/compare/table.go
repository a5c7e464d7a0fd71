package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// row is one line of the table.
type row struct {
	figure     string
	ours, peer string
	ratio      float64 // ours over peer; negative: none
	target     string
	met        string // "met", "MISS", "-" (no target), or why there is no figure
}

// metOrMiss spells whether a target is met.
func metOrMiss(ok bool) string {
	if ok {
		return "met"
	}
	return "MISS"
}

// ratioRow compares the median requests/s of ours and peer; min is the
// ratio to reach, 0 for a figure printed for reference.
func ratioRow(figure string, ours, peer []wrkResult, min float64) row {
	r := row{figure: figure, ratio: -1, target: "printed, no target", met: "-"}
	if min > 0 {
		r.target = fmt.Sprintf(">= %.2fx", min)
	}
	r.ours, r.peer = "not run", "not installed"
	if len(ours) > 0 {
		r.ours = fmt.Sprintf("%.0f/s", medianRPS(ours))
	}
	if len(peer) > 0 {
		r.peer = fmt.Sprintf("%.0f/s", medianRPS(peer))
	}
	if len(ours) == 0 || len(peer) == 0 {
		if min > 0 {
			r.met = "MISS (not measured)"
		}
		return r
	}
	r.ratio = medianRPS(ours) / medianRPS(peer)
	if min > 0 {
		r.met = metOrMiss(r.ratio >= min)
	}
	return r
}

// p99Row compares the median p99 latency of ours and peer: ours may be at
// most 1.5 times peer's.
func p99Row(figure string, ours, peer []wrkResult) row {
	r := row{figure: figure, target: "p99 <= 1.5x bare", ratio: -1, met: "MISS (not measured)"}
	if len(ours) == 0 || len(peer) == 0 {
		return r
	}
	o, p := medianP99(ours), medianP99(peer)
	r.ours = fmt.Sprintf("p99 %s (%.0f/s)", o.Round(100*time.Microsecond), medianRPS(ours))
	r.peer = fmt.Sprintf("p99 %s (%.0f/s)", p.Round(100*time.Microsecond), medianRPS(peer))
	r.ratio = float64(o) / float64(p)
	r.met = metOrMiss(r.ratio <= 1.5)
	return r
}

func medianRPS(rs []wrkResult) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = r.rps
	}
	return median(v)
}

func medianP99(rs []wrkResult) time.Duration {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = float64(r.p99)
	}
	return time.Duration(median(v))
}

// median is the middle value of v, or the mean of the two middle ones.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// formatTable renders rows as a Markdown table, then lists the misses.
func formatTable(rows []row) string {
	var b strings.Builder
	b.WriteString("| figure | ours | peer | ratio | target | met |\n|---|---|---|---|---|---|\n")
	var misses []string
	for _, r := range rows {
		ratio := "-"
		if r.ratio >= 0 {
			ratio = fmt.Sprintf("%.2fx", r.ratio)
		}
		peer := r.peer
		if peer == "" {
			peer = "-"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.figure, r.ours, peer, ratio, r.target, r.met)
		if strings.HasPrefix(r.met, "MISS") {
			misses = append(misses, r.figure)
		}
	}
	if len(misses) == 0 {
		b.WriteString("\nEvery target is met.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "\nMisses (%d):\n", len(misses))
	for _, m := range misses {
		fmt.Fprintf(&b, "- %s\n", m)
	}
	return b.String()
}

package jepsen

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// at builds an op of paste "p1" on node n1 from call to ret (milliseconds).
func at(client int, kind Kind, res Result, content string, call, ret int64) Op {
	status := map[Result]int{ResultOK: 200, ResultNotFound: 404, ResultUnknown: 503}[res]
	return Op{Client: client, Node: "n1", Key: "p1", Kind: kind, Result: res, Content: content,
		Status: status, Call: call * 1e6, Return: ret * 1e6}
}

func created(content string, call, ret int64) Op {
	return at(0, KindCreate, ResultOK, content, call, ret)
}

func kinds(r *Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Kind)
	}
	slices.Sort(out)
	return out
}

func TestCheckCatchesViolations(t *testing.T) {
	tests := []struct {
		name    string
		history []Op
		want    []string
	}{
		{"stale read after delete", []Op{created("s3cret", 0, 10),
			at(1, KindDelete, ResultOK, "", 20, 30),
			at(2, KindRead, ResultOK, "s3cret", 31, 40)}, []string{FindNonLinear, FindStale}},
		{"stale read long after delete, 404 in between", []Op{created("s3cret", 0, 10),
			at(1, KindDelete, ResultOK, "", 20, 30),
			at(2, KindRead, ResultNotFound, "", 35, 36),
			at(3, KindRead, ResultOK, "s3cret", 500, 501)}, []string{FindNonLinear, FindStale}},
		{"false 404 after an acknowledged create", []Op{created("a", 0, 10),
			at(1, KindRead, ResultNotFound, "", 11, 1011)}, []string{FindFalse404, FindNonLinear}},
		{"false 404 after a read that saw it", []Op{created("a", 0, 10),
			at(1, KindRead, ResultOK, "a", 5, 9),
			at(2, KindRead, ResultNotFound, "", 10, 12)}, []string{FindFalse404, FindNonLinear}},
		{"404 to a delete of an acknowledged paste", []Op{created("a", 0, 10),
			at(1, KindDelete, ResultNotFound, "", 20, 30)}, []string{FindFalse404, FindNonLinear}},
		{"wrong content", []Op{created("a", 0, 10),
			at(1, KindRead, ResultOK, "b", 20, 30)}, []string{FindNonLinear, FindWrong}},
		{"burn handed twice, concurrently", []Op{created("burn", 0, 10),
			at(1, KindConsume, ResultOK, "burn", 20, 30),
			at(2, KindConsume, ResultOK, "burn", 21, 29),
			at(3, KindConsume, ResultNotFound, "", 22, 31)}, []string{FindBurnTwice, FindNonLinear}},
		{"burn handed twice, one after the other", []Op{created("burn", 0, 10),
			at(1, KindConsume, ResultOK, "burn", 20, 30),
			at(2, KindConsume, ResultOK, "burn", 40, 50)}, []string{FindBurnTwice, FindNonLinear}},
		{"burn 404 decided locally", []Op{created("burn", 0, 10),
			at(1, KindConsume, ResultNotFound, "", 12, 13),
			at(2, KindConsume, ResultNotFound, "", 12, 14),
			at(3, KindConsume, ResultOK, "burn", 6000, 6010)}, []string{FindBurnFalse, FindBurnFalse, FindNonLinear}},
		{"burn 404 while the only other consume timed out, handed out later", []Op{created("burn", 0, 10),
			at(1, KindConsume, ResultUnknown, "", 12, 2012),
			at(2, KindConsume, ResultNotFound, "", 12, 14),
			at(3, KindConsume, ResultOK, "burn", 6000, 6010)}, []string{FindBurnFalse, FindNonLinear}},
		{"404 between two reads that saw it", []Op{created("a", 0, 10),
			at(1, KindDelete, ResultUnknown, "", 15, 2015),
			at(2, KindRead, ResultNotFound, "", 20, 30),
			at(3, KindRead, ResultOK, "a", 40, 50)}, []string{FindFalse404, FindNonLinear}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(tt.history, 10*time.Second)
			if got := kinds(r); !slices.Equal(got, tt.want) {
				t.Fatalf("findings %q, want %q\n%s", got, tt.want, strings.Join(findingLines(r), "\n"))
			}
			for _, f := range r.Findings {
				if (f.Kind == FindStale || f.Kind == FindFalse404 || f.Kind == FindBurnFalse) && f.Lag <= 0 {
					t.Errorf("%s without a positive lag: %v", f.Kind, f.Lag)
				}
			}
			if len(r.Illegal) != 1 || r.Illegal[0] != "p1" {
				t.Fatalf("illegal ids %q, want [p1]", r.Illegal)
			}
		})
	}
}

func TestCheckPassesLegalLookAlikes(t *testing.T) {
	tests := []struct {
		name    string
		history []Op
	}{
		{"read concurrent with the delete returns content", []Op{created("a", 0, 10),
			at(1, KindDelete, ResultOK, "", 20, 40),
			at(2, KindRead, ResultOK, "a", 30, 50),
			at(3, KindRead, ResultNotFound, "", 35, 45)}},
		{"read starting as the delete returns, closed intervals", []Op{created("a", 0, 10),
			at(1, KindDelete, ResultOK, "", 20, 40),
			at(2, KindRead, ResultOK, "a", 40, 41)}},
		{"404 concurrent with the create", []Op{created("a", 10, 30),
			at(1, KindRead, ResultNotFound, "", 5, 12),
			at(2, KindRead, ResultNotFound, "", 20, 40),
			at(3, KindRead, ResultOK, "a", 25, 26)}},
		{"404 after the delete", []Op{created("a", 0, 10),
			at(1, KindDelete, ResultOK, "", 20, 30),
			at(2, KindRead, ResultNotFound, "", 31, 40)}},
		{"503 and timeouts anywhere", []Op{created("a", 0, 10),
			at(1, KindRead, ResultUnknown, "", 5, 2005),
			at(2, KindRead, ResultUnknown, "", 20, 30),
			at(3, KindDelete, ResultUnknown, "", 40, 2040),
			at(4, KindRead, ResultOK, "a", 3000, 3001)}},
		{"404 after a delete whose answer was lost", []Op{created("a", 0, 10),
			at(3, KindDelete, ResultUnknown, "", 40, 2040),
			at(4, KindRead, ResultNotFound, "", 100, 101),
			at(5, KindRead, ResultNotFound, "", 3000, 3001)}},
		{"burn race: one gets it, the others 404 or 503", []Op{created("burn", 0, 10),
			at(1, KindConsume, ResultOK, "burn", 20, 30),
			at(2, KindConsume, ResultNotFound, "", 20, 25),
			at(3, KindConsume, ResultUnknown, "", 21, 2021),
			at(4, KindConsume, ResultNotFound, "", 50, 55)}},
		{"burn 404 after a consume whose answer was lost", []Op{created("burn", 0, 10),
			at(1, KindConsume, ResultUnknown, "", 20, 2020),
			at(2, KindConsume, ResultNotFound, "", 20, 25)}},
		{"burn consumed before its create returned", []Op{created("burn", 0, 50),
			at(1, KindConsume, ResultOK, "burn", 20, 30),
			at(2, KindConsume, ResultNotFound, "", 60, 70)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(tt.history, 10*time.Second)
			if !r.OK() {
				t.Fatalf("legal history rejected:\n%s", strings.Join(findingLines(r), "\n"))
			}
		})
	}
}

func TestLost(t *testing.T) {
	want := map[string]string{"a": "alpha", "b": "beta", "c": "gamma"}
	reads := []Op{
		{Node: "n1", Key: "a", Kind: KindRead, Result: ResultOK, Content: "alpha"},
		{Node: "n2", Key: "a", Kind: KindRead, Result: ResultNotFound},
		{Node: "n1", Key: "b", Kind: KindRead, Result: ResultOK, Content: "bet"},
		{Node: "n1", Key: "c", Kind: KindRead, Result: ResultUnknown},
		{Node: "n1", Key: "deleted", Kind: KindRead, Result: ResultNotFound},
	}
	var got []string
	for _, f := range Lost(want, reads) {
		got = append(got, f.Op.Node+"/"+f.Key)
	}
	if w := []string{"n2/a", "n1/b", "n1/c"}; !slices.Equal(got, w) {
		t.Fatalf("lost %q, want %q", got, w)
	}
}

func TestVisualizeIllegal(t *testing.T) {
	r := Check([]Op{created("s3cret", 0, 10), at(1, KindDelete, ResultOK, "", 20, 30),
		at(2, KindRead, ResultOK, "s3cret", 31, 40)}, 10*time.Second)
	path := filepath.Join(t.TempDir(), "p1.html")
	if err := r.VisualizePath("p1", path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "<html") || !strings.Contains(string(b), "s3cret") {
		t.Fatalf("visualization lacks the history: %.200s", b)
	}
	if err := r.VisualizePath("nope", path); err == nil {
		t.Fatal("visualizing a legal id gave no error")
	}
}

func findingLines(r *Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.String())
	}
	return out
}

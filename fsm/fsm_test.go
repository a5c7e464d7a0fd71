package fsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

const sec = int64(time.Second)

// log feeds commands to an FSM with increasing indexes.
type log struct {
	t     testing.TB
	f     *FSM
	index uint64
}

func newLog(t testing.TB) *log { return &log{t: t, f: New()} }

func (l *log) apply(c *Command) *Result {
	l.t.Helper()
	b, err := Encode(c)
	if err != nil {
		l.t.Fatal(err)
	}
	l.index++
	return l.f.Apply(&raft.Log{Index: l.index, Type: raft.LogCommand, Data: b}).(*Result)
}

func paste(id string, opts ...func(*Paste)) *Paste {
	p := &Paste{ID: id, Content: []byte("content of " + id), CreatedAt: 1 * sec, TokenHash: HashToken("tok-" + id)}
	for _, o := range opts {
		o(p)
	}
	return p
}

func burn(p *Paste)                   { p.Burn = true }
func expiresAt(at int64) func(*Paste) { return func(p *Paste) { p.ExpiresAt = at } }

func create(id, req string, opts ...func(*Paste)) *Command {
	return &Command{Type: TypeCreate, RequestID: req, Now: 1 * sec, Paste: paste(id, opts...)}
}

func TestCommands(t *testing.T) {
	tests := []struct {
		name    string
		setup   []*Command
		cmd     *Command
		wantErr error
		wantID  string // of Result.Paste, "" for none
		wantHas map[string]bool
	}{
		{
			name:    "create",
			cmd:     create("a", "r1"),
			wantID:  "a",
			wantHas: map[string]bool{"a": true},
		},
		{
			name:    "create duplicate id from another request",
			setup:   []*Command{create("a", "r1")},
			cmd:     create("a", "r2"),
			wantErr: ErrExists,
			wantHas: map[string]bool{"a": true},
		},
		{
			name:    "create retried with the same request id",
			setup:   []*Command{create("a", "r1")},
			cmd:     create("a", "r1"),
			wantID:  "a",
			wantHas: map[string]bool{"a": true},
		},
		{
			name:    "create over a tombstone",
			setup:   []*Command{create("a", "r1"), {Type: TypeDelete, ID: "a", TokenHash: HashToken("tok-a"), Now: 2 * sec}},
			cmd:     create("a", "r2"),
			wantErr: ErrExists,
			wantHas: map[string]bool{"a": false},
		},
		{
			name:    "delete with the right token",
			setup:   []*Command{create("a", "r1")},
			cmd:     &Command{Type: TypeDelete, ID: "a", TokenHash: HashToken("tok-a"), Now: 2 * sec},
			wantHas: map[string]bool{"a": false},
		},
		{
			name:    "delete with the wrong token",
			setup:   []*Command{create("a", "r1")},
			cmd:     &Command{Type: TypeDelete, ID: "a", TokenHash: HashToken("nope"), Now: 2 * sec},
			wantErr: ErrForbidden,
			wantHas: map[string]bool{"a": true},
		},
		{
			name:    "admin delete",
			setup:   []*Command{create("a", "r1")},
			cmd:     &Command{Type: TypeDelete, ID: "a", Admin: true, Now: 2 * sec},
			wantHas: map[string]bool{"a": false},
		},
		{
			name:    "delete unknown",
			cmd:     &Command{Type: TypeDelete, ID: "zz", TokenHash: HashToken("x"), Now: 2 * sec},
			wantErr: ErrNotFound,
		},
		{
			name:    "delete retried",
			setup:   []*Command{create("a", "r1"), {Type: TypeDelete, RequestID: "d1", ID: "a", TokenHash: HashToken("tok-a"), Now: 2 * sec}},
			cmd:     &Command{Type: TypeDelete, RequestID: "d1", ID: "a", TokenHash: HashToken("tok-a"), Now: 3 * sec},
			wantHas: map[string]bool{"a": false},
		},
		{
			name:    "consume a burn paste",
			setup:   []*Command{create("a", "r1", burn)},
			cmd:     &Command{Type: TypeConsume, RequestID: "c1", ID: "a", Now: 2 * sec},
			wantID:  "a",
			wantHas: map[string]bool{"a": false},
		},
		{
			name:    "consume again from another request",
			setup:   []*Command{create("a", "r1", burn), {Type: TypeConsume, RequestID: "c1", ID: "a", Now: 2 * sec}},
			cmd:     &Command{Type: TypeConsume, RequestID: "c2", ID: "a", Now: 3 * sec},
			wantErr: ErrNotFound,
		},
		{
			name:   "consume retried within the grace period",
			setup:  []*Command{create("a", "r1", burn), {Type: TypeConsume, RequestID: "c1", ID: "a", Now: 2 * sec}},
			cmd:    &Command{Type: TypeConsume, RequestID: "c1", ID: "a", Now: 3 * sec},
			wantID: "a",
		},
		{
			name:    "consume retried after the grace period",
			setup:   []*Command{create("a", "r1", burn), {Type: TypeConsume, RequestID: "c1", ID: "a", Now: 2 * sec}},
			cmd:     &Command{Type: TypeConsume, RequestID: "c1", ID: "a", Now: 2*sec + int64(ConsumeGrace) + 1},
			wantErr: ErrNotFound,
		},
		{
			name:    "consume a plain paste leaves it",
			setup:   []*Command{create("a", "r1")},
			cmd:     &Command{Type: TypeConsume, RequestID: "c1", ID: "a", Now: 2 * sec},
			wantID:  "a",
			wantHas: map[string]bool{"a": true},
		},
		{
			name:    "consume an expired burn paste",
			setup:   []*Command{create("a", "r1", burn, expiresAt(5*sec))},
			cmd:     &Command{Type: TypeConsume, RequestID: "c1", ID: "a", Now: 5 * sec},
			wantErr: ErrNotFound,
		},
		{
			name: "expire removes exactly the due pastes",
			setup: []*Command{
				create("a", "r1", expiresAt(5*sec)),
				create("b", "r2", expiresAt(6*sec)),
				create("c", "r3", expiresAt(7*sec)),
				create("d", "r4"),
			},
			cmd:     &Command{Type: TypeExpire, Now: 6 * sec},
			wantHas: map[string]bool{"a": false, "b": false, "c": true, "d": true},
		},
		{
			name:    "remove node",
			cmd:     &Command{Type: TypeRemoveNode, ID: "n2", Now: 2 * sec},
			wantHas: map[string]bool{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLog(t)
			for _, c := range tt.setup {
				if r := l.apply(c); r.Err != nil {
					t.Fatalf("setup %s: %v", c.Type, r.Err)
				}
			}
			r := l.apply(tt.cmd)
			if !errors.Is(r.Err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", r.Err, tt.wantErr)
			}
			gotID := ""
			if r.Paste != nil {
				gotID = r.Paste.ID
			}
			if gotID != tt.wantID {
				t.Fatalf("result paste = %q, want %q", gotID, tt.wantID)
			}
			for id, want := range tt.wantHas {
				if _, got := l.f.Get(id, time.Unix(0, 1*sec)); got != want {
					t.Errorf("Get(%q) found = %v, want %v", id, got, want)
				}
			}
		})
	}
}

func TestConsumeReturnsContentOnce(t *testing.T) {
	l := newLog(t)
	l.apply(create("a", "r1", burn))
	var got [][]byte
	for i := range 10 {
		r := l.apply(&Command{Type: TypeConsume, RequestID: fmt.Sprint("c", i), ID: "a", Now: 2 * sec})
		if r.Err == nil {
			got = append(got, r.Paste.Content)
		}
	}
	if len(got) != 1 || string(got[0]) != "content of a" {
		t.Fatalf("consumers got %q, want exactly one copy of the content", got)
	}
	if n, b := l.f.Stats(); n != 0 || b != 0 {
		t.Fatalf("stats after burn = %d pastes, %d bytes, want 0, 0", n, b)
	}
}

func TestGetHidesExpired(t *testing.T) {
	l := newLog(t)
	l.apply(create("a", "r1", expiresAt(5*sec)))
	if _, ok := l.f.Get("a", time.Unix(0, 5*sec-1)); !ok {
		t.Fatal("paste hidden before its expiry")
	}
	if _, ok := l.f.Get("a", time.Unix(0, 5*sec)); ok {
		t.Fatal("paste served at its expiry time")
	}
}

func TestTombstonesAreCollected(t *testing.T) {
	l := newLog(t)
	l.apply(create("a", "r1", burn))
	l.apply(&Command{Type: TypeConsume, RequestID: "c1", ID: "a", Now: 2 * sec})
	l.apply(&Command{Type: TypeExpire, Now: 2*sec + int64(TombstoneTTL)})
	if got := l.f.cur.Load().tombs.len(); got != 0 {
		t.Fatalf("tombstones after TTL = %d, want 0", got)
	}
}

// randomCommands makes a reproducible stream of commands that exercises
// every type, including racing consumes and expiries with skewed clocks.
func randomCommands(seed uint64, n int) []*Command {
	rng := rand.New(rand.NewPCG(seed, 1))
	ids := make([]string, 50)
	for i := range ids {
		ids[i] = fmt.Sprintf("id%02d", i)
	}
	var cmds []*Command
	now := 10 * sec
	for i := range n {
		now += rng.Int64N(2 * sec)
		skew := rng.Int64N(2*sec) - sec
		id := ids[rng.IntN(len(ids))]
		req := fmt.Sprint("req", i)
		switch rng.IntN(6) {
		case 0, 1:
			p := paste(id)
			p.CreatedAt = now
			p.Burn = rng.IntN(3) == 0
			if rng.IntN(2) == 0 {
				p.ExpiresAt = now + rng.Int64N(30*sec)
			}
			cmds = append(cmds, &Command{Type: TypeCreate, RequestID: req, Now: now, Paste: p})
		case 2:
			cmds = append(cmds, &Command{Type: TypeDelete, RequestID: req, ID: id, TokenHash: HashToken("tok-" + id), Now: now})
		case 3:
			cmds = append(cmds, &Command{Type: TypeConsume, RequestID: req, ID: id, Now: now + skew})
		case 4:
			cmds = append(cmds, &Command{Type: TypeExpire, Now: now + skew})
		case 5:
			switch rng.IntN(8) {
			case 0:
				cmds = append(cmds, &Command{Type: TypeInitCluster, ID: "cluster-" + id, TokenHash: HashToken(req), Now: now})
			case 1:
				cmds = append(cmds, &Command{Type: TypeAdminToken, TokenHash: HashToken(req), Now: now})
			default:
				cmds = append(cmds, &Command{Type: TypeRemoveNode, ID: id, Now: now})
			}
		}
	}
	return cmds
}

func snapshotBytes(t testing.TB, f *FSM) []byte {
	t.Helper()
	sn, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	var buf bytes.Buffer
	if err := sn.(*snapshot).writeTo(&buf, ""); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDeterminism(t *testing.T) {
	for seed := range uint64(5) {
		cmds := randomCommands(seed, 2000)
		// One FSM applies entry by entry, the other in batches of random size.
		a, b := New(), New()
		var batch []*raft.Log
		rng := rand.New(rand.NewPCG(seed, 2))
		for i, c := range cmds {
			data, err := Encode(c)
			if err != nil {
				t.Fatal(err)
			}
			l := &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data}
			a.Apply(l)
			batch = append(batch, l)
			if rng.IntN(8) == 0 || i == len(cmds)-1 {
				b.ApplyBatch(batch)
				batch = nil
			}
		}
		sa, sb := snapshotBytes(t, a), snapshotBytes(t, b)
		if !bytes.Equal(sa, sb) {
			t.Fatalf("seed %d: snapshots differ after the same log", seed)
		}
		// Restoring the snapshot into a fresh FSM gives the same state.
		c := New()
		if err := c.Restore(io.NopCloser(bytes.NewReader(sa))); err != nil {
			t.Fatal(err)
		}
		if sc := snapshotBytes(t, c); !bytes.Equal(sa, sc) {
			t.Fatalf("seed %d: restored state differs from the original", seed)
		}
		if got, want := c.Index(), a.Index(); got != want {
			t.Fatalf("restored index = %d, want %d", got, want)
		}
		gotN, gotB := c.Stats()
		wantN, wantB := a.Stats()
		if gotN != wantN || gotB != wantB {
			t.Fatalf("restored stats = %d/%d, want %d/%d", gotN, gotB, wantN, wantB)
		}
	}
}

func TestRestoreIsAllOrNothing(t *testing.T) {
	l := newLog(t)
	l.apply(create("a", "r1"))
	good := snapshotBytes(t, l.f)

	other := newLog(t)
	other.apply(create("keep", "r1"))
	for _, n := range []int{0, 3, len(good) / 2, len(good) - 1} {
		err := other.f.Restore(io.NopCloser(bytes.NewReader(good[:n])))
		if !errors.Is(err, ErrSnapshot) {
			t.Fatalf("restore of %d/%d bytes: err = %v, want ErrSnapshot", n, len(good), err)
		}
		if _, ok := other.f.Get("keep", time.Unix(0, 0)); !ok {
			t.Fatalf("a failed restore of %d bytes changed the state", n)
		}
	}
}

func TestSnapshotDoesNotSeeLaterApplies(t *testing.T) {
	l := newLog(t)
	l.apply(create("a", "r1"))
	sn, _ := l.f.Snapshot()
	l.apply(create("b", "r2"))
	var buf bytes.Buffer
	if err := sn.(*snapshot).writeTo(&buf, ""); err != nil {
		t.Fatal(err)
	}
	f := New()
	if err := f.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Stats(); n != 1 {
		t.Fatalf("snapshot holds %d pastes, want 1", n)
	}
}

func TestWaitIndex(t *testing.T) {
	l := newLog(t)
	done := make(chan error, 1)
	go func() { done <- l.f.WaitIndex(context.Background(), 3) }()
	for range 3 {
		l.apply(create(fmt.Sprint("p", l.index), fmt.Sprint("r", l.index)))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.f.WaitIndex(ctx, 99); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitIndex on a cancelled context = %v", err)
	}
}

func TestApplyAnswersGarbageAlikeEverywhere(t *testing.T) {
	entries := [][]byte{{0xc1}, {}, {0x80}, mustEncode(t, &Command{Type: 99, ID: "x"}),
		mustEncode(t, &Command{Type: TypeCreate}), mustEncode(t, &Command{Type: TypeDelete})}
	var lines bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&lines, nil))
	a, b := NewLogged(logger), New()
	for _, f := range []*FSM{a, b} {
		f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: mustEncode(t, create("a", "r1"))})
	}
	for i, data := range entries {
		l := &raft.Log{Index: uint64(i + 2), Type: raft.LogCommand, Data: data}
		ra, rb := a.Apply(l).(*Result), b.Apply(l).(*Result)
		if !errors.Is(ra.Err, ErrBadCommand) || ra.Err.Error() != rb.Err.Error() {
			t.Fatalf("entry %x: results %v and %v, want the same ErrBadCommand", data, ra.Err, rb.Err)
		}
	}
	if a.Index() != uint64(len(entries)+1) {
		t.Fatalf("index after the bad entries = %d, want %d", a.Index(), len(entries)+1)
	}
	if n, _ := a.Stats(); n != 1 {
		t.Fatalf("bad entries changed the store: %d pastes", n)
	}
	if got := strings.Count(lines.String(), "not a valid command"); got != len(entries) {
		t.Fatalf("logged %d bad entries, want one line each for %d:\n%s", got, len(entries), lines.String())
	}
}

func mustEncode(t *testing.T, c *Command) []byte {
	t.Helper()
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConsumedContentGoesAfterGrace(t *testing.T) {
	l := newLog(t)
	l.apply(create("a", "r1", burn))
	l.apply(&Command{Type: TypeConsume, RequestID: "c1", ID: "a", Now: 2 * sec})
	if due := l.f.NextDue(); due != 2*sec+int64(ConsumeGrace) {
		t.Fatalf("NextDue = %d, want the end of the grace %d", due, 2*sec+int64(ConsumeGrace))
	}
	l.apply(&Command{Type: TypeExpire, Now: 2*sec + int64(ConsumeGrace) - 1})
	if r := l.apply(&Command{Type: TypeConsume, RequestID: "c1", ID: "a", Now: 3 * sec}); r.Err != nil {
		t.Fatalf("retry within the grace: %v", r.Err)
	}
	l.apply(&Command{Type: TypeExpire, Now: 2*sec + int64(ConsumeGrace)})
	ts, ok := l.f.cur.Load().tombs.get("a")
	if !ok || ts.Paste != nil {
		t.Fatalf("tombstone after the grace = %+v, %v; want one without the paste", ts, ok)
	}
	if l.f.cur.Load().graceGC.t.Len() != 0 {
		t.Fatal("grace index not emptied")
	}
}

// TestSnapshotNeverHoldsConsumedContent: the record of a consumed burn
// paste stays in its segment until a purge compacts it away; a snapshot
// after the purge holds its content nowhere, and restores the tombstone
// without it.
func TestSnapshotNeverHoldsConsumedContent(t *testing.T) {
	l := newLog(t)
	secret := "burn-after-reading-7f3a9c"
	l.apply(&Command{Type: TypeCreate, RequestID: "r1", Now: sec,
		Paste: &Paste{ID: "a", Content: []byte(secret), Burn: true, TokenHash: HashToken("t")}})
	l.apply(create("b", "r2"))
	if r := l.apply(&Command{Type: TypeConsume, RequestID: "c1", ID: "a", Now: 2 * sec}); string(r.Paste.Content) != secret {
		t.Fatalf("consume = %+v", r)
	}
	if p := l.f.Purge(2*sec - 1); p.Found {
		t.Fatal("a purge of what was removed before the consume found work")
	}
	// The burn paste was created by the first entry, and the last write
	// to its segment was the second: the log must drop both.
	if p := l.f.Purge(2 * sec); !p.Found || p.Created != 2 {
		t.Fatalf("purge = %+v; want it found, created by entry 2 or before", p)
	}
	for l.f.Purge(2 * sec).More {
	}
	raw := snapshotBytes(t, l.f)
	if bytes.Contains(raw, []byte(secret)) {
		t.Fatal("the snapshot holds the consumed burn paste's content")
	}
	f := New()
	if err := f.Restore(io.NopCloser(bytes.NewReader(raw))); err != nil {
		t.Fatal(err)
	}
	if ts, ok := f.cur.Load().tombs.get("a"); !ok || ts.Paste != nil {
		t.Fatalf("restored tombstone = %+v, %v", ts, ok)
	}
	if p, ok := f.Get("b", time.Unix(0, 3*sec)); !ok || string(p.Content) != "content of b" {
		t.Fatalf("the paste kept = %+v, %v", p, ok)
	}
}

func BenchmarkApplyCreate(b *testing.B) {
	const batch = 16
	f, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	l := &log{t: b, f: f}
	content := bytes.Repeat([]byte("x"), 1024)
	rng := rand.New(rand.NewPCG(1, 2))
	id := func() string { return fmt.Sprintf("%010x", rng.Uint64()&(1<<40-1)) }
	entry := func(n int) []byte {
		c := &Command{Type: TypeBatch, Batch: make([][]byte, batch)}
		for j := range c.Batch {
			c.Batch[j], _ = Encode(&Command{Type: TypeCreate, RequestID: fmt.Sprint(n, "-", j), Now: sec,
				Paste: &Paste{ID: id(), Content: content, TokenHash: HashToken("t")}})
		}
		data, _ := Encode(c)
		return data
	}
	apply := func(data []byte) {
		l.index++
		res := l.f.Apply(&raft.Log{Index: l.index, Type: raft.LogCommand, Data: data}).(*Result)
		if res.Err != nil || len(res.Batch) != batch || res.Batch[0].Err != nil {
			b.Fatalf("apply: %v", res.Err)
		}
	}
	for n := range 100000 / batch {
		apply(entry(n))
	}
	entries := make([][]byte, 1000)
	for i := range entries {
		entries[i] = entry(-i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		apply(entries[i%len(entries)])
		if i%len(entries) == len(entries)-1 {
			b.StopTimer()
			for k := range entries {
				entries[k] = entry(-i - k)
			}
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "creates/s")
}

// BenchmarkGet reads pastes at random from a store of 100k with random
// ids, as the node's ids are.
func BenchmarkGet(b *testing.B) {
	l := newLog(b)
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, 100000)
	for i := range ids {
		ids[i] = fmt.Sprintf("%010x", rng.Uint64()&(1<<40-1))
		l.apply(create(ids[i], fmt.Sprint(i)))
	}
	now := time.Unix(0, 2*sec)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, ok := l.f.Get(ids[i*7919%len(ids)], now); !ok {
			b.Fatal("missing")
		}
	}
}

// TestGoneNamesItsOwnRemoval: a removed paste's tombstone names the index
// of the removal that made it, so a read of it waits for that removal to
// take effect, not for whatever was removed since; and it survives a
// snapshot.
func TestGoneNamesItsOwnRemoval(t *testing.T) {
	l := newLog(t)
	l.apply(create("a", "r1"))
	l.apply(create("b", "r2"))
	l.apply(&Command{Type: TypeDelete, ID: "a", TokenHash: HashToken("tok-a"), Now: 2 * sec})
	removedA := l.index
	l.apply(&Command{Type: TypeDelete, ID: "b", TokenHash: HashToken("tok-b"), Now: 3 * sec})
	if got := l.f.LastRemoval(); got != l.index {
		t.Fatalf("LastRemoval = %d, want %d", got, l.index)
	}
	if index, ok := l.f.Gone("a"); !ok || index != removedA {
		t.Errorf("Gone(a) = %d, %v; want %d, true", index, ok, removedA)
	}
	if _, ok := l.f.Gone("never"); ok {
		t.Error("Gone(never) = true")
	}
	restored := New()
	if err := restored.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, l.f)))); err != nil {
		t.Fatal(err)
	}
	if index, ok := restored.Gone("a"); !ok || index != removedA {
		t.Errorf("after a snapshot, Gone(a) = %d, %v; want %d, true", index, ok, removedA)
	}
}

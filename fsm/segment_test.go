package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func equalPaste(a, b *Paste) bool {
	x, y := *a, *b
	for _, p := range []*Paste{&x, &y} {
		p.Text = false
		if len(p.Content) == 0 {
			p.Content = nil
		}
		if len(p.TokenHash) == 0 {
			p.TokenHash = nil
		}
	}
	return reflect.DeepEqual(x, y)
}

// TestRecordRoundTrip: every field of a paste survives its record, and a
// record damaged anywhere fails checkRecord.
func TestRecordRoundTrip(t *testing.T) {
	full := &Paste{ID: "id", Content: []byte("body ✓"), Title: "title", Lang: "go",
		CreatedAt: -5, ExpiresAt: 1 << 62, Burn: true, Encrypted: true,
		TokenHash: HashToken("t"), RequestID: "req"}
	for _, want := range []*Paste{full, {ID: "bare", Content: []byte{0xff}}} {
		rec := appendRecord(nil, want)
		if len(rec) != recordLen(want) {
			t.Fatalf("record of %d bytes, recordLen %d", len(rec), recordLen(want))
		}
		if err := checkRecord(rec); err != nil {
			t.Fatal(err)
		}
		var got Paste
		readRecord(rec, &got)
		if !equalPaste(&got, want) || got.Text != (want == full) {
			t.Errorf("round trip of %+v gave %+v", want, got)
		}
		for i := range rec {
			bad := bytes.Clone(rec)
			bad[i] ^= 0x10
			if checkRecord(bad) == nil {
				t.Fatalf("byte %d of the record flipped, and it passed", i)
			}
		}
	}
}

// openLog returns a log over an FSM whose segments are files in a new
// directory.
func openLog(t *testing.T) (*log, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	f, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &log{t: t, f: f}, dir
}

// dirSink is a raft.SnapshotSink that writes state.bin into a directory
// and names it, as the node's snapshot store does.
type dirSink struct {
	dir string
	f   *os.File
}

func newDirSink(t *testing.T) *dirSink {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "state.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return &dirSink{dir, f}
}

func (s *dirSink) Write(b []byte) (int, error) { return s.f.Write(b) }
func (s *dirSink) Close() error                { return s.f.Close() }
func (s *dirSink) Cancel() error               { return s.f.Close() }
func (s *dirSink) ID() string                  { return "test" }
func (s *dirSink) Dir() string                 { return s.dir }

var _ raft.SnapshotSink = (*dirSink)(nil)

// persist takes a snapshot of f into a new directory and returns it.
func persist(t *testing.T, f *FSM) string {
	t.Helper()
	sn, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := newDirSink(t)
	if err := sn.Persist(sink); err != nil {
		t.Fatal(err)
	}
	return sink.dir
}

// TestSnapshotLinksSegments: a snapshot to the node's store writes the
// manifest and links the segments, the very files the FSM reads; a start
// loads it without copying a paste; the stream of it has the size
// ExpandSnapshot says and restores the same pastes elsewhere.
func TestSnapshotLinksSegments(t *testing.T) {
	l, _ := openLog(t)
	content := strings.Repeat("x", 64<<10)
	for i := range 400 { // 25 MiB: two segments
		l.apply(create(fmt.Sprintf("p%04d", i), "", func(p *Paste) { p.Content = []byte(content + fmt.Sprint(i)) }))
	}
	l.apply(create("exp", "", expiresAt(5*sec)))
	l.apply(&Command{Type: TypeDelete, ID: "p0001", TokenHash: HashToken("tok-p0001"), Now: 2 * sec})
	dir := persist(t, l.f)

	state, err := os.ReadFile(filepath.Join(dir, "state.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if v := state[len(snapshotMagic)]; v != snapshotLocal || len(state) > 64<<10 {
		t.Fatalf("state.bin is version %d of %d bytes, want a manifest of version %d", v, len(state), snapshotLocal)
	}
	linked := 0
	for _, s := range l.f.cur.Load().arena.all {
		a, err := os.Stat(s.path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.Stat(filepath.Join(dir, segmentName(s.id)))
		if err != nil {
			t.Fatalf("segment %s is not in the snapshot: %v", segmentName(s.id), err)
		}
		if !os.SameFile(a, b) {
			t.Fatalf("segment %s of the snapshot is a copy, not a link", segmentName(s.id))
		}
		linked++
	}
	if linked < 2 {
		t.Fatalf("%d segments, want at least 2", linked)
	}

	// A start: a new FSM loads the snapshot into its own directory.
	g, err := Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.LoadSnapshot(dir); err != nil {
		t.Fatal(err)
	}
	samePastes(t, g, l.f)
	if g.Index() != l.f.Index() || g.NextDue() != l.f.NextDue() {
		t.Fatalf("loaded at index %d, next due %d; want %d, %d", g.Index(), g.NextDue(), l.f.Index(), l.f.NextDue())
	}
	if _, ok := g.Gone("p0001"); !ok {
		t.Fatal("the tombstone of p0001 was not loaded")
	}

	// What a follower installs.
	size, rc, ok, err := ExpandSnapshot(dir)
	if err != nil || !ok {
		t.Fatalf("ExpandSnapshot: %v, %v", ok, err)
	}
	stream, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(stream)) != size {
		t.Fatalf("the stream is %d bytes, ExpandSnapshot said %d", len(stream), size)
	}
	h, _ := Open(filepath.Join(t.TempDir(), "store"), nil)
	if err := h.Restore(io.NopCloser(bytes.NewReader(stream))); err != nil {
		t.Fatal(err)
	}
	samePastes(t, h, l.f)
	// Each flipped byte of the stream's manifest and segments is refused,
	// as is a stream with bytes after its segments, by both a restore and
	// the split a node's snapshot store makes of a stream it receives.
	for _, i := range []int{len(snapshotMagic) + 3, len(snapshotMagic) + 20, len(stream) / 2, len(stream) - 1, len(stream)} {
		bad := append(bytes.Clone(stream), 0)
		if bad[i] ^= 1; i < len(stream) {
			bad = bad[:len(stream)]
		}
		k := New()
		if err := k.Restore(io.NopCloser(bytes.NewReader(bad))); err == nil && i < len(stream) {
			t.Fatalf("byte %d of %d flipped, and the stream restored", i, len(stream))
		}
		if err := SplitStream(bytes.NewReader(bad), t.TempDir(), io.Discard); err == nil {
			t.Fatalf("byte %d of %d flipped, and the stream was kept", i, len(stream))
		}
	}

	// What a follower's snapshot store keeps of the stream: a manifest
	// and the segments as files, which the install links into the store.
	sink := newDirSink(t)
	if err := SplitStream(bytes.NewReader(stream), sink.dir, sink); err != nil {
		t.Fatal(err)
	}
	sink.Close()
	// The follower has pastes of its own, in segments whose ids the
	// snapshot's reuse.
	kl, _ := openLog(t)
	kl.apply(create("own", ""))
	k := kl.f
	if err := k.InstallSnapshot(sink.dir); err != nil {
		t.Fatal(err)
	}
	samePastes(t, k, l.f)
	for _, sg := range k.cur.Load().arena.all {
		a, _ := os.Stat(sg.path)
		if !slices.ContainsFunc(mustReadDir(t, sink.dir), func(b os.FileInfo) bool { return os.SameFile(a, b) }) {
			t.Fatalf("segment %s of the install is not a link of the snapshot's", sg.path)
		}
	}
	var buf bytes.Buffer
	if err := SplitStream(bytes.NewReader([]byte("PNSNAP\x01 another version")), t.TempDir(), &buf); err != nil || buf.String() != "PNSNAP\x01 another version" {
		t.Fatalf("a stream of another version was kept as %q, %v", buf.String(), err)
	}
}

// mustReadDir returns what dir holds.
func mustReadDir(t *testing.T, dir string) []os.FileInfo {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var fis []os.FileInfo
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		fis = append(fis, fi)
	}
	return fis
}

// TestRemovedContentLeavesTheDisk: once compaction ran and a new snapshot
// replaced the old, the content of a deleted paste is in no file.
func TestRemovedContentLeavesTheDisk(t *testing.T) {
	l, store := openLog(t)
	secret := "SECRET-CONTENT-0123456789"
	for i := range 300 {
		c := strings.Repeat("y", 32<<10)
		if i == 7 {
			c = secret
		}
		l.apply(create(fmt.Sprintf("p%04d", i), "", func(p *Paste) { p.Content = []byte(c) }))
		if i%100 == 99 {
			sn, _ := l.f.Snapshot()
			sn.Release()
		}
	}
	old := persist(t, l.f)
	for i := range 100 {
		id := fmt.Sprintf("p%04d", i)
		l.apply(&Command{Type: TypeDelete, ID: id, TokenHash: HashToken("tok-" + id), Now: 2 * sec})
	}
	for l.f.Compact() {
	}
	runtime.GC() // closes the files of the segments dropped
	fresh := persist(t, l.f)
	os.RemoveAll(old) // the snapshot store reaps the older one
	for _, dir := range []string{store, fresh} {
		filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			b, _ := os.ReadFile(path)
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s still holds the deleted paste's content", path)
			}
			return nil
		})
	}
	if _, ok := l.f.Get("p0150", time.Unix(0, 3*sec)); !ok {
		t.Fatal("a paste kept is gone")
	}
}

// TestRestoreVersion3: a snapshot of version 3, made by the version before
// segments, restores into segments and keeps every field.
func TestRestoreVersion3(t *testing.T) {
	raw, err := os.ReadFile("testdata/v3.snap")
	if err != nil {
		t.Fatal(err)
	}
	if v := raw[len(snapshotMagic)]; v != snapshotRecords {
		t.Fatalf("fixture is version %d", v)
	}
	l, _ := openLog(t)
	if err := l.f.Restore(io.NopCloser(bytes.NewReader(raw))); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 10*sec)
	keep, ok := l.f.Get("keep", now)
	if !ok || string(keep.Content) != "content of keep" || keep.Title != "kept" || keep.Lang != "go" ||
		!bytes.Equal(keep.TokenHash, HashToken("tok-keep")) || keep.RequestID != "rk" || !keep.Text {
		t.Fatalf("keep = %+v, %v", keep, ok)
	}
	bin, ok := l.f.Get("bin", now)
	if !ok || !bytes.Equal(bin.Content, []byte{0xff, 0, 1}) || !bin.Encrypted || bin.Text {
		t.Fatalf("bin = %+v, %v", bin, ok)
	}
	if e, ok := l.f.Get("expiring", now); !ok || e.ExpiresAt != 1<<62 {
		t.Fatalf("expiring = %+v, %v", e, ok)
	}
	if _, ok := l.f.Gone("gone"); !ok || !l.f.Removed("old-node") || l.f.Cluster() != "cluster-v3" || !l.f.IsAdminToken("admin") {
		t.Fatal("the tombstone, removed node or cluster identity was lost")
	}
	// Applies go on from the restored state.
	l.index = l.f.Index()
	l.apply(create("after", "ra"))
	if _, ok := l.f.Get("after", now); !ok {
		t.Fatal("a create after the restore is missing")
	}
}

// TestHeapPerPaste: with the content on disk, a paste costs the heap its
// index entry only.
func TestHeapPerPaste(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20 MB")
	}
	const n = 20000
	content := []byte(strings.Repeat("x", 1024))
	l, _ := openLog(t)
	before := heapAlloc()
	for i := range n {
		p := &Paste{ID: fmt.Sprintf("%010d", i), Content: content, CreatedAt: 1 * sec, TokenHash: HashToken("t")}
		l.apply(&Command{Type: TypeCreate, RequestID: fmt.Sprintf("%024x", i), Now: 1 * sec, Paste: p})
	}
	perPaste := (heapAlloc() - before) / n
	runtime.KeepAlive(l)
	t.Logf("%d bytes of heap per paste of 1 KiB", perPaste)
	if perPaste > 128 {
		t.Errorf("%d bytes of heap per paste, want at most 128", perPaste)
	}
}

func heapAlloc() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestOpenContent: a large paste's content comes as a file region that
// holds its bytes, with the paste's other fields, and stays readable after
// compaction removed its segment's file; a paste in memory is refused
// with ErrNoContentFile.
func TestOpenContent(t *testing.T) {
	l, _ := openLog(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 8<<10)
	l.apply(create("big", "rb", func(p *Paste) { p.Content = big; p.Title = "t"; p.Lang = "go" }))
	l.apply(create("small", "rs"))
	now := time.Unix(0, 2*sec)
	p, c, ok, err := l.f.OpenContent("big", now)
	if err != nil || !ok {
		t.Fatalf("OpenContent: %v, %v", ok, err)
	}
	defer c.Close()
	if p.ID != "big" || p.Title != "t" || p.Lang != "go" || p.RequestID != "rb" || p.Content != nil || !p.Text ||
		!bytes.Equal(p.TokenHash, HashToken("tok-big")) {
		t.Fatalf("paste %+v", p)
	}
	// The segment goes: sealed, then compacted once the paste is gone.
	sn, _ := l.f.Snapshot()
	sn.Release()
	l.apply(&Command{Type: TypeDelete, ID: "big", TokenHash: HashToken("tok-big"), Now: 2 * sec})
	for l.f.Compact() {
	}
	got, err := io.ReadAll(c)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("content: %d bytes, %v; want the %d written", len(got), err, len(big))
	}
	if _, _, ok, _ := l.f.OpenContent("big", now); ok {
		t.Fatal("a deleted paste opened")
	}
	mem := newLog(t)
	mem.apply(create("m", "rm"))
	if _, _, _, err := mem.f.OpenContent("m", now); !errors.Is(err, ErrNoContentFile) {
		t.Fatalf("a paste in memory: %v, want ErrNoContentFile", err)
	}
}

// BenchmarkGetRaw reads 1 KiB pastes from segment files as a raw read
// does, reusing the Paste and the buffer: beside BenchmarkGet, the
// allocations a read no longer leaves to the collector.
func BenchmarkGetRaw(b *testing.B) {
	f, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	l := &log{t: b, f: f}
	content := bytes.Repeat([]byte("x"), 1024)
	ids := make([]string, 10000)
	for i := range ids {
		ids[i] = fmt.Sprintf("%010d", i)
		l.apply(create(ids[i], "", func(p *Paste) { p.Content = content }))
	}
	now := time.Unix(0, 2*sec)
	var p Paste
	var buf []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var ok bool
		if buf, _, ok = f.GetRaw(ids[i*7919%len(ids)], now, &p, buf); !ok {
			b.Fatal("missing")
		}
	}
}

// TestPurgeAfterLoad: a segment that holds a removed paste when a
// snapshot is taken is purged after the snapshot is loaded, as before it:
// the manifest does not say when its garbage was removed, and a start
// must not leave it to compaction alone.
func TestPurgeAfterLoad(t *testing.T) {
	l, _ := openLog(t)
	secret := "REMOVED-BEFORE-THE-SNAPSHOT-42"
	l.apply(create("gone", "rg", func(p *Paste) { p.Content = []byte(secret) }))
	for i := range 20 {
		l.apply(create(fmt.Sprintf("kept%02d", i), ""))
	}
	l.apply(&Command{Type: TypeDelete, ID: "gone", TokenHash: HashToken("tok-gone"), Now: 2 * sec})
	dir := persist(t, l.f)

	store := filepath.Join(t.TempDir(), "store")
	g, err := Open(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.LoadSnapshot(dir); err != nil {
		t.Fatal(err)
	}
	if p := g.Purge(2*sec - 1); p.Found {
		t.Fatal("a purge of what was removed before the snapshot's clock found work")
	}
	// Which entry created the paste is not in the manifest: the snapshot's
	// index stands in for it.
	if p := g.Purge(2 * sec); !p.Found || p.Created != l.index {
		t.Fatalf("purge = %+v; want it found, created by entry %d or before", p, l.index)
	}
	for g.Purge(2 * sec).More {
	}
	runtime.GC()
	entries, _ := os.ReadDir(store)
	for _, e := range entries {
		if b, _ := os.ReadFile(filepath.Join(store, e.Name())); bytes.Contains(b, []byte(secret)) {
			t.Fatalf("%s still holds the paste deleted before the snapshot", e.Name())
		}
	}
	if _, ok := g.Get("kept07", time.Unix(0, 3*sec)); !ok {
		t.Fatal("a paste kept is gone")
	}
}

// TestSegmentReadsFromItsMapping: a flushed record of a segment file is
// copied from the mapping, which sees every later flush, without a read
// of the descriptor; a record the file no longer holds (cut short behind
// the node's back) fails its read instead of crashing the process.
func TestSegmentReadsFromItsMapping(t *testing.T) {
	ss, err := openSegments(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ss.create()
	if err != nil {
		t.Fatal(err)
	}
	if s.mapped == nil {
		t.Skip("no mmap here")
	}
	first := s.append(bytes.Repeat([]byte("a"), 5000))
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	second := s.append(bytes.Repeat([]byte("b"), 9000)) // past the first page
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	// With the descriptor closed, only the mapping can answer.
	s.file.(*os.File).Close()
	for _, r := range []struct {
		off  int64
		n    uint32
		char string
	}{{first, 5000, "a"}, {second, 9000, "b"}} {
		got, err := s.read(r.off, r.n)
		if err != nil || string(got) != strings.Repeat(r.char, int(r.n)) {
			t.Fatalf("read at %d: %q…, %v", r.off, got[:min(len(got), 8)], err)
		}
	}
	if err := os.Truncate(s.path, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := s.read(second, 9000); err == nil {
		t.Fatalf("read of a record the file lost: %q…, no error", got[:8])
	}
}

package fsm

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/vmihailenco/msgpack/v5"
)

// testdata/v1.snap is a version-1 (gzip) snapshot written by the code
// before version 2: pastes "keep" and "expiring" (at 1<<62), "gone"
// deleted at index 4, "burnt" consumed at index 6, node "old-node"
// removed; index 7.
func TestRestoreVersion1(t *testing.T) {
	v1, err := os.ReadFile("testdata/v1.snap")
	if err != nil {
		t.Fatal(err)
	}
	if v := v1[len(snapshotMagic)]; v != snapshotGzip {
		t.Fatalf("fixture is version %d", v)
	}
	f := New()
	if err := f.Restore(io.NopCloser(bytes.NewReader(v1))); err != nil {
		t.Fatal(err)
	}
	checkFixtureState(t, f)

	// Its next snapshot is of the current version and holds the same
	// state.
	v2 := snapshotBytes(t, f)
	if v := v2[len(snapshotMagic)]; v != snapshotSegments {
		t.Fatalf("new snapshot is version %d, want %d", v, snapshotSegments)
	}
	g := New()
	if err := g.Restore(io.NopCloser(bytes.NewReader(v2))); err != nil {
		t.Fatal(err)
	}
	checkFixtureState(t, g)
	if again := snapshotBytes(t, g); !bytes.Equal(again, v2) {
		t.Fatalf("a restored version-%d snapshot writes different bytes", snapshotSegments)
	}

	// For a peer of protocol 1 it writes version 1 again, with the same
	// records (the gzip framing may differ: the compressor changed).
	g.SetPeerProtocol(func() int { return 1 })
	if !bytes.Equal(gunzipV1(t, snapshotBytes(t, g)), gunzipV1(t, v1)) {
		t.Error("the restored state writes different version 1 records")
	}
}

// TestSnapshotForOldPeers: while a member of protocol 1 (or 2) may
// receive it, a snapshot is written in version 1 (or 2), and it restores.
func TestSnapshotForOldPeers(t *testing.T) {
	f := filledFSM(10)
	proto := 1
	f.SetPeerProtocol(func() int { return proto })
	for _, c := range []struct {
		proto int
		want  byte
	}{{1, snapshotGzip}, {2, snapshotS2}, {4, snapshotS2}, {5, snapshotSegments}} {
		proto = c.proto
		want := c.want
		raw := snapshotBytes(t, f)
		if v := raw[len(snapshotMagic)]; v != want {
			t.Fatalf("with peers of protocol %d: snapshot version %d, want %d", proto, v, want)
		}
		g := New()
		if err := g.Restore(io.NopCloser(bytes.NewReader(raw))); err != nil {
			t.Fatal(err)
		}
		if n, _ := g.Stats(); n != 10 {
			t.Fatalf("version %d restored %d pastes, want 10", want, n)
		}
	}
}

func checkFixtureState(t *testing.T, f *FSM) {
	t.Helper()
	now := time.Unix(0, 10*sec)
	for _, id := range []string{"keep", "expiring"} {
		p, ok := f.Get(id, now)
		if !ok || string(p.Content) != "content of "+id || !p.Text {
			t.Errorf("Get(%s) = %+v, %v; want the paste, as text", id, p, ok)
		}
	}
	for id, want := range map[string]uint64{"gone": 4, "burnt": 6} {
		if _, ok := f.Get(id, now); ok {
			t.Errorf("Get(%s) found a removed paste", id)
		}
		if index, ok := f.Gone(id); !ok || index != want {
			t.Errorf("Gone(%s) = %d, %v; want %d, true", id, index, ok, want)
		}
	}
	if !f.Removed("old-node") {
		t.Error("Removed(old-node) = false")
	}
	if n, _ := f.Stats(); n != 2 || f.Index() != 7 || f.NextDue() == 0 {
		t.Errorf("count %d, index %d, next due %d; want 2, 7, a time", n, f.Index(), f.NextDue())
	}
}

// TestRestoreRefusesDamage: a snapshot with a flipped byte anywhere in its
// compressed stream, or of an unknown version, is refused and leaves the
// FSM as it was. Every byte of the stream's start, where its framing is,
// is tried, then bytes throughout.
func TestRestoreRefusesDamage(t *testing.T) {
	good := snapshotBytes(t, filledFSM(50))
	step := func(i int) int {
		if i < 64 {
			return 1
		}
		return max(1, len(good)/200)
	}
	for i := len(snapshotMagic); i < len(good); i += step(i) {
		bad := bytes.Clone(good)
		bad[i] ^= 0x40
		f := New()
		if err := f.Restore(io.NopCloser(bytes.NewReader(bad))); !errors.Is(err, ErrSnapshot) {
			t.Fatalf("byte %d of %d flipped: err = %v, want ErrSnapshot", i, len(good), err)
		}
		if n, _ := f.Stats(); n != 0 || f.Index() != 0 {
			t.Fatalf("byte %d flipped: the failed restore left %d pastes at index %d", i, n, f.Index())
		}
	}
}

// TestRestoreRefusesBadRecords: a snapshot of version 3 whose checksums
// hold but whose record a faulty writer made wrong is refused with
// ErrSnapshot, not served from and not a crash.
func TestRestoreRefusesBadRecords(t *testing.T) {
	good := v3Record(&Paste{ID: "p0000000", Content: bytes.Repeat([]byte("x"), 1024), Title: "t", CreatedAt: sec})
	le := binary.LittleEndian
	for name, spoil := range map[string]func(rec []byte) []byte{
		"cut short":        func(rec []byte) []byte { return rec[:len(rec)-1] },
		"under its header": func(rec []byte) []byte { return rec[:v3HeaderBytes-1] },
		"a field too long": func(rec []byte) []byte {
			le.PutUint32(rec[24+4*v3Content:], le.Uint32(rec[24+4*v3Content:])+1)
			return rec
		},
		"a huge field":   func(rec []byte) []byte { le.PutUint32(rec[24+4*v3Title:], 1<<31); return rec },
		"an id too long": func(rec []byte) []byte { le.PutUint32(rec[20:], 1<<20); return rec },
		"no id":          func(rec []byte) []byte { le.PutUint32(rec[20:], 0); return rec },
	} {
		raw := recordsSnapshot(t, spoil(bytes.Clone(good)))
		g := New()
		if err := g.Restore(io.NopCloser(bytes.NewReader(raw))); !errors.Is(err, ErrSnapshot) {
			t.Errorf("a record %s: err = %v, want ErrSnapshot", name, err)
		}
		if n, _ := g.Stats(); n != 0 {
			t.Errorf("a record %s: the failed restore left %d pastes", name, n)
		}
	}
	g := New()
	if err := g.Restore(io.NopCloser(bytes.NewReader(recordsSnapshot(t, good)))); err != nil {
		t.Fatalf("the record unspoiled: %v", err)
	}
	if p, ok := g.Get("p0000000", time.Unix(0, sec)); !ok || len(p.Content) != 1024 || p.Title != "t" {
		t.Fatalf("the record unspoiled restores as %+v, %v", p, ok)
	}
}

// v3Record returns p as a record of snapshot version 3, with header
// values as that version formatted them.
func v3Record(p *Paste) []byte {
	etag := fmt.Sprintf(`"%s-%s"`, p.ID, strconv.FormatInt(p.CreatedAt, 36))
	fields := [v3Fields][]byte{[]byte(etag), []byte("Thu, 01 Jan 1970 00:00:01 GMT"),
		[]byte(strconv.Itoa(len(p.Content))), nil, []byte(p.RequestID), []byte(p.Title),
		[]byte(p.Lang), p.TokenHash, p.Content}
	rec := make([]byte, v3HeaderBytes)
	le := binary.LittleEndian
	le.PutUint64(rec[0:], uint64(p.CreatedAt))
	le.PutUint64(rec[8:], uint64(p.ExpiresAt))
	le.PutUint32(rec[20:], uint32(len(p.ID)))
	for i, f := range fields {
		le.PutUint32(rec[24+4*i:], uint32(len(f)))
		rec = append(rec, f...)
	}
	return rec
}

// recordsSnapshot returns a snapshot of version 3 holding the given paste
// records as they are, and nothing else.
func recordsSnapshot(t *testing.T, records ...[]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString(snapshotMagic)
	buf.WriteByte(snapshotRecords)
	zw := s2.NewWriter(&buf)
	enc := msgpack.NewEncoder(zw)
	if err := enc.Encode(&snapshotHeader{Version: snapshotRecords, Index: 1, Pastes: len(records)}); err != nil {
		t.Fatal(err)
	}
	for _, rec := range records {
		if err := enc.EncodeBytes(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// filledFSM returns an FSM holding n pastes of 1 KiB of text, each with
// its own random content, as the bench's restart row creates them.
func filledFSM(n int) *FSM {
	rng := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, 768)
	f := New()
	tx := newTxn(f.cur.Load())
	for i := range n {
		for j := range raw {
			raw[j] = byte(rng.Uint32())
		}
		tx.index = uint64(i + 1)
		tx.create(&Command{Type: TypeCreate, RequestID: fmt.Sprint("req", i), Now: sec, Paste: &Paste{
			ID:        fmt.Sprintf("p%07d", i),
			Content:   []byte(base64.StdEncoding.EncodeToString(raw)),
			CreatedAt: sec,
			TokenHash: HashToken(fmt.Sprint("tok", i)),
		}})
	}
	f.publish(tx.commit())
	return f
}

// BenchmarkRestore restores a snapshot of 100k pastes, what a node does
// at start before it replays its log.
func BenchmarkRestore(b *testing.B) {
	const n = 100_000
	snap := snapshotBytes(b, filledFSM(n))
	b.ReportAllocs()
	b.SetBytes(int64(len(snap)))
	for b.Loop() {
		if err := New().Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/paste")
}

// BenchmarkSnapshot writes a snapshot of 100k pastes, what a node does
// every SnapshotThreshold entries and, with it, on a graceful shutdown. It
// writes to io.Discard, as to a file: no buffer that grows.
func BenchmarkSnapshot(b *testing.B) {
	const n = 100_000
	f := filledFSM(n)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.WriteSnapshot(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/paste")
}

// TestPasteRecordRoundTrip: every field of a paste survives a record of
// version 2, and a record of another length is refused.
func TestPasteRecordRoundTrip(t *testing.T) {
	full := Paste{ID: "id", Content: []byte("body"), Title: "title", Lang: "go",
		CreatedAt: -5, ExpiresAt: 1 << 62, Burn: true, Encrypted: true,
		TokenHash: HashToken("t"), RequestID: "req"}
	for _, want := range []Paste{full, {ID: "bare"}} {
		var buf bytes.Buffer
		if err := encodePasteRecord(msgpack.NewEncoder(&buf), &want); err != nil {
			t.Fatal(err)
		}
		var got Paste
		if err := decodePasteRecord(msgpack.NewDecoder(&buf), &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip of %+v gave %+v", want, got)
		}
	}
	short, _ := msgpack.Marshal([]any{"id", "title"})
	if err := decodePasteRecord(msgpack.NewDecoder(bytes.NewReader(short)), new(Paste)); err == nil {
		t.Error("a record of 2 fields was decoded")
	}
}

// gunzipV1 returns the records of a version 1 snapshot: what follows the
// magic and the version byte, decompressed.
func gunzipV1(t *testing.T, snap []byte) []byte {
	t.Helper()
	head := len(snapshotMagic) + 1
	if len(snap) < head || string(snap[:head]) != snapshotMagic+string(rune(snapshotGzip)) {
		t.Fatalf("not a version 1 snapshot: % x", snap[:min(head, len(snap))])
	}
	zr, err := gzip.NewReader(bytes.NewReader(snap[head:]))
	if err != nil {
		t.Fatal(err)
	}
	records, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return records
}

// TestRestoreRoundTrip: every paste comes back as it was from a snapshot
// of version 2 and of version 4.
func TestRestoreRoundTrip(t *testing.T) {
	const n = 2000
	orig := filledFSM(n)
	for _, proto := range []int{2, 5} {
		t.Run(fmt.Sprint("protocol ", proto), func(t *testing.T) {
			orig.SetPeerProtocol(func() int { return proto })
			restored := New()
			if err := restored.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, orig)))); err != nil {
				t.Fatal(err)
			}
			samePastes(t, restored, orig)
		})
	}
}

// samePastes fails unless got holds the pastes want holds.
func samePastes(t *testing.T, got, want *FSM) {
	t.Helper()
	now := time.Unix(0, 2*sec)
	if a, b := got.View().Len(), want.View().Len(); a != b {
		t.Fatalf("%d pastes, want %d", a, b)
	}
	if a, b := got.Stats(); true {
		if c, d := want.Stats(); a != c || b != d {
			t.Fatalf("stats %d, %d; want %d, %d", a, b, c, d)
		}
	}
	if err := want.View().Walk(func(w *Paste) bool {
		g, ok := got.Get(w.ID, now)
		if !ok || !equalPaste(g, w) {
			t.Fatalf("%s: %+v, want %+v", w.ID, g, w)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreAllocatesWhatArrives: a stream of a few bytes that declares
// a manifest of gigabytes, or a record of a gigabyte, fails without the
// restore allocating what it declared (the fuzzer found the first: a
// backup file or a leader's stream could take a node's memory).
func TestRestoreAllocatesWhatArrives(t *testing.T) {
	head := append([]byte(snapshotMagic), snapshotSegments)
	head = binary.LittleEndian.AppendUint64(head, 3<<30)
	head = binary.LittleEndian.AppendUint32(head, 0)
	head = append(head, "a few bytes of it"...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := New().Restore(io.NopCloser(bytes.NewReader(head)))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrSnapshot) {
		t.Errorf("restore of a manifest cut short: %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Errorf("restore of a %d-byte stream allocated %d MiB", len(head), n>>20)
	}

	runtime.ReadMemStats(&before)
	buf, err := readSized(func(b []byte) error {
		_, err := io.ReadFull(bytes.NewReader(make([]byte, 100)), b)
		return err
	}, nil, maxRecord)
	runtime.ReadMemStats(&after)
	if err == nil || len(buf) != 0 {
		t.Errorf("readSized of 100 bytes for %d: %d bytes, %v", maxRecord, len(buf), err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Errorf("readSized of 100 bytes for %d allocated %d MiB", maxRecord, n>>20)
	}
}

package fsm

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"
	"time"
)

// TestRestoresRadixTreeSnapshot: testdata/snapshot-v1.bin was written by
// the FSM when its indexes were radix trees (three pastes, one expiring and
// one burn, a deleted one's tombstone, a removed node). The B-trees restore
// it whole, and write the same version 1 records again when a peer still
// needs version 1 (the gzip framing may differ: the compressor changed).
func TestRestoresRadixTreeSnapshot(t *testing.T) {
	old, err := os.ReadFile("testdata/snapshot-v1.bin")
	if err != nil {
		t.Fatal(err)
	}
	f := New()
	if err := f.Restore(io.NopCloser(bytes.NewReader(old))); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 4*sec)
	for _, id := range []string{"plain", "expiring", "burner"} {
		p, ok := f.Get(id, now)
		if !ok || string(p.Content) != "content of "+id || p.ReadInfo().ETag()[0] == "" {
			t.Errorf("paste %s: %+v, %v", id, p, ok)
		}
	}
	if count, _ := f.Stats(); count != 3 {
		t.Errorf("%d pastes, want 3", count)
	}
	if _, ok := f.Gone("gone"); !ok {
		t.Error("the deleted paste has no tombstone")
	}
	if !f.Removed("node9") {
		t.Error("node9 is not removed")
	}
	if due := f.NextDue(); due != 100*sec {
		t.Errorf("NextDue = %d, want the expiry at %d", due, 100*sec)
	}
	f.SetPeerProtocol(func() int { return 1 })
	var again bytes.Buffer
	if _, err := f.WriteSnapshot(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gunzipV1(t, again.Bytes()), gunzipV1(t, old)) {
		t.Error("the restored state writes different records")
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

package fsm

import (
	"bytes"
	"io"
	"os"
	"testing"
	"time"
)

// TestRestoresRadixTreeSnapshot: testdata/snapshot-v1.bin was written by
// the FSM when its indexes were radix trees (three pastes, one expiring and
// one burn, a deleted one's tombstone, a removed node). The B-trees restore
// it whole, and write it again byte for byte.
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
	var again bytes.Buffer
	if _, err := f.WriteSnapshot(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), old) {
		t.Error("the restored state writes a different snapshot")
	}
}

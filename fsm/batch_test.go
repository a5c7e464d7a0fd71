package fsm

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// TestBatchAppliesEachCommandInOrder: a batch entry applies its commands
// in order at its own index, each with its own result, and one bad command
// fails alone.
func TestBatchAppliesEachCommandInOrder(t *testing.T) {
	l := newLog(t)
	res := l.apply(&Command{Type: TypeBatch, Batch: [][]byte{
		mustEncode(t, create("a", "req-a")),
		[]byte("garbage"),
		mustEncode(t, &Command{Type: TypeBatch, Batch: [][]byte{mustEncode(t, create("nested", "req-n"))}}),
		mustEncode(t, create("a", "req-a")), // a retry: the first result again
		mustEncode(t, create("a", "req-other")),
		mustEncode(t, &Command{Type: TypeDelete, ID: "a", TokenHash: HashToken("tok-a"), Now: 2 * sec}),
	}})
	if res.Err != nil || len(res.Batch) != 6 {
		t.Fatalf("batch result = %+v, want 6 results", res)
	}
	wantErr := []error{nil, ErrBadCommand, ErrBadCommand, nil, ErrExists, nil}
	for i, r := range res.Batch {
		if !errors.Is(r.Err, wantErr[i]) || (wantErr[i] == nil) != (r.Err == nil) {
			t.Errorf("result %d: err = %v, want %v", i, r.Err, wantErr[i])
		}
	}
	if res.Batch[0].Paste == nil || res.Batch[3].Paste == nil || res.Batch[0].Paste.ID != "a" {
		t.Fatalf("create results = %+v, %+v; want paste a twice", res.Batch[0], res.Batch[3])
	}
	if _, ok := l.f.Get("a", time.Unix(3, 0)); ok {
		t.Fatal("a still there after the batch deleted it")
	}
	if _, ok := l.f.Get("nested", time.Unix(3, 0)); ok {
		t.Fatal("a batch inside a batch was applied")
	}
	if index, ok := l.f.Gone("a"); !ok || index != l.index || l.f.Index() != l.index {
		t.Fatalf("Gone(a) = %d, %v; Index = %d; want the batch's index %d", index, ok, l.f.Index(), l.index)
	}
	if _, err := Decode(mustEncode(t, &Command{Type: TypeBatch})); !errors.Is(err, ErrBadCommand) {
		t.Fatalf("an empty batch decodes: err = %v", err)
	}
}

// TestEncodeSizesItsBuffer: Encode writes the bytes msgpack.Marshal does,
// into a buffer it sized once (msgpack.Marshal's doubles from 64 bytes),
// whatever the command holds.
func TestEncodeSizesItsBuffer(t *testing.T) {
	big := create("big", "req-big")
	big.Paste.Content = bytes.Repeat([]byte("x"), 64<<10)
	big.Paste.Title, big.Paste.Lang, big.Paste.Burn, big.Paste.ExpiresAt = "a title", "go", true, 3*sec
	batch := &Command{Type: TypeBatch, Batch: [][]byte{mustEncode(t, big), mustEncode(t, create("small", "req-small"))}}
	for _, c := range []*Command{create("small", "req-small"), big, batch,
		{Type: TypeDelete, ID: "small", TokenHash: HashToken("tok"), Admin: true, RequestID: "req-d", Now: 2 * sec}} {
		want, err := msgpack.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got := mustEncode(t, c)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: Encode differs from msgpack.Marshal", c.Type)
		}
		if cap(got) != c.sizeHint() {
			t.Errorf("%s: %d bytes in a buffer of %d, want the %d sized for it", c.Type, len(got), cap(got), c.sizeHint())
		}
	}
}

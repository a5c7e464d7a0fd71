package pastenode_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/cdb"
)

// TestCheckExportTail checks the tails of whole CDB files in tail order
// and refuses those of the same files cut anywhere.
func TestCheckExportTail(t *testing.T) {
	if pastenode.ExportTailSize != cdb.TailSize {
		t.Fatalf("ExportTailSize %d, cdb.TailSize %d", pastenode.ExportTailSize, cdb.TailSize)
	}
	for _, n := range []int{0, 1, 500} {
		var b bytes.Buffer
		w := cdb.NewTailWriter(&b)
		for i := range n {
			if err := w.Put(fmt.Appendf(nil, "key %d", i), bytes.Repeat([]byte{byte(i)}, i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		stream := b.Bytes()
		tail := func(s []byte) []byte { return s[len(s)-pastenode.ExportTailSize:] }
		if err := pastenode.CheckExportTail(tail(stream), int64(len(stream))); err != nil {
			t.Errorf("%d records, whole: %v", n, err)
		}
		for _, cut := range []int{1, 8, 100, pastenode.ExportTailSize, len(stream) / 2} {
			short := stream[:len(stream)-cut]
			if len(short) < pastenode.ExportTailSize {
				continue
			}
			if err := pastenode.CheckExportTail(tail(short), int64(len(short))); err == nil {
				t.Errorf("%d records, %d bytes cut off: no error", n, cut)
			}
		}
	}
}

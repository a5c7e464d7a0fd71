package fsm

import (
	"slices"
	"testing"
)

// TestPasteIndexOrder: the paste index orders, finds and removes ids as
// strings compare, also ids that share a prefix and ids that are prefixes
// of others; a clone is unchanged by what is done to its original.
func TestPasteIndexOrder(t *testing.T) {
	ids := []string{
		"k3J9xQ2mZa", "a", "ab", "abcdefgh", "abcdefghi", "abcdefgh0", "abcdefgg~",
		"abcdefghij", "abcdefgi", "Z", "0", "abcdefgh\x01", "zzzzzzzzzzzzzzzz", "ba", "az999999", "bz000000",
	}
	x := newPasteIndex()
	refs := map[string]pasteItem{}
	for i, id := range ids {
		r := newItem(id, ref{off: uint32(i)}, 0)
		refs[id] = r
		if _, replaced := x.insert(r); replaced {
			t.Fatalf("insert %q: replaced an entry", id)
		}
	}
	sorted := slices.Sorted(slices.Values(ids))
	ascended := func(x pasteIndex) []string {
		var got []string
		x.ascend(func(id string, r pasteItem) bool {
			if r != refs[id] {
				t.Errorf("ascend: %q holds another record", id)
			}
			got = append(got, id)
			return true
		})
		return got
	}
	if got := ascended(x); !slices.Equal(got, sorted) {
		t.Fatalf("ascend: %q, want %q", got, sorted)
	}
	for _, id := range ids {
		if r, ok := x.get(id); !ok || r != refs[id] {
			t.Errorf("get %q: %v, %v", id, r, ok)
		}
	}
	for _, missing := range []string{"", "abc", "abcdefg", "abcdefghijk", "abcdefgh\x00", "b"} {
		if _, ok := x.get(missing); ok {
			t.Errorf("get %q: found", missing)
		}
	}

	// The same id again replaces, and hands back, the entry it had.
	again := newItem("abcdefghi", ref{off: 99}, 0)
	if old, replaced := x.insert(again); !replaced || old != refs["abcdefghi"] {
		t.Fatalf("insert of a taken id: %v, %v", old, replaced)
	}
	x.set(refs["abcdefghi"])

	before := x.clone()
	for _, id := range []string{"abcdefgh", "a", "abcdefghij"} {
		if r, ok := x.delete(id); !ok || r != refs[id] {
			t.Errorf("delete %q: %v, %v", id, r, ok)
		}
		if _, ok := x.get(id); ok {
			t.Errorf("get %q after its delete: found", id)
		}
		sorted = slices.DeleteFunc(sorted, func(s string) bool { return s == id })
	}
	if _, ok := x.delete("abcdefgh"); ok {
		t.Error("a second delete found the id")
	}
	if got := ascended(x); !slices.Equal(got, sorted) {
		t.Errorf("after deletes: %q, want %q", got, sorted)
	}
	if got := ascended(before); len(got) != len(ids) || x.len() != len(ids)-3 {
		t.Errorf("the clone holds %d ids, want %d; the index %d, want %d", len(got), len(ids), x.len(), len(ids)-3)
	}
}

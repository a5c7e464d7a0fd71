package node

import (
	"context"
	"strings"
	"testing"
)

func TestIDLengthConfig(t *testing.T) {
	base := Config{ID: "n1", DataDir: t.TempDir(), RaftAddr: "127.0.0.1:7000"}
	for _, n := range []int{1, 9, MaxIDLen + 1, -1} {
		c := base
		c.IDLength = n
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "id length") {
			t.Errorf("IDLength %d: got %v, want an id length error", n, err)
		}
	}
	for _, n := range []int{0, IDLen, 16, MaxIDLen} {
		c := base
		c.IDLength = n
		if err := c.Validate(); err != nil {
			t.Errorf("IDLength %d: %v", n, err)
		}
	}
	c := base
	c.IDLength = 16
	nd, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if id := nd.drawID(); len(id) != 16 || strings.Trim(id, IDAlphabet) != "" {
		t.Errorf("id %q: want 16 characters of IDAlphabet", id)
	}
}

// A cluster may hold pastes made under another --id-length: whatever the
// length of an id, the node stores and reads it.
func TestIDsOfAnyLengthRead(t *testing.T) {
	n := openNode(t)
	ctx := context.Background()
	var ids []string
	for _, length := range []int{IDLen, 14, MaxIDLen, IDLen} {
		n.hooks.newID = func() string { return newPasteID(length) }
		p, err := n.Create(ctx, CreateRequest{Content: []byte("len"), DeleteToken: "tok"})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.ID) != length {
			t.Errorf("id %q: want %d characters", p.ID, length)
		}
		ids = append(ids, p.ID)
	}
	for _, id := range ids {
		if p, err := n.Read(ctx, id, false); err != nil || string(p.Content) != "len" {
			t.Errorf("Read(%s) = %v, %v; want the paste", id, p, err)
		}
	}
}

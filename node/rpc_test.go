package node

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/pastenode/pastenode/fsm"
)

func TestReadBody(t *testing.T) {
	body := strings.Repeat("b", 3000)
	for _, size := range []int64{-1, 0, 10, 3000, 5000, 1 << 40} {
		got, err := readBody(io.LimitReader(strings.NewReader(body), 4096), size, 4096)
		if err != nil || string(got) != body {
			t.Errorf("size %d: read %d bytes, %v; want all %d", size, len(got), err, len(body))
		}
	}
}

// plainReply is applyReply without its encoder: msgpack encodes it by
// reflection, as every version before the encoder did.
type plainReply applyReply

// TestApplyReplyEncodesAsReflectionDoes checks that applyReply's encoder
// writes the bytes reflection writes, alone and in a batch's answer, so
// that followers of every version read them, and that they read back as
// sent.
func TestApplyReplyEncodesAsReflectionDoes(t *testing.T) {
	paste := &fsm.Paste{ID: "abc", Content: []byte("hello"), Title: "t", Lang: "go", CreatedAt: 1 << 60,
		ExpiresAt: 7, Burn: true, Encrypted: true, TokenHash: []byte{1, 2, 3}, RequestID: "r1"}
	lean := &fsm.Paste{ID: "x", CreatedAt: 5, TokenHash: []byte{9}}
	replies := []applyReply{
		{},
		{Index: 1, Paste: lean},
		{Index: 1 << 40, Paste: paste},
		{Index: 300, Paste: &fsm.Paste{}},
		{Err: "exists", Msg: "id exists"},
		{Index: 9, Paste: lean, Err: "forbidden", Msg: strings.Repeat("m", 300)},
		{Msg: "raft: no leader"},
	}
	plain := make([]plainReply, len(replies))
	for i, r := range replies {
		plain[i] = plainReply(r)
		want, err := msgpack.Marshal(plainReply(r))
		if err != nil {
			t.Fatal(err)
		}
		got, err := msgpack.Marshal(&r)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("reply %d: encoder %x, %v; reflection %x", i, got, err, want)
		}
	}
	want, _ := msgpack.Marshal(plain)
	got, err := msgpack.Marshal(replies)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("replies: encoder %x, %v; reflection %x", got, err, want)
	}
	var back []plainReply
	if err := msgpack.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if again, _ := msgpack.Marshal(back); !bytes.Equal(again, got) {
		t.Fatalf("replies read back by reflection encode as %x; sent %x", again, got)
	}
}

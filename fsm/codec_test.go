package fsm

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// codecCommands are commands with every field present and absent, and
// lengths at each of msgpack's header sizes.
func codecCommands(seed uint64, n int) []*Command {
	rng := rand.New(rand.NewPCG(seed, 2))
	lengths := []int{0, 1, 31, 32, 255, 256, 65535, 65536}
	str := func() string {
		if rng.IntN(3) == 0 {
			return ""
		}
		return strings.Repeat("x", lengths[rng.IntN(len(lengths))])
	}
	bin := func() []byte {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return []byte{}
		}
		b := make([]byte, lengths[rng.IntN(len(lengths))])
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	num := func() int64 {
		return []int64{0, 1, -1, 1 << 40, -1 << 62}[rng.IntN(5)]
	}
	cmds := randomCommands(seed, n)
	for range n {
		c := &Command{Type: Type(rng.IntN(256)), RequestID: str(), Now: num(), ID: str(),
			TokenHash: bin(), Admin: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			c.Paste = &Paste{ID: str(), Content: bin(), Title: str(), Lang: str(), CreatedAt: num(),
				ExpiresAt: num(), Burn: rng.IntN(2) == 0, Encrypted: rng.IntN(2) == 0, TokenHash: bin(), RequestID: str()}
		}
		if rng.IntN(3) == 0 {
			for range []int{0, 1, 15, 16, 17}[rng.IntN(5)] {
				c.Batch = append(c.Batch, bin())
			}
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// TestCodecKnowsEveryField fails when Command or Paste gains a field
// that appendCommand and decodeCommand do not know: they would drop it.
func TestCodecKnowsEveryField(t *testing.T) {
	for _, tc := range []struct {
		v    any
		tags string
	}{
		{Command{}, "t r,omitempty n,omitempty p,omitempty i,omitempty h,omitempty a,omitempty b,omitempty"},
		{Paste{}, "id c ti,omitempty l,omitempty ca ea,omitempty b,omitempty e,omitempty th r,omitempty"},
	} {
		typ := reflect.TypeOf(tc.v)
		var tags []string
		for f := range typ.Fields() {
			if f.IsExported() && f.Tag.Get("msgpack") != "-" {
				tags = append(tags, f.Tag.Get("msgpack"))
			}
		}
		if got := strings.Join(tags, " "); got != tc.tags {
			t.Errorf("%s's msgpack fields are %q; codec.go encodes %q: teach it the new ones", typ.Name(), got, tc.tags)
		}
	}
}

// reflected decodes b with msgpack's reflection, as Decode did before
// codec.go and does for what decodeCommand does not read.
func reflected(b []byte) (*Command, error) {
	c := new(Command)
	return c, msgpack.Unmarshal(b, c)
}

func TestEncodeIsMsgpackMarshal(t *testing.T) {
	for i, c := range codecCommands(1, 300) {
		want, err := msgpack.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Encode(c)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("command %d (%+v): Encode = %x, %v; msgpack.Marshal = %x", i, c, got, err, want)
		}
		fast, ok := decodeCommand(got)
		if !ok {
			t.Fatalf("command %d: decodeCommand refused what Encode made: %x", i, got)
		}
		slow, err := reflected(got)
		if err != nil || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("command %d: decodeCommand = %+v; msgpack.Unmarshal = %+v, %v", i, fast, slow, err)
		}
	}
}

// TestDecodeCommandAgreesOnDamagedEntries changes every byte of some
// entries to a few other values, and cuts them at every length: what
// decodeCommand reads, msgpack.Unmarshal must read the same.
func TestDecodeCommandAgreesOnDamagedEntries(t *testing.T) {
	var entries [][]byte
	for _, c := range codecCommands(2, 40) {
		if b, _ := Encode(c); len(b) < 4096 {
			entries = append(entries, b)
		}
	}
	fast := 0
	for _, b := range entries {
		for i := range b {
			checkAgrees(t, b[:i], &fast)
			for _, v := range []byte{0x00, 0x01, 0x7f, 0x80, 0x9f, 0xa1, 0xc0, 0xc2, 0xc3, 0xc4, 0xcc, 0xd3, 0xd9, 0xdc, 0xff, b[i] ^ 1} {
				damaged := bytes.Clone(b)
				damaged[i] = v
				checkAgrees(t, damaged, &fast)
			}
		}
		checkAgrees(t, append(bytes.Clone(b), 0), &fast)
	}
	if fast == 0 {
		t.Fatal("decodeCommand read none of the damaged entries")
	}
}

func checkAgrees(t *testing.T, b []byte, fast *int) {
	t.Helper()
	got, ok := decodeCommand(b)
	if !ok {
		return
	}
	*fast++
	want, err := reflected(b)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%x: decodeCommand = %+v; msgpack.Unmarshal = %+v, %v", b, got, want, err)
	}
}

func TestBatchCodecIsMsgpack(t *testing.T) {
	for i, c := range codecCommands(4, 200) {
		batch := c.Batch
		want, err := msgpack.Marshal(batch)
		if err != nil {
			t.Fatal(err)
		}
		got := EncodeBatch(batch)
		if !bytes.Equal(got, want) {
			t.Fatalf("batch %d: EncodeBatch = %x; msgpack.Marshal = %x", i, got, want)
		}
		if len(got) > 256 {
			continue // damaging every byte of the long ones adds nothing
		}
		for j := range got {
			for _, v := range []byte{0x00, 0x90, 0x9f, 0xc0, 0xc4, 0xc5, 0xdc, 0xff} {
				damaged := bytes.Clone(got)
				damaged[j] = v
				checkBatchAgrees(t, damaged)
				checkBatchAgrees(t, got[:j])
			}
		}
	}
	for _, b := range [][]byte{nil, {0xc0}, {0x90}, {0x91, 0xc0}, {0x91, 0xc4, 0x00}, {0x92, 0xc4, 0x01, 'a'}} {
		checkBatchAgrees(t, b)
	}
}

func TestAppendPasteIsMsgpackMarshal(t *testing.T) {
	var pastes int
	for i, c := range codecCommands(5, 300) {
		if c.Paste == nil {
			continue
		}
		pastes++
		want, err := msgpack.Marshal(c.Paste)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendPaste([]byte{0xa1}, c.Paste)
		if !bytes.Equal(got[1:], want) || got[0] != 0xa1 {
			t.Fatalf("paste %d: AppendPaste = %x; msgpack.Marshal = %x", i, got[1:], want)
		}
	}
	if pastes < 50 {
		t.Fatalf("only %d of the commands carry a paste", pastes)
	}
}

// checkBatchAgrees checks that DecodeBatch reads b as msgpack.Unmarshal
// does.
func checkBatchAgrees(t *testing.T, b []byte) {
	t.Helper()
	got, err := DecodeBatch(b)
	var want [][]byte
	wantErr := msgpack.Unmarshal(b, &want)
	if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%x: DecodeBatch = %q, %v; msgpack.Unmarshal = %q, %v", b, got, err, want, wantErr)
	}
}

func FuzzDecodeCommand(f *testing.F) {
	for _, c := range codecCommands(3, 20) {
		if b, _ := Encode(c); len(b) < 4096 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var n int
		checkAgrees(t, b, &n)
	})
}

// BenchmarkDecode compares Decode with msgpack's reflection on a create
// and on a batch of 23 of them, what a follower's commit held under load.
func BenchmarkDecode(b *testing.B) {
	create := &Command{Type: TypeCreate, RequestID: "0123456789abcdef0123456789abcdef", Now: 1 << 60,
		Paste: &Paste{ID: "AbCdEfGhIj", Content: bytes.Repeat([]byte("x"), 1024), CreatedAt: 1 << 60,
			TokenHash: bytes.Repeat([]byte{1}, 32), RequestID: "0123456789abcdef0123456789abcdef"}}
	one, _ := Encode(create)
	batch := &Command{Type: TypeBatch}
	for range 23 {
		batch.Batch = append(batch.Batch, one)
	}
	many, _ := Encode(batch)
	for _, in := range []struct {
		name string
		b    []byte
	}{{"create", one}, {"batch", many}} {
		b.Run(in.name+"/codec", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(in.b); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.name+"/reflection", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reflected(in.b); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("create/encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Encode(create)
		}
	})
	b.Run("create/marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msgpack.Marshal(create)
		}
	})
}

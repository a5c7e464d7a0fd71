package cdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// memFile is an in-memory io.WriteSeeker.
type memFile struct {
	b   []byte
	off int64
}

func (m *memFile) Write(p []byte) (int, error) {
	if end := int(m.off) + len(p); end > len(m.b) {
		m.b = append(m.b, make([]byte, end-len(m.b))...)
	}
	n := copy(m.b[m.off:], p)
	m.off += int64(n)
	return n, nil
}

func (m *memFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		m.off = offset
	case io.SeekCurrent:
		m.off += offset
	case io.SeekEnd:
		m.off = int64(len(m.b)) + offset
	}
	return m.off, nil
}

type record struct{ key, value string }

// writeCDB writes records with a Writer and returns the file.
func writeCDB(t testing.TB, records []record) []byte {
	t.Helper()
	var f memFile
	w, err := NewWriter(&f)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		if err := w.Put([]byte(r.key), []byte(r.value)); err != nil {
			t.Fatalf("Put(%q): %v", r.key, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return f.b
}

// checkRecords asserts that r finds every record, in file order too, and
// that it does not find the missing keys.
func checkRecords(t *testing.T, r *Reader, records []record, missing ...string) {
	t.Helper()
	for _, rec := range records {
		got, ok, err := r.Get([]byte(rec.key))
		if err != nil || !ok || string(got) != rec.value {
			t.Fatalf("Get(%q) = %q, %v, %v; want %q, true, nil", rec.key, got, ok, err, rec.value)
		}
	}
	for _, key := range missing {
		if got, ok, err := r.Get([]byte(key)); ok || err != nil {
			t.Fatalf("Get(%q) = %q, %v, %v; want not found", key, got, ok, err)
		}
	}
	var walked []record
	err := r.ForEach(func(k, v []byte) error {
		walked = append(walked, record{string(k), string(v)})
		return nil
	})
	if err != nil {
		t.Fatalf("ForEach: %v", err)
	}
	if len(walked) != len(records) {
		t.Fatalf("ForEach walked %d records, want %d", len(walked), len(records))
	}
	for i := range walked {
		if walked[i] != records[i] {
			t.Fatalf("ForEach record %d = %q, want %q", i, walked[i], records[i])
		}
	}
}

func TestHash(t *testing.T) {
	for _, tt := range []struct {
		key  string
		want uint32
	}{
		{"", 5381},
		{"a", 5381*33 ^ 'a'},
		{"ab", (5381*33^'a')*33 ^ 'b'},
		{"!aZ9%ab", 0},
	} {
		if got := Hash([]byte(tt.key)); got != tt.want {
			t.Errorf("Hash(%q) = %d, want %d", tt.key, got, tt.want)
		}
		if got := hashString(tt.key); got != tt.want {
			t.Errorf("hashString(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	var many []record
	for i := range 1000 {
		value := fmt.Sprint(i)
		if i%3 == 0 {
			value = ""
		}
		many = append(many, record{fmt.Sprintf("key/%d", i), value})
	}
	for _, tt := range []struct {
		name    string
		records []record
		missing []string
	}{
		{"empty", nil, []string{"", "a"}},
		{"empty key", []record{{"", "value of the empty key"}}, []string{"a"}},
		{"empty value", []record{{"k", ""}}, []string{"", "K"}},
		{"binary", []record{{"\x00\xff\n", "\r\n\x00"}, {"\x00", "x"}}, []string{"\x00\xff"}},
		{"large value", []record{{"big", string(bytes.Repeat([]byte("0123456789"), 100_000))}}, nil},
		{"many", many, []string{"key/1000", "key/-1", "key/"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(writeCDB(t, tt.records))
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, r, tt.records, tt.missing...)
		})
	}
}

// TestTailWriter checks that a file written in tail order is, once its
// last TailSize bytes are moved to its front, the file NewWriter writes.
func TestTailWriter(t *testing.T) {
	var many []record
	for i := range 1000 {
		many = append(many, record{fmt.Sprintf("key/%d", i), fmt.Sprint(i)})
	}
	for _, records := range [][]record{nil, {{"k", "v"}}, many} {
		var tail bytes.Buffer
		w := NewTailWriter(&tail)
		for _, rec := range records {
			if err := w.Put([]byte(rec.key), []byte(rec.value)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b := tail.Bytes()
		if len(b) < TailSize {
			t.Fatalf("%d records: %d bytes in tail order, want at least %d", len(records), len(b), TailSize)
		}
		moved := append(slices.Clone(b[len(b)-TailSize:]), b[:len(b)-TailSize]...)
		if want := writeCDB(t, records); !bytes.Equal(moved, want) {
			t.Errorf("%d records: the tail-order file with its tail moved to the front differs from NewWriter's", len(records))
		}
	}
}

func TestManyKeys(t *testing.T) {
	const n = 100_000
	records := make([]record, n)
	for i := range records {
		records[i] = record{fmt.Sprintf("paste/%08x", uint32(i)*2654435761), fmt.Sprint(i)}
	}
	r, err := NewReader(writeCDB(t, records))
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, r, records, "paste/", "paste/x", "nope")
}

func TestDuplicateKeyFindsFirst(t *testing.T) {
	r, err := NewReader(writeCDB(t, []record{{"k", "first"}, {"k", "second"}}))
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := r.Get([]byte("k"))
	if err != nil || !ok || string(got) != "first" {
		t.Fatalf("Get(k) = %q, %v, %v; want first", got, ok, err)
	}
}

func TestConcurrentGet(t *testing.T) {
	records := make([]record, 1000)
	for i := range records {
		records[i] = record{fmt.Sprint(i), fmt.Sprint(i * 7)}
	}
	r, err := NewReader(writeCDB(t, records))
	if err != nil {
		t.Fatal(err)
	}
	for g := range 4 {
		t.Run(fmt.Sprint(g), func(t *testing.T) {
			t.Parallel()
			for _, rec := range records {
				if got, ok, err := r.Get([]byte(rec.key)); !ok || err != nil || string(got) != rec.value {
					t.Errorf("Get(%q) = %q, %v, %v; want %q", rec.key, got, ok, err, rec.value)
				}
			}
		})
	}
}

func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.cdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	records := []record{{"a", "1"}, {"b", ""}, {"", "empty"}}
	w, err := NewWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range records {
		if err := w.Put([]byte(rec.key), []byte(rec.value)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, r, records, "c")
	// Info is the file mapped, which the mirror compares with the file at
	// its path to tell one written in place; a Reader over bytes has none.
	if fi, err := os.Stat(path); err != nil || r.Info() == nil || !os.SameFile(r.Info(), fi) || r.Info().Size() != fi.Size() {
		t.Errorf("Info: %v, want the file at %s (%v)", r.Info(), path, err)
	}
	if b, err := os.ReadFile(path); err != nil {
		t.Error(err)
	} else if inMemory, err := NewReader(b); err != nil {
		t.Error(err)
	} else if inMemory.Info() != nil {
		t.Errorf("NewReader: Info %v, want none", inMemory.Info())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: got %v, want ErrClosed", err)
	}
	if err := r.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: got %v, want ErrClosed", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.cdb")
	if err := os.WriteFile(short, make([]byte, headerSize-1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(short); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open(short file): got %v, want ErrCorrupt", err)
	}
	if _, err := Open(filepath.Join(dir, "missing.cdb")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing file): got %v, want os.ErrNotExist", err)
	}
}

func TestWriterAtOffset(t *testing.T) {
	f := memFile{b: []byte("prefix")}
	f.off = int64(len(f.b))
	w, err := NewWriter(&f)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := f.off, int64(len(f.b)); got != want {
		t.Errorf("position after Close = %d, want end of file %d", got, want)
	}
	r, err := NewReader(f.b[len("prefix"):])
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, r, []record{{"k", "v"}})
}

func TestWriterErrors(t *testing.T) {
	var f memFile
	w, err := NewWriter(&f)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put([]byte("!aZ9%ab"), nil); !errors.Is(err, ErrZeroHash) {
		t.Errorf("Put(zero-hash key): got %v, want ErrZeroHash", err)
	}
	// 2048 header + two 9-byte records + 32 bytes of slots fit in 2100;
	// a third record does not.
	w.limit = 2100
	for _, key := range []string{"a", "b"} {
		if err := w.Put([]byte(key), []byte("x")); err != nil {
			t.Fatalf("Put(%q): %v", key, err)
		}
	}
	if err := w.Put([]byte("c"), []byte("x")); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Put past the limit: got %v, want ErrTooLarge", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(f.b) > 2100 {
		t.Errorf("file is %d bytes, over the 2100-byte limit", len(f.b))
	}
	if err := w.Put([]byte("d"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Put after Close: got %v, want ErrClosed", err)
	}
	r, err := NewReader(f.b)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, r, []record{{"a", "x"}, {"b", "x"}}, "c", "!aZ9%ab")
}

func TestCorrupt(t *testing.T) {
	valid := writeCDB(t, []record{{"key", "value"}, {"other", "x"}})
	h := Hash([]byte("key"))
	tableAt := int(h&0xff) * 8
	slotsAt := int(u32(valid[tableAt:])) // the first slot of key's table

	edit := func(f func(b []byte) []byte) []byte {
		return f(bytes.Clone(valid))
	}
	put := func(b []byte, at int, v uint32) []byte {
		binary.LittleEndian.PutUint32(b[at:], v)
		return b
	}
	for _, tt := range []struct {
		name    string
		file    []byte
		openErr bool // NewReader fails
		getErr  bool // Get("key") fails
		walkErr bool // ForEach fails
	}{
		{name: "empty file", file: nil, openErr: true},
		{name: "truncated header", file: valid[:headerSize-1], openErr: true},
		{name: "truncated tables", file: valid[:len(valid)-1], openErr: true},
		{name: "table past end", file: edit(func(b []byte) []byte { return put(b, tableAt, uint32(len(b))) }), openErr: true},
		{name: "table inside header", file: edit(func(b []byte) []byte { return put(b, tableAt, 8) }), openErr: true},
		{name: "huge slot count", file: edit(func(b []byte) []byte { return put(b, tableAt+4, 1<<31) }), openErr: true},
		{name: "record offset past end", file: edit(func(b []byte) []byte {
			for i := slotsAt; i < slotsAt+16; i += 8 {
				if u32(b[i:]) == h {
					put(b, i+4, uint32(len(b)-4))
				}
			}
			return b
		}), getErr: true},
		{name: "record offset inside header", file: edit(func(b []byte) []byte {
			for i := slotsAt; i < slotsAt+16; i += 8 {
				if u32(b[i:]) == h {
					put(b, i+4, 4)
				}
			}
			return b
		}), getErr: true},
		{name: "key length past end", file: edit(func(b []byte) []byte { return put(b, headerSize, 1<<32-1) }), getErr: true, walkErr: true},
		{name: "value length past end", file: edit(func(b []byte) []byte { return put(b, headerSize+4, 1<<32-8) }), getErr: true, walkErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(tt.file)
			if tt.openErr {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("NewReader: got %v, want ErrCorrupt", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewReader: %v", err)
			}
			if _, _, err := r.Get([]byte("key")); tt.getErr != errors.Is(err, ErrCorrupt) {
				t.Errorf("Get: got %v, want ErrCorrupt: %v", err, tt.getErr)
			}
			err = r.ForEach(func(k, v []byte) error { return nil })
			if tt.walkErr != errors.Is(err, ErrCorrupt) {
				t.Errorf("ForEach: got %v, want ErrCorrupt: %v", err, tt.walkErr)
			}
		})
	}
}

func TestFullTableTerminates(t *testing.T) {
	// One table whose every slot is taken by a record of another key with
	// the same hash: the probe must give up after one turn.
	b := writeCDB(t, []record{{"key", "value"}})
	h := Hash([]byte("key"))
	off := u32(b[int(h&0xff)*8:])
	for i := range 2 {
		binary.LittleEndian.PutUint32(b[int(off)+8*i:], h)
		binary.LittleEndian.PutUint32(b[int(off)+8*i+4:], headerSize)
	}
	copy(b[headerSize+8:], "KEY") // the slots match by hash, the key differs
	r, err := NewReader(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := r.Get([]byte("key")); ok || err != nil {
		t.Fatalf("Get(key) = %q, %v, %v; want not found", got, ok, err)
	}
}

func BenchmarkGet(b *testing.B) {
	records := make([]record, 100_000)
	keys := make([][]byte, len(records))
	for i := range records {
		records[i] = record{fmt.Sprintf("paste/%08x", i), "some value of moderate size"}
		keys[i] = []byte(records[i].key)
	}
	r, err := NewReader(writeCDB(b, records))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, ok, err := r.Get(keys[i%len(keys)]); !ok || err != nil {
			b.Fatal("key not found", err)
		}
	}
}

// discard is an io.WriteSeeker that keeps nothing.
type discard struct{ off, size int64 }

func (d *discard) Write(p []byte) (int, error) {
	d.off += int64(len(p))
	d.size = max(d.size, d.off)
	return len(p), nil
}

func (d *discard) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		d.off = offset
	case io.SeekCurrent:
		d.off += offset
	case io.SeekEnd:
		d.off = d.size + offset
	}
	return d.off, nil
}

func BenchmarkPut(b *testing.B) {
	key := []byte("paste/00000000")
	value := bytes.Repeat([]byte("v"), 100)
	w, err := NewWriter(&discard{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(8 + len(key) + len(value)))
	for i := 0; b.Loop(); i++ {
		binary.BigEndian.PutUint32(key[6:], uint32(i))
		if err := w.Put(key, value); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
